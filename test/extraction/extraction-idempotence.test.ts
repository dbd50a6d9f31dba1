import { describe, expect, it } from 'vitest';
import { EngramError } from '../../src/kernel/errors.js';
import type { Conversation } from '../../src/contracts/conversation.js';
import {
  EXTRACTION_QUEUE,
  cursorCheckpointName,
  formatCursor,
  parseCursor,
  type ExtractionJobPayload,
} from '../../src/extraction/extraction-job-payload.js';
import type { JobOutcome } from '../../src/extraction/extraction-report.js';
import { type ExtractorOptions } from '../../src/extraction/extractor.js';
import { applyExplicitStatements, type ExplicitMemoryHandler } from '../../src/extraction/explicit-statements.js';
import { type ScriptedAnswer } from '../../src/testing/scripted-language-model.js';
import {
  answer,
  memoryToolCall,
  turn,
  scriptedExtractor,
  session,
  useExtractionFixture,
} from '../support/extraction-support.js';

/**
 * What extraction does for a source message happens once: explicit statements, the agent's writes,
 * the model's reading of a turn. Retries, covering runs, the offline path, restarts and stops
 * included (SPEC §3: "the same source turn is never extracted twice").
 */

const fixture = useExtractionFixture({ jobs: { maxAttempts: 3 } });
const down = { error: new EngramError('MODEL_UNAVAILABLE', 'The model server is down.') };

function extractor(script: readonly ScriptedAnswer[], options: Partial<ExtractorOptions> = {}) {
  return scriptedExtractor(fixture, script, options);
}

/** The default explicit rules, counting the messages they are applied to. */
function countingExplicit(): { handler: ExplicitMemoryHandler; texts: string[] } {
  const texts: string[] = [];
  return { texts, handler: async (input) => (texts.push(input.text), applyExplicitStatements(input)) };
}

async function fridayMemories(): Promise<void> {
  await fixture.engram.remember({ content: 'The team deploys on Fridays.' });
  await fixture.engram.remember({
    content: 'The team deploys on Fridays from the main branch using the blue pipeline.',
  });
}

async function activeContents(): Promise<string[]> {
  return (await fixture.engram.list()).map((memory) => memory.content).sort();
}

describe('explicit statements are applied once per source message', () => {
  it('a "forget" read twice by the offline path, then by a model run, archives one memory', async () => {
    await fridayMemories();
    const { extractor: subject, model } = extractor(['[]']);
    const conversation = session(turn(1, 'Forget that the team deploys on Fridays.'));
    const first = await subject.applyExplicitOnly(conversation);
    expect(first.written.map((memory) => memory.action)).toEqual(['archived']);
    const second = await subject.applyExplicitOnly(conversation);
    expect(second).toMatchObject({ written: [], appliedBefore: 1 });
    await subject.afterTurn(conversation);
    const [outcome] = await subject.drain();
    expect(outcome).toMatchObject({ state: 'done', report: { status: 'extracted', written: [] } });
    expect(model.calls).toBe(1);
    expect(await activeContents()).toEqual([
      'The team deploys on Fridays from the main branch using the blue pipeline.',
    ]);
  });

  it("a run that covers a failed job does not apply that job's statements again", async () => {
    await fridayMemories();
    const explicit = countingExplicit();
    const { extractor: subject } = extractor([down, '[]'], { explicit: explicit.handler });
    const messages = turn(1, 'Forget that the team deploys on Fridays.');
    await subject.afterTurn(session(messages));
    expect(await subject.drain()).toEqual([expect.objectContaining({ state: 'retrying' })]);
    messages.push(...turn(2, 'Remember that the staging database is PostgreSQL 15.'));
    await subject.afterTurn(session(messages));
    const outcomes = await subject.drain();
    expect(outcomes.map((outcome) => outcome.state)).toEqual(['done']);
    fixture.clock.now += 120_000;
    const retried = await subject.drain();
    expect(retried).toEqual([
      expect.objectContaining({ state: 'done', report: expect.objectContaining({ status: 'already-done' }) }),
    ]);
    expect(explicit.texts).toEqual([
      'Forget that the team deploys on Fridays.',
      'Remember that the staging database is PostgreSQL 15.',
    ]);
    expect(await activeContents()).toEqual([
      'The staging database is PostgreSQL 15.',
      'The team deploys on Fridays from the main branch using the blue pipeline.',
    ]);
  });

  it('a statement written before is still known to the model, so it is not extracted again', async () => {
    const { extractor: subject, model } = extractor([
      down,
      answer({ content: 'Releases are tagged with semantic versions.' }),
    ]);
    const conversation = session(turn(1, 'Remember that the billing service owner is Dana.'));
    await subject.afterTurn(conversation);
    await subject.drain();
    fixture.clock.now += 120_000;
    await subject.drain();
    expect(model.calls).toBe(2);
    expect(model.lastRequest!.messages[0]!.content).toMatch(
      /<already_known>\n- \[\w+\] [a-z0-9-]+: The billing service owner is Dana\./,
    );
  });

  it('skips explicit statements when the main agent wrote memory in the span: only the cursor moves', async () => {
    const { extractor: subject, model } = extractor([]);
    await subject.afterTurn(
      session([
        { id: 'u1', role: 'user', text: 'Remember that we use pnpm.' },
        memoryToolCall('a1', 'Saving it.', { command: 'create', path: '/memories/pnpm.md', file_text: 'We use pnpm.' }),
        { id: 'a2', role: 'assistant', text: 'Saved.' },
      ]),
    );
    const [outcome] = await subject.drain();
    expect(outcome).toMatchObject({ state: 'done', report: { status: 'memory-written-in-span', written: [] } });
    expect(model.calls).toBe(0);
    expect(await fixture.engram.count()).toBe(0);
    expect(parseCursor(await fixture.store.checkpoints.get(cursorCheckpointName('chat-1')))?.messageId).toBe('a2');
  });
});

