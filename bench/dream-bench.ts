import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { runDream } from '../src/consolidation/run-dream.js';
import { DEFAULT_SETTINGS } from '../src/kernel/settings.js';
import { ScriptedLanguageModel } from '../src/testing/scripted-language-model.js';
import { buildDreamCorpus, CORPUS_NOW, CORPUS_SCOPE } from '../test/fixtures/dream-corpus.js';
import { makeMemories, makeVocabulary, seededRandom } from './synthetic-memories.js';
import { round } from './statistics.js';
import { measureDistinctFacts } from './distinct-facts-measure.js';

// ENGRAM_BENCH_PARTS=dream: consolidation (issue 15). The offline dream over 10K memories (one
// scope, synthetic text plus the seeded corpus's plants); precision and recall of the planted
// merges and invalidations on the seeded corpus, offline and with the scripted model; planted
// duplicates left after a dream; model calls and tokens per 100 memories with the scripted model;
// distinct facts a dream wrongly invalidates (target 0) and its true-update recall, on the corpus of
// distinct-but-similar facts and on a bulk store of 1,554 templated ones (issue 26).

async function seededStore(directory: string, name: string): Promise<SqliteMemoryStore> {
  const store = new SqliteMemoryStore({ path: join(directory, name), now: () => new Date(CORPUS_NOW) });
  await store.open();
  await store.importMany(buildDreamCorpus().memories, { onExisting: 'fail' }, { actor: 'seed' });
  return store;
}

function score(found: ReadonlySet<string>, planted: ReadonlySet<string>): { precision: number; recall: number } {
  let hits = 0;
  for (const key of found) if (planted.has(key)) hits += 1;
  return {
    precision: round(found.size === 0 ? 1 : hits / found.size, 3),
    recall: round(planted.size === 0 ? 1 : hits / planted.size, 3),
  };
}

export async function benchDreamPart(): Promise<Record<string, unknown>> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-dream-'));
  const corpus = buildDreamCorpus();
  const deps = (store: SqliteMemoryStore, extra: object = {}) => ({
    store,
    settings: DEFAULT_SETTINGS,
    now: () => new Date(CORPUS_NOW),
    instructions: corpus.instructions,
    ...extra,
  });
  try {
    // 10K memories in one scope: the synthetic text, the corpus on top.
    const large = await seededStore(directory, 'large.db');
    const vocabulary = makeVocabulary(5_000, seededRandom(7));
    const synthetic = makeMemories(10_000 - corpus.memories.length, { seed: 11, scopeCount: 0, vocabulary }).map(
      (memory) => ({
        ...memory,
        scope: CORPUS_SCOPE,
        createdAt: '2026-02-01T00:00:00.000Z',
        lastAccessedAt: CORPUS_NOW,
      }),
    );
    await large.createMany(synthetic, { actor: 'seed' });
    const total = (await large.stats()).total;
    const started = performance.now();
    const largeReport = await runDream(deps(large), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    const largeMs = performance.now() - started;
    await large.close();

    // Offline on the seeded corpus.
    const offlineStore = await seededStore(directory, 'offline.db');
    const offline = await runDream(deps(offlineStore), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    const plantedMerges = new Set(corpus.merges.flatMap((m) => m.duplicates.map((d) => `${d}>${m.keeper}`)));
    const plantedInvalid = new Set(corpus.invalidations.map((i) => `${i.older}>${i.newer}`));
    const merged = (report: typeof offline) =>
      new Set(report.steps.filter((s) => s.kind === 'supersede').map((s) => `${s.memoryId}>${s.relatedIds[0]}`));
    const invalidated = (report: typeof offline) =>
      new Set(report.steps.filter((s) => s.kind === 'invalidate').map((s) => `${s.memoryId}>${s.relatedIds[0]}`));
    const plantedDuplicates = corpus.merges.flatMap((m) => m.duplicates);
    const left = [];
    for (const id of plantedDuplicates) if ((await offlineStore.get(id))?.invalidAt === null) left.push(id);
    await offlineStore.close();

    // With the scripted model: it proposes the cross-wording plants (and one guard-breaking merge, dropped).
    const modelStore = await seededStore(directory, 'model.db');
    const plan = [
      ...corpus.modelMerges.map((m) => ({ kind: 'merge', keeperId: m.keeper, duplicateIds: m.duplicates })),
      ...corpus.modelInvalidations.map((i) => ({ kind: 'invalidate', memoryId: i.older, supersededBy: i.newer })),
      { kind: 'merge', keeperId: corpus.guarded[0]![0], duplicateIds: [corpus.guarded[0]![1]] },
    ];
    const model = new ScriptedLanguageModel({
      script: [{ text: JSON.stringify(plan), usage: { inputTokens: 0, outputTokens: 0 } }],
      whenExhausted: 'repeat-last',
    });
    const withModel = await runDream(deps(modelStore, { model }), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    await modelStore.close();
    const allMerges = new Set([
      ...plantedMerges,
      ...corpus.modelMerges.flatMap((m) => m.duplicates.map((d) => `${d}>${m.keeper}`)),
    ]);
    const allInvalid = new Set([...plantedInvalid, ...corpus.modelInvalidations.map((i) => `${i.older}>${i.newer}`)]);
    const activeCount = corpus.memories.filter((m) => m.scope === CORPUS_SCOPE && !m.archived && !m.invalidAt).length;
    const inputChars = model.requests.reduce(
      (sum, request) => sum + JSON.stringify(request.messages).length + JSON.stringify(request.system ?? '').length,
      0,
    );
    const outputChars = JSON.stringify(plan).length * model.calls;
    const result = {
      offline10k: {
        memories: total,
        ms: round(largeMs, 0),
        targetMs: 10_000,
        improved: largeReport.improved,
        steps: largeReport.steps.length,
      },
      seeded: {
        memories: corpus.memories.length,
        offline: {
          merges: score(merged(offline), plantedMerges),
          invalidations: score(invalidated(offline), plantedInvalid),
          improved: offline.improved,
        },
        scriptedModel: {
          merges: score(merged(withModel), allMerges),
          invalidations: score(invalidated(withModel), allInvalid),
          droppedModelSteps: withModel.dropped.filter((d) => d.by === 'model').length,
        },
        plantedDuplicatesLeft: left.length,
        plantedDuplicatesLeftTarget: 0,
      },
      distinctFacts: { ...(await measureDistinctFacts()), wrongInvalidationsTarget: 0 },
      modelPer100Memories: {
        calls: round((model.calls / activeCount) * 100, 2),
        // The scripted model reports no usage; tokens estimated at 4 characters a token from what was sent and answered.
        inputTokensEstimated: round((inputChars / 4 / activeCount) * 100, 0),
        outputTokensEstimated: round((outputChars / 4 / activeCount) * 100, 0),
      },
    };
    console.log('\ndream');
    console.log(JSON.stringify(result, null, 2));
    return result;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
