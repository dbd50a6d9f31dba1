import { afterEach, describe, expect, it } from 'vitest';
import { Extractor } from '../../src/extraction/extractor.js';
import { openExtractionFixture, turn, type ExtractionFixture } from '../support/extraction-support.js';

// Finished extraction work is deleted after extraction.retainDays; the cursor stays, so a replay of
// the same conversation still adds nothing.

let fixture: ExtractionFixture;

afterEach(async () => {
  await fixture?.close();
});

const DAY = 86_400_000;

describe('pruning finished extraction work', () => {
  it('deletes done jobs and per-turn records older than retainDays, keeps the cursor and unfinished jobs, and a replay adds nothing', async () => {
    fixture = await openExtractionFixture({ extraction: { retainDays: 7 } });
    const { store, engram, clock } = fixture;
    const extractor = new Extractor({ engram, autoStart: false, now: () => new Date(clock.now) });
    const conversation = {
      sessionId: 'session-1',
      messages: turn(1, 'Remember that the staging database listens on port 5433.'),
    };
    await extractor.afterTurn(conversation);
    await extractor.worker.drain();
    expect(await store.jobs.counts('extraction')).toMatchObject({ done: 1 });
    const remembered = await engram.list();
    expect(remembered.map((memory) => memory.content)).toEqual([expect.stringContaining('5433')]);

    // A later turn stays queued (not run): unfinished work is never pruned.
    await extractor.afterTurn({ sessionId: 'session-1', messages: [...conversation.messages, ...turn(2, 'Thanks.')] });

    clock.now += 3 * DAY;
    expect(await extractor.worker.prune()).toEqual({ jobs: 0, checkpoints: 0 });

    clock.now += 5 * DAY;
    const pruned = await extractor.worker.prune();
    expect(pruned.jobs).toBe(1);
    expect(pruned.checkpoints).toBeGreaterThanOrEqual(1);
    expect(await store.jobs.counts('extraction')).toMatchObject({ pending: 1, done: 0 });
    expect(await store.checkpoints.get('extraction-cursor:session-1')).toBeDefined();

    // The same conversation again, from a new extractor (another process): nothing new, no second memory.
    const replay = new Extractor({ engram, autoStart: false, now: () => new Date(clock.now) });
    expect(await replay.afterTurn(conversation)).toMatchObject({ status: 'nothing-new' });
    await replay.worker.drain();
    expect((await engram.list()).map((memory) => memory.id)).toEqual(remembered.map((memory) => memory.id));
  });
});