describe('agent mode on retry', () => {
  const toolUse = (id: string, input: Record<string, unknown>): ScriptedAnswer => ({
    content: [{ type: 'tool_use', id, name: 'memory', input }],
  });

  it('does not run the helper again once it wrote memory: the retry only moves the cursor', async () => {
    const { extractor: subject, model } = extractor(
      [
        toolUse('t1', {
          command: 'create',
          path: '/memories/deploy-day.md',
          file_text: '---\nname: deploy-day\ndescription: Deploy day\ntype: project\n---\nDeploys happen on Fridays.',
        }),
        down,
        toolUse('t2', {
          command: 'create',
          path: '/memories/deploy-day-again.md',
          file_text: 'Deploys happen on Fridays.',
        }),
        'Done.',
      ],
      { mode: 'agent' },
    );
    await subject.afterTurn(session(turn(1, 'We deploy on Fridays.')));
    expect(await subject.drain()).toEqual([expect.objectContaining({ state: 'retrying' })]);
    expect(parseCursor(await fixture.store.checkpoints.get(cursorCheckpointName('chat-1')))).toBeUndefined();
    fixture.clock.now += 120_000;
    const [outcome] = await subject.drain();
    expect(outcome).toMatchObject({ state: 'done', report: { status: 'extracted', modelCalls: 0 } });
    expect((outcome as Extract<JobOutcome, { state: 'done' }>).report.warnings.join(' ')).toMatch(
      /already wrote memory/,
    );
    expect(model.calls).toBe(2);
    expect((await fixture.engram.list()).map((memory) => memory.name)).toEqual(['deploy-day']);
    expect(parseCursor(await fixture.store.checkpoints.get(cursorCheckpointName('chat-1')))?.messageId).toBe('a1');
  });
});

