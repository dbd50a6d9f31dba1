import { expect } from 'vitest';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { Engram } from '../../src/engram.js';
import { EXTRACTION_QUEUE, extractionJobKey, turnCheckpointName } from '../../src/extraction/extraction-job-payload.js';
import type { PurgeReport } from '../../src/memory/memory-purge.js';

// Issue 26 item 11: a memory extraction wrote leaves copies outside its own rows. The conversation
// it came from (the job's payload) says it in other words than the memory, so looking for the
// memory's text alone never finds it; the job's progress keeps the model's answer; the viewer's
// recent runs and a dream change set name it. Every test that uses this reads the raw files after.

const ACTOR = { actor: 'purge-scenario' };
export const PURGE_SCOPE = 'project:vault';
/** Words only the source conversation holds (the memory says it otherwise). */
export const CONVERSATION_ONLY = 'scaredofmarmotszq';
/** The fact itself, in the memory and in the conversation. */
export const SECRET_WORD = 'zqxvortexkappa';
const SESSION = 'sess:purge%1';

export interface PurgeScenario {
  engram: Engram;
  memoryId: string;
  otherMemoryId: string;
  keptJobIds: string[];
}

/** A store where extraction wrote a memory from session SESSION, turn m2, with every copy a run leaves. */
export async function buildPurgeScenario(store: MemoryStore): Promise<PurgeScenario> {
  const engram = new Engram({ store, defaultScope: PURGE_SCOPE, readScopes: [PURGE_SCOPE] });
  for (let index = 0; index < 30; index += 1)
    await store.create({ scope: PURGE_SCOPE, content: `Ordinary fact number ${index} about the build.` }, ACTOR);
  const memory = await store.create(
    {
      scope: PURGE_SCOPE,
      name: 'dana-diagnosis',
      content: `Dana has ${SECRET_WORD} syndrome and sees the clinic in May.`,
      source: { sessionId: SESSION, turnId: 'm2', origin: 'extraction' },
    },
    ACTOR,
  );
  const other = await store.create({ scope: PURGE_SCOPE, content: 'The deploy runs from the main branch.' }, ACTOR);
  const jobs = store.jobs!;
  const message = (id: string, text: string) => ({ id, role: 'user', text });
  const sourceKey = extractionJobKey(SESSION, 'm2');
  await jobs.enqueue({
    queue: EXTRACTION_QUEUE,
    key: sourceKey,
    payload: {
      version: 1,
      sessionId: SESSION,
      sequence: 1,
      messages: [message('m1', 'Morning.'), message('m2', `Dana told me, ${CONVERSATION_ONLY}, it is ${SECRET_WORD}.`)],
    },
  });
  const claimed = await jobs.claim({ queue: EXTRACTION_QUEUE, worker: 'w1', leaseMs: 60_000 });
  expect(claimed?.key).toBe(sourceKey);
  await jobs.complete(claimed!.id, 'w1');
  // A later turn of the same session, not yet run, that does not hold the source turn: it stays.
  const later = await jobs.enqueue({
    queue: EXTRACTION_QUEUE,
    key: extractionJobKey(SESSION, 'm4'),
    payload: { version: 1, sessionId: SESSION, sequence: 2, messages: [message('m4', 'Ship the release notes.')] },
  });
  // Another session's job: it stays.
  const unrelated = await jobs.enqueue({
    queue: EXTRACTION_QUEUE,
    key: extractionJobKey('sess-other', 'm9'),
    payload: { version: 1, sessionId: 'sess-other', sequence: 1, messages: [message('m9', 'The build uses pnpm.')] },
  });
  const checkpoints = store.checkpoints!;
  await checkpoints.set(
    turnCheckpointName(sourceKey),
    JSON.stringify({
      answers: [`{"memories":[{"content":"Dana has ${SECRET_WORD} syndrome (${CONVERSATION_ONLY})"}]}`],
    }),
  );
  await checkpoints.set(
    'extraction-recent',
    JSON.stringify([
      {
        at: '2026-12-05T10:00:00.000Z',
        job: { id: claimed!.id, key: sourceKey, sessionId: SESSION },
        state: 'done',
        report: { written: [{ id: memory.id, name: 'dana-diagnosis', action: 'created' }], dropped: [] },
      },
      {
        at: '2026-12-05T09:00:00.000Z',
        job: { id: 'job-older', key: 'sess-other:m1', sessionId: 'sess-other' },
        state: 'done',
        report: { written: [{ id: other.id, name: 'deploy-branch', action: 'created' }], dropped: [] },
      },
    ]),
  );
  await checkpoints.set('change-set:cs_00000000000000000000000001:0', JSON.stringify([memory.id, other.id]));
  return { engram, memoryId: memory.id, otherMemoryId: other.id, keptJobIds: [later.job.id, unrelated.job.id] };
}

/** What must hold after the purge, whatever the backend: each copy gone, the rest kept, each place named. */
export async function expectScenarioPurged(
  store: MemoryStore,
  scenario: PurgeScenario,
  report: PurgeReport,
): Promise<void> {
  const place = (name: string) => report.places.find((entry) => entry.place === name);
  expect(place('jobs')).toMatchObject({ removed: 1, cleared: true });
  expect(place('extraction-progress')).toMatchObject({ removed: 1, cleared: true });
  expect(place('recent-extractions')).toMatchObject({ removed: 1, cleared: true });
  expect(place('dream-change-sets')).toMatchObject({ removed: 1, cleared: true });
  expect(place('source-transcript')).toMatchObject({ cleared: false });
  expect(place('source-transcript')!.reason).toContain('sess:purge%1');
  expect(report.copiesCleared).toBe(false);
  const jobs = await store.jobs!.list({ queue: EXTRACTION_QUEUE, limit: 50 });
  expect(jobs.map((job) => job.id).sort()).toEqual([...scenario.keptJobIds].sort());
  // The runs stay (the viewer's Activity), without the memory they wrote.
  const recent = (await store.checkpoints!.get('extraction-recent'))!;
  expect(recent).not.toContain(scenario.memoryId);
  expect(
    (JSON.parse(recent) as Array<{ report: { written: Array<{ id: string }> } }>).map((run) =>
      run.report.written.map((item) => item.id),
    ),
  ).toEqual([[], [scenario.otherMemoryId]]);
  expect(JSON.parse((await store.checkpoints!.get('change-set:cs_00000000000000000000000001:0'))!)).toEqual([
    scenario.otherMemoryId,
  ]);
  expect(await store.count({ scopes: [PURGE_SCOPE] })).toBe(31);
}

/** How many times each needle occurs in the raw bytes given. */
export function countNeedles(files: readonly Buffer[], needles: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(needles.map((needle) => [needle, 0]));
  for (const bytes of files)
    for (const needle of needles) {
      const pattern = Buffer.from(needle, 'utf8');
      for (let at = bytes.indexOf(pattern); at !== -1; at = bytes.indexOf(pattern, at + 1)) counts[needle]! += 1;
    }
  return counts;
}
