import { describe, expect, it } from 'vitest';
import type { Memory } from '../src/index.js';
import { Extractor } from '../src/extraction/extractor.js';
import { applyChangeSet } from '../src/consolidation/change-sets.js';
import { ScriptedLanguageModel } from '../src/testing/scripted-language-model.js';
import { answer, openExtractionFixture, PROJECT, turn, type ExtractionFixture } from './support/extraction-support.js';
import { expectEngramError } from './support/expect-engram-error.js';
import { useClosedAfterTest } from './support/per-test.js';

/**
 * The facade's role objects (issue 27): `engram.jobs`, `engram.changeSets` and `engram.dream`, so a
 * surface lists, retries, runs and undoes through one library call. Real SQLite, a real Extractor.
 */

const closeAfterTest = useClosedAfterTest();

describe('engram.jobs', () => {
  it('lists the queue without payloads, runs the due jobs, retries a failed one', async () => {
    const fixture = closeAfterTest(await openExtractionFixture({ jobs: { maxAttempts: 1 } }));
    const { engram } = fixture;
    expect(engram.jobs.available).toBe(true);
    expect(await engram.jobs.list()).toEqual({
      queue: 'extraction',
      states: ['pending', 'running', 'failed'],
      counts: { pending: 0, running: 0, done: 0, failed: 0 },
      jobs: [],
    });
    const model = new ScriptedLanguageModel({
      script: [{ error: new Error('model down') }, answer({ content: 'Deploys happen on Fridays after the freeze.' })],
    });
    const extractor = new Extractor({ engram, model, autoStart: false });
    await extractor.afterTurn({ sessionId: 'chat-7', messages: turn(1, 'We deploy on Fridays after the freeze.') });

    const listed = await engram.jobs.list();
    expect(listed.counts.pending).toBe(1);
    expect(listed.jobs).toHaveLength(1);
    const [job] = listed.jobs;
    expect(job).toMatchObject({ state: 'pending', queue: 'extraction', sessionId: 'chat-7' });
    expect(job).not.toHaveProperty('payload');
    expect(JSON.stringify(listed)).not.toContain('We deploy on Fridays');

    const failedRun = await engram.jobs.run({ extractor });
    expect(failedRun.outcomes).toEqual([
      expect.objectContaining({ state: 'failed', error: expect.stringContaining('model down') }),
    ]);
    expect(failedRun.outcomes[0]!.job).not.toHaveProperty('payload');
    expect(failedRun.left).toMatchObject({ pending: 0, failed: 1 });
    expect((await engram.jobs.list({ states: ['failed'] })).jobs.map((entry) => entry.id)).toEqual([job!.id]);

    const retried = await engram.jobs.retry(job!.id);
    expect(retried).toMatchObject({ id: job!.id, state: 'pending', attempts: 0, sessionId: 'chat-7' });
    await expectEngramError(engram.jobs.retry(job!.id), 'CONFLICT');

    // Retried means due now: nothing was waiting for `force` to hasten.
    const run = await engram.jobs.run({ extractor, force: true });
    expect(run.hastened).toBe(0);
    expect(run.outcomes.map((outcome) => outcome.state)).toEqual(['done']);
    expect(run.left).toMatchObject({ pending: 0, failed: 0, done: 1 });
    expect((await engram.list()).map((memory) => memory.content)).toEqual([
      'Deploys happen on Fridays after the freeze.',
    ]);
    expect(await engram.jobs.counts()).toMatchObject({ done: 1 });
    expect((await engram.jobs.recent())?.length).toBeGreaterThan(0);
  });

  it('run with failed puts the failed jobs back first and runs them', async () => {
    const fixture = closeAfterTest(await openExtractionFixture({ jobs: { maxAttempts: 1 } }));
    const { engram } = fixture;
    const model = new ScriptedLanguageModel({
      script: [{ error: new Error('model down') }, answer({ content: 'The on-call rota lives in PagerDuty.' })],
    });
    const extractor = new Extractor({ engram, model, autoStart: false });
    await extractor.afterTurn({ sessionId: 'chat-8', messages: turn(1, 'The on-call rota lives in PagerDuty.') });
    expect((await engram.jobs.run({ extractor })).left.failed).toBe(1);
    const run = await engram.jobs.run({ extractor, failed: true });
    expect(run).toMatchObject({ revived: 1, handledElsewhere: 0, left: { failed: 0, done: 1 } });
    expect(run.outcomes.map((outcome) => [outcome.state, outcome.job.sessionId])).toEqual([['done', 'chat-8']]);
  });

  it('refuses bad input with a code and changes nothing', async () => {
    const fixture = closeAfterTest(await openExtractionFixture());
    const { engram } = fixture;
    for (const options of [{ states: [] }, { states: ['bogus'] }, { limit: 0 }, { limit: 1.5 }, { limit: 10_001 }])
      await expectEngramError(engram.jobs.list(options as never), 'INVALID_INPUT');
    await expectEngramError(engram.jobs.retry('no such job'), 'INVALID_INPUT');
    await expectEngramError(engram.jobs.retry('job_missing'), 'NOT_FOUND');
    await expectEngramError(engram.jobs.run({} as never), 'INVALID_INPUT');
    const extractor = new Extractor({ engram, autoStart: false });
    await expectEngramError(engram.jobs.run({ extractor, force: 'yes' } as never), 'INVALID_INPUT');
    expect(await engram.jobs.counts()).toEqual({ pending: 0, running: 0, done: 0, failed: 0 });
  });
});

