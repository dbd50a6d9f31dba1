import { describe, expect, it } from 'vitest';
import { Engram, SESSION_START_MAX_MEMORIES, isEngramError, sessionStartMemories } from '../../src/index.js';
import { engramOver, useTemporaryStore } from '../support/temporary-store.js';

/** Session-start context beside MemoryTurn (issue 27): the memories a conversation starts with, without a prompt. */

const PROJECT = 'project:github.com/acme/app';
const OTHER = 'project:github.com/acme/other';
const DAY = 86_400_000;
const opened = useTemporaryStore(Date.parse('2026-03-01T09:00:00Z'));

function openEngram(): Engram {
  return engramOver(opened, { defaultScope: PROJECT, onWarning: () => {} });
}

describe('sessionStartMemories', () => {
  it('gives ways of working first, then by recency × importance, within the scopes, active only', async () => {
    const engram = openEngram();
    const old = await engram.remember({
      content: 'The API is written in TypeScript.',
      type: 'project',
      importance: 0.5,
    });
    opened.clock.now += 30 * DAY;
    const recent = await engram.remember({
      content: 'The staging database was moved to Postgres 17.',
      type: 'project',
    });
    const style = await engram.remember({ content: 'Prefer small commits with honest messages.', type: 'feedback' });
    const person = await engram.remember({
      content: 'The user is the team lead for payments.',
      type: 'user',
      scope: 'global',
    });
    const archived = await engram.remember({ content: 'The old CI ran on Jenkins.', type: 'project' });
    await engram.forget(archived.id);
    const replaced = await engram.remember({ content: 'Deploys go out on Fridays.', type: 'project' });
    await engram.invalidate(replaced.id);
    await engram.remember({ content: 'The other project uses Go.', type: 'project', scope: OTHER });

    const now = new Date(opened.clock.now).toISOString();
    const memories = await sessionStartMemories(engram, { now });
    expect(memories.map((memory) => memory.id)).toEqual([style.id, person.id, recent.id, old.id]);
    // Already in the context: the surfaced set, and what the index shows whole.
    const left = await sessionStartMemories(engram, {
      now,
      leaveOut: [style.id],
      staticPart: `# Memory index\n- person: ${person.content}`,
    });
    expect(left.map((memory) => memory.id)).toEqual([recent.id, old.id]);
    expect((await sessionStartMemories(engram, { scopes: [OTHER] })).map((memory) => memory.content)).toEqual([
      'The other project uses Go.',
    ]);
  });

  it(`gives at most ${SESSION_START_MAX_MEMORIES}`, async () => {
    const engram = openEngram();
    for (let index = 0; index < SESSION_START_MAX_MEMORIES + 4; index += 1)
      await engram.remember({ content: `Service ${index} listens on port ${8000 + index}.`, type: 'reference' });
    expect(await sessionStartMemories(engram)).toHaveLength(SESSION_START_MAX_MEMORIES);
  });

  it('refuses bad options with a code', async () => {
    const engram = openEngram();
    for (const [options, code] of [
      [null, 'INVALID_INPUT'],
      [{ scopes: [] }, 'INVALID_SCOPE'],
      [{ scopes: 'global' }, 'INVALID_SCOPE'],
      [{ scopes: ['nowhere'] }, 'INVALID_SCOPE'],
      [{ now: 'yesterday' }, 'INVALID_INPUT'],
      [{ now: 42 }, 'INVALID_INPUT'],
      [{ staticPart: 7 }, 'INVALID_INPUT'],
    ] as const) {
      const error = await sessionStartMemories(engram, options as never).catch((caught: unknown) => caught);
      expect(isEngramError(error) && error.code, JSON.stringify(options)).toBe(code);
    }
  });
});
