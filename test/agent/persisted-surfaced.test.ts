import { describe, expect, it } from 'vitest';
import { Engram, MemoryTurn } from '../../src/index.js';
import { MAX_SURFACED_KEPT, persistedSurfaced } from '../../src/agent/persisted-surfaced.js';
import { expectEngramError } from '../support/expect-engram-error.js';
import { useTemporaryStore } from '../support/temporary-store.js';

/** The surfaced set kept in the store, for hosts that run one process per prompt (issue 27). */

const PROJECT = 'project:github.com/acme/app';
const QUESTION = 'Where do we deploy the API service, Frankfurt?';
const opened = useTemporaryStore(Date.parse('2026-03-01T09:00:00Z'));

function openEngram(): Engram {
  return new Engram({ store: opened.store, defaultScope: PROJECT, onWarning: () => {} });
}

describe('persistedSurfaced', () => {
  it('carries a MemoryTurn’s surfaced set from one process to the next, per conversation', async () => {
    const engram = openEngram();
    await engram.remember({ content: 'The deploy target of the API is the Frankfurt region (eu-central-1).' });
    // Process one: nothing saved yet, the turn surfaces the memory, the set is saved.
    const saved = persistedSurfaced(engram, 'session-1');
    const first = new MemoryTurn({ engram, surfaced: await saved.load() });
    expect((await first.beforeRequest(QUESTION)).memories).toHaveLength(1);
    await saved.save(first.surfacedIds());
    await first.flush();
    // Process two, same conversation: the memory is in its context already.
    const second = new MemoryTurn({ engram, surfaced: await persistedSurfaced(engram, 'session-1').load() });
    expect((await second.beforeRequest(QUESTION)).status).toBe('nothing-recalled');
    // Another conversation, or another host, starts empty.
    const other = new MemoryTurn({ engram, surfaced: await persistedSurfaced(engram, 'session-2').load() });
    expect((await other.beforeRequest(QUESTION)).memories).toHaveLength(1);
    expect(await persistedSurfaced(engram, 'session-1', { namespace: 'codex' }).load()).toEqual([]);
    await Promise.all([second.flush(), other.flush()]);
  });

  it('keeps the Claude Code hooks’ checkpoint name, the most recent ids only, and reads damage as empty', async () => {
    const engram = openEngram();
    const set = persistedSurfaced(engram, 'a session: with spaces/and slashes');
    expect(set.name).toBe('claude-code-surfaced:a session: with spaces/and slashes');
    const ids = Array.from({ length: MAX_SURFACED_KEPT + 5 }, (_, index) => `mem_${index}`);
    await set.save(ids);
    expect(await set.load()).toEqual(ids.slice(-MAX_SURFACED_KEPT));
    for (const damaged of ['not json', '{"a":1}', '[1, "mem_ok", null]']) {
      await opened.store.checkpoints.set(set.name, damaged);
      expect(await set.load()).toEqual(damaged.includes('mem_ok') ? ['mem_ok'] : []);
    }
  });

  it('refuses a bad conversation id, namespace or id list, and writes nothing', async () => {
    const engram = openEngram();
    for (const id of ['', 'x'.repeat(201), 'line\nbreak', 42 as never])
      await expectEngramError(() => persistedSurfaced(engram, id), 'INVALID_INPUT');
    for (const namespace of ['', 'Claude Code', 'x'.repeat(41)])
      await expectEngramError(() => persistedSurfaced(engram, 'session-1', { namespace }), 'INVALID_INPUT');
    const set = persistedSurfaced(engram, 'session-1');
    await expectEngramError(set.save([42] as never), 'INVALID_INPUT');
    expect(await opened.store.checkpoints.get(set.name)).toBeUndefined();
  });
});
