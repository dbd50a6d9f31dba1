import { afterEach, describe, expect, it } from 'vitest';
import type { ConversationMessage } from '../../src/contracts/conversation.js';
import { EXTRACTION_QUEUE, extractionJobKey } from '../../src/extraction/extraction-job-payload.js';
import type { JobOutcome } from '../../src/extraction/extraction-report.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { ScriptedLanguageModel, type ScriptedAnswer } from '../../src/testing/scripted-language-model.js';
import { answer, openExtractionFixture, type ExtractionFixture } from '../support/extraction-support.js';

let fixture: ExtractionFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

function messages(userId: string, text: string): ConversationMessage[] {
  return [
    { id: userId, role: 'user', text },
    { id: `${userId}-reply`, role: 'assistant', text: 'Noted.' },
  ];
}

describe('extraction job keys', () => {
  it('never give two different (session, message) pairs one key, whatever the ids hold', () => {
    expect(extractionJobKey('a:b', 'c')).not.toBe(extractionJobKey('a', 'b:c'));
    expect(extractionJobKey('a%3Ab', 'c')).not.toBe(extractionJobKey('a:b', 'c'));
    // Ids without ':' or '%' keep the plain form, so jobs queued before the escaping still match.
    expect(extractionJobKey('chat-1', 'u1')).toBe('chat-1:u1');
  });

  it('queues and extracts two sessions whose plain keys would collide as two jobs, each reading only its own turn', async () => {
    fixture = await openExtractionFixture();
    const script: ScriptedAnswer[] = [
      answer({ content: 'The first session deploys on Fridays.' }),
      answer({ content: 'The second session uses Postgres 15.' }),
    ];
    const model = new ScriptedLanguageModel({ script });
    const extractor = new Extractor({
      engram: fixture.engram,
      model,
      autoStart: false,
      now: () => new Date(fixture!.clock.now),
    });
    // Session "a:b" ending at message "c-reply", session "a" ending at message "b:c-reply": "a:b:c-reply" both, unescaped.
    const first = await extractor.afterTurn({ sessionId: 'a:b', messages: messages('c', 'We deploy on Fridays.') });
    const second = await extractor.afterTurn({ sessionId: 'a', messages: messages('b:c', 'We use Postgres 15.') });
    expect(first.jobs[0]!.created && second.jobs[0]!.created).toBe(true);
    expect(new Set([first.jobs[0]!.key, second.jobs[0]!.key]).size).toBe(2);
    const outcomes = await extractor.drain();
    expect(outcomes.map((outcome) => outcome.state)).toEqual(['done', 'done']);
    const prompts = model.requests.map((request) => JSON.stringify(request.messages));
    expect(prompts[0]).toContain('Fridays');
    expect(prompts[0]).not.toContain('Postgres');
    expect(prompts[1]).toContain('Postgres');
    expect(prompts[1]).not.toContain('Fridays');
  });
});

describe('extraction job leases', () => {
  it('stops a run at extraction.runTimeoutMs, its lease renewed until then so no other worker takes the job while it still runs; the attempt counts and the job is retried', async () => {
    fixture = await openExtractionFixture({ extraction: { leaseMs: 1_000, runTimeoutMs: 1_500 } });
    const outcomes: JobOutcome[] = [];
    // A model that never answers unless aborted.
    const model = new ScriptedLanguageModel({
      script: [
        (request) =>
          new Promise((_, reject) =>
            request.signal!.addEventListener('abort', () => reject(request.signal!.reason), { once: true }),
          ),
        answer({ content: 'The build uses pnpm.' }),
      ],
    });
    const extractor = new Extractor({
      engram: fixture.engram,
      model,
      autoStart: false,
      now: () => new Date(fixture!.clock.now),
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    await extractor.afterTurn({ sessionId: 'chat-1', messages: messages('u1', 'The build uses pnpm.') });
    const [first] = await extractor.drain();
    expect(first).toMatchObject({ state: 'retrying', code: 'JOB_LEASE_LOST' });
    const [job] = await fixture.store.jobs.list({ queue: EXTRACTION_QUEUE });
    // Still leased by nobody, back to pending with backoff (a shutdown would have made it due now).
    expect(job).toMatchObject({ state: 'pending', attempts: 1 });
    expect(Date.parse(job!.runAt)).toBeGreaterThan(fixture.clock.now);
    fixture.clock.now = Date.parse(job!.runAt);
    const [second] = await extractor.drain();
    expect(second!.state).toBe('done');
    expect(await fixture.engram.count()).toBe(1);
  });
});