/** Two memories rewritten as one change set, as a dream's run writes them. */
async function rewriteAsChangeSet(fixture: ExtractionFixture, memories: readonly Memory[]): Promise<string> {
  const { clock } = fixture;
  clock.now += 60_000;
  const stampedAt = new Date(clock.now).toISOString();
  const states = memories.map((memory) => ({ ...memory, content: `${memory.content} (tidied)`, updatedAt: stampedAt }));
  return applyChangeSet(fixture.store, {
    states,
    scopes: [PROJECT],
    actor: 'dream',
    stampedAt,
    now: clock.now,
    summary: `improved ${states.length} memories`,
  });
}

describe('engram.changeSets and engram.dream', () => {
  it('lists, reads and undoes a change set whole, within the engram’s scopes', async () => {
    const fixture = closeAfterTest(await openExtractionFixture());
    const { engram } = fixture;
    const first = await engram.remember({ content: 'The staging cluster runs in eu-west-1.' });
    const second = await engram.remember({ content: 'Release notes go in CHANGELOG.md.' });
    expect(await engram.changeSets.list()).toEqual([]);
    const id = await rewriteAsChangeSet(fixture, [first, second]);

    const listed = await engram.changeSets.list();
    expect(listed).toEqual([expect.objectContaining({ id, memoryCount: 2, summary: 'improved 2 memories' })]);
    expect(await engram.changeSets.list({ scopes: ['global'] })).toEqual([]);
    const detail = await engram.changeSets.get(id);
    expect(detail.changeSet.id).toBe(id);
    expect(detail.entries.map((entry) => entry.after?.content).sort()).toEqual([
      'Release notes go in CHANGELOG.md. (tidied)',
      'The staging cluster runs in eu-west-1. (tidied)',
    ]);
    await expectEngramError(engram.changeSets.get(id, { scopes: ['global'] }), 'NOT_FOUND');
    await expectEngramError(engram.changeSets.get('cs_nope'), 'NOT_FOUND');
    await expectEngramError(engram.changeSets.undo(id, { scopes: ['global'] }), 'NOT_FOUND');

    const undone = await engram.changeSets.undo(id);
    expect(undone.changeSetId).toBe(id);
    expect(undone.undone).toHaveLength(2);
    expect((await engram.get(first.id)).content).toBe('The staging cluster runs in eu-west-1.');
    await expectEngramError(engram.changeSets.undo(id), 'UNDO_CONFLICT');
    expect((await engram.changeSets.list())[0]!.undoneAt).toBeDefined();
    for (const limit of [0, 501, 2.5]) await expectEngramError(engram.changeSets.list({ limit }), 'INVALID_INPUT');
  });

  it('an undo refuses a memory edited since the change set, and changes nothing', async () => {
    const fixture = closeAfterTest(await openExtractionFixture());
    const { engram, clock } = fixture;
    const memory = await engram.remember({ content: 'The API gateway times out after 30 seconds.' });
    const id = await rewriteAsChangeSet(fixture, [memory]);
    clock.now += 60_000;
    await engram.update(memory.id, { content: 'The API gateway times out after 45 seconds.' });
    await expectEngramError(engram.changeSets.undo(id), 'UNDO_CONFLICT');
    expect((await engram.get(memory.id)).content).toBe('The API gateway times out after 45 seconds.');
  });

  it('counts each ended session once toward the dream and reports its state', async () => {
    const fixture = closeAfterTest(await openExtractionFixture());
    const { engram } = fixture;
    expect(await engram.dream.status()).toEqual({ lastRunAt: null, status: expect.any(String), sessionsNoted: 0 });
    await engram.dream.queue({ sessionId: 'session-1' });
    await engram.dream.queue({ sessionId: 'session-1' });
    await engram.dream.queue({ sessionId: 'session-2' });
    expect(await engram.dream.status()).toMatchObject({ lastRunAt: null, sessionsNoted: 2 });
  });
});