describe('turns the cursor has passed', () => {
  it('are done, not read again as if the cursor had vanished', async () => {
    const { extractor: subject, model } = extractor([]);
    const messages = [...turn(1, 'We deploy on Fridays.'), ...turn(2, 'Billing is written in Go.')];
    await subject.afterTurn(session(messages.slice(0, 2)));
    await subject.afterTurn(session(messages));
    const [first, second] = await fixture.store.jobs.list({ queue: EXTRACTION_QUEUE });
    // What another process left: it extracted both turns in one run (as the second job), moved the
    // cursor, and stopped before it marked the first job done.
    const claimedFirst = await fixture.store.jobs.claim({ queue: EXTRACTION_QUEUE, worker: 'other', leaseMs: 60_000 });
    const claimedSecond = await fixture.store.jobs.claim({ queue: EXTRACTION_QUEUE, worker: 'other', leaseMs: 60_000 });
    expect([claimedFirst!.id, claimedSecond!.id]).toEqual([first!.id, second!.id]);
    await fixture.store.jobs.complete(second!.id, 'other');
    await fixture.store.checkpoints.set(
      cursorCheckpointName('chat-1'),
      formatCursor({ messageId: 'a2', sequence: (second!.payload as ExtractionJobPayload).sequence }),
    );
    await fixture.store.jobs.fail(first!.id, 'other', {
      error: 'stopped',
      retryAt: new Date(fixture.clock.now).toISOString(),
    });

    const [outcome] = await subject.drain();
    expect(outcome).toMatchObject({
      job: { id: first!.id },
      state: 'done',
      report: { status: 'already-done', span: { messages: 0 } },
    });
    expect(model.calls).toBe(0);
    expect(parseCursor(await fixture.store.checkpoints.get(cursorCheckpointName('chat-1')))?.messageId).toBe('a2');
  });
});

describe('private text across a restart', () => {
  it('stays hidden when the <private> block opened before the cursor', async () => {
    const { extractor: first } = extractor(['[]']);
    const opened = [
      { id: 'u1', role: 'user' as const, text: 'Some context first. <private>My notes on the reorganisation:' },
      { id: 'a1', role: 'assistant' as const, text: 'Understood.' },
    ];
    await first.afterTurn(session(opened));
    await first.drain();
    const grown = [
      ...opened,
      { id: 'u2', role: 'user' as const, text: 'Remember that the layoffs hit team Atlas.' },
      { id: 'a2', role: 'assistant' as const, text: 'Atlas, noted.' },
      { id: 'u3', role: 'user' as const, text: '</private> Remember that we deploy on Fridays.' },
      { id: 'a3', role: 'assistant' as const, text: 'Noted.' },
    ];

    // A new process: the filter state is rebuilt from the messages up to the cursor.
    const { extractor: restarted } = extractor([]);
    const applied = await restarted.applyExplicitOnly(session(grown));
    expect(applied.written.map((memory) => memory.name)).toEqual([expect.stringMatching(/fridays/)]);
    expect(JSON.stringify(await fixture.engram.list())).not.toMatch(/Atlas/);
    await restarted.afterTurn(session(grown));
    const jobs = await fixture.store.jobs.list({ queue: EXTRACTION_QUEUE, states: ['pending'] });
    expect(jobs).toHaveLength(1);
    const stored = JSON.stringify(jobs[0]!.payload);
    expect(stored).toContain('we deploy on Fridays');
    expect(stored).not.toMatch(/Atlas|layoffs/);
  });
});

describe('stopping the worker', () => {
  it('gives a stopped job back without using an attempt, and drain runs again after a stop', async () => {
    let started!: () => void;
    let inFlight = new Promise<void>((resolve) => (started = resolve));
    const hang: ScriptedAnswer = (request) => {
      started();
      return new Promise((_, reject) =>
        request.signal!.addEventListener('abort', () => reject(request.signal!.reason), { once: true }),
      );
    };
    const { extractor: subject } = extractor([
      hang,
      hang,
      hang,
      hang,
      answer({ content: 'The CI runs on Buildkite.' }),
    ]);
    await subject.afterTurn(session(turn(1, 'CI is Buildkite.')));
    // More stops than the job has attempts (3): each one gives it back untouched.
    for (let stop = 0; stop < 4; stop += 1) {
      subject.start();
      await inFlight;
      inFlight = new Promise<void>((resolve) => (started = resolve));
      await subject.stop();
      const [job] = await fixture.store.jobs.list({ queue: EXTRACTION_QUEUE });
      expect(job).toMatchObject({ state: 'pending', attempts: 0 });
    }
    const outcomes = await subject.drain();
    expect(outcomes).toEqual([expect.objectContaining({ state: 'done' })]);
    expect((await fixture.engram.list()).map((memory) => memory.content)).toEqual(['The CI runs on Buildkite.']);
  });
});
