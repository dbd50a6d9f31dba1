import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engram } from '../src/engram.js';
import { EngramError } from '../src/kernel/errors.js';
import { openTemporaryStore, type TemporaryStore } from './support/temporary-store.js';

const PROJECT = 'project:github.com/acme/app';
const OTHER = 'project:github.com/acme/other';

let temporary: TemporaryStore;
let engram: Engram;

beforeEach(async () => {
  temporary = await openTemporaryStore(Date.parse('2026-03-01T09:00:00.000Z'));
  engram = new Engram({
    store: temporary.store,
    defaultScope: PROJECT,
    actor: 'default-actor',
    now: () => new Date(temporary.clock.now),
    onWarning: () => undefined,
  });
});

afterEach(async () => {
  await temporary.close();
});

describe('Engram changes take an options object', () => {
  it("records the actor given in the options, else the engram's own, and honours ifUpdatedAt", async () => {
    const memory = await engram.remember({ content: 'Deploys go out on Tuesdays.' }, { actor: 'alice' });
    temporary.clock.now += 1_000;
    const updated = await engram.update(
      memory.id,
      { importance: 0.9 },
      { actor: 'bob', ifUpdatedAt: memory.updatedAt },
    );
    await expect(
      engram.update(memory.id, { importance: 0.1 }, { ifUpdatedAt: memory.updatedAt }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    await engram.forget(memory.id, { actor: 'carol' });
    await engram.restore(memory.id);
    const replacement = await engram.remember({ content: 'Deploys go out on Thursdays now.' });
    await engram.invalidate(memory.id, { supersededBy: replacement.id, actor: 'dave' });
    const history = await engram.history(memory.id);
    expect(history.map((entry) => [entry.action, entry.actor])).toEqual([
      ['create', 'alice'],
      ['update', 'bob'],
      ['archive', 'carol'],
      ['restore', 'default-actor'],
      ['invalidate', 'dave'],
    ]);
    expect(updated.importance).toBe(0.9);
    const undone = await engram.undo(history.at(-1)!.id, { actor: 'erin' });
    expect(undone.actor).toBe('erin');
    expect((await engram.get(memory.id)).invalidAt).toBeNull();
  });

  it('acts only within the scopes the options name: a memory elsewhere is NOT_FOUND and unchanged', async () => {
    const memory = await engram.remember({ content: 'The user prefers tabs.' });
    for (const call of [
      () => engram.update(memory.id, { importance: 0.2 }, { scopes: [OTHER] }),
      () => engram.forget(memory.id, { scopes: [OTHER] }),
      () => engram.restore(memory.id, { scopes: [OTHER] }),
      () => engram.invalidate(memory.id, { scopes: [OTHER] }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'NOT_FOUND' });
    }
    const [created] = await engram.history(memory.id);
    await expect(engram.undo(created!.id, { scopes: [OTHER] })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await engram.get(memory.id)).toEqual(memory);
  });

  it('refuses options that are not an object (a call in the old positional form) with INVALID_INPUT and changes nothing', async () => {
    const memory = await engram.remember({ content: 'Integration tests use the real database.' });
    const [created] = await engram.history(memory.id);
    const positional = 'someone' as never;
    for (const call of [
      () => engram.update(memory.id, { importance: 0.2 }, positional),
      () => engram.forget(memory.id, positional),
      () => engram.restore(memory.id, positional),
      () => engram.invalidate(memory.id, positional),
      () => engram.undo(created!.id, positional),
      () => engram.update(memory.id, { importance: 0.2 }, null as never),
    ]) {
      const error = await call().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(EngramError);
      expect((error as EngramError).code).toBe('INVALID_INPUT');
    }
    expect(await engram.get(memory.id)).toEqual(memory);
    expect(await engram.history(memory.id)).toHaveLength(1);
  });
});
