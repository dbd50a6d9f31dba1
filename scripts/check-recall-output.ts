/**
 * Checks that a change to recall's mechanics (plans, loops, caches) left its answers alone: the
 * benchmarks' questions (LoCoMo, LongMemEval, MemoryBank) are asked of this checkout and of another
 * (`git archive main | tar -x -C /tmp/main`, with a `node_modules` link), each on its own store of
 * the same memories (the question-latency bench's corpus), twice over so caches are warm. Exits 1
 * when any question's memories, order or score parts differ (numbers by more than 1e-9).
 * Run: ENGRAM_BENCH_DATA=../shared/data npx tsx scripts/check-recall-output.ts /tmp/main [memories, default 10000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { conversationCorpus } from '../bench/question-latency-bench.js';

const SCOPE = 'project:questions';
const TOLERANCE = 1e-9;
const [other, sizeArgument] = process.argv.slice(2);
if (other === undefined) {
  console.error('usage: npx tsx scripts/check-recall-output.ts <other checkout> [memories]');
  process.exit(2);
}
const corpus = conversationCorpus();
if (!corpus) {
  console.error('The benchmark data is absent (see ../shared/data/README.md, or set ENGRAM_BENCH_DATA).');
  process.exit(2);
}
const memories = corpus.memories.slice(0, Number(sizeArgument ?? 10_000));
const questions = [...corpus.questions.locomo, ...corpus.questions.longMemEval, ...corpus.questions.memoryBank];

/** Every question's recall (ids and score parts, as JSON values) from the checkout at `root`. */
async function answers(root: string): Promise<unknown[]> {
  const { SqliteMemoryStore } = (await import(
    resolve(root, 'src/adapters/sqlite/sqlite-memory-store.ts')
  )) as typeof import('../src/adapters/sqlite/sqlite-memory-store.js');
  const { Engram } = (await import(resolve(root, 'src/engram.ts'))) as typeof import('../src/engram.js');
  const directory = mkdtempSync(join(tmpdir(), 'engram-recall-output-'));
  const newest = Math.max(...memories.map((memory) => Date.parse(memory.createdAt ?? '1970-01-01T00:00:00Z')));
  const now = (): Date => new Date(newest + 1_000);
  const store = new SqliteMemoryStore({ path: join(directory, 'store.db'), now });
  try {
    await store.open();
    for (let start = 0; start < memories.length; start += 1_000)
      await store.createMany(memories.slice(start, start + 1_000), { actor: 'check' });
    const engram = new Engram({ store, now });
    let result: unknown[] = [];
    // The second round answers from the caches the first one filled.
    for (let round = 0; round < 2; round += 1) {
      result = [];
      for (const question of questions) {
        const recalled = await engram.recall(question, { scopes: [SCOPE], recordAccess: false });
        result.push({
          terms: recalled.terms,
          memories: recalled.memories.map((entry) => [entry.memory.id, entry.parts]),
        });
      }
    }
    return result;
  } finally {
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function same(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= TOLERANCE;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((key) => same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

const here = await answers(resolve(import.meta.dirname, '..'));
const there = await answers(resolve(other));
const differing = questions.filter((_, index) => !same(here[index], there[index]));
console.log(
  `recall output: ${questions.length - differing.length} of ${questions.length} questions the same at ${memories.length} memories`,
);
for (const question of differing.slice(0, 10)) console.error(`DIFFERS ${JSON.stringify(question)}`);
process.exit(differing.length > 0 ? 1 : 0);
