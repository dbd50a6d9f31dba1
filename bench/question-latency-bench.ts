import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convertLocomo, LOCOMO_SOURCE } from '../scripts/locomo-to-jsonl.js';
import { readMemoryBank } from '../scripts/memorybank-to-jsonl.js';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { closeSqlite, openSqlite, type SqliteStatement } from '../src/adapters/sqlite/sqlite-driver.js';
import { ftsMatchExpression } from '../src/adapters/sqlite/sqlite-queries.js';
import { Engram } from '../src/engram.js';
import { parseEvalDataset, type EvalDataset } from '../src/eval/eval-dataset.js';
import { repairTurnText } from '../src/eval/benchmark-text.js';
import { parseLongMemEvalDate } from '../src/eval/longmemeval-dataset.js';
import { DEFAULT_SETTINGS } from '../src/kernel/settings.js';
import type { NewMemory } from '../src/memory/memory.js';
import { queryTerms } from '../src/recall/query-terms.js';
import { longMemEvalDataset, readLongMemEvalQuestions } from './longmemeval-bench.js';
import { median, quantile, round } from './statistics.js';

/**
 * `ENGRAM_BENCH_PARTS=questions`: recall latency of the benchmarks' own questions (LoCoMo,
 * LongMemEval, MemoryBank: long natural-language questions, unlike the store part's short synthetic
 * ones) in ONE scope of 10K and 100K memories of real conversation text: every LoCoMo turn (with its
 * source turn, as extraction records it) and MemoryBank exchange, then LongMemEval's user turns, then
 * paragraphs of its assistant turns, as many as the size needs. Each question is asked of recall at
 * the default settings and, interleaved with it, of the bare full-text query on the same file
 * (`MATCH` of the question's words, `bm25()`, `LIMIT top_k`: what any FTS5 user would run), so the
 * ratio holds on a loaded machine. ENGRAM_BENCH_QUESTION_SIZES (default 10000,100000) and
 * ENGRAM_BENCH_QUESTION_ROUNDS (rounds of the smaller sets, default 5) make a run smaller.
 */
export interface QuestionLatencyRow {
  memories: number;
  questions: string;
  asked: number;
  recallP50Ms: number;
  recallP95Ms: number;
  bareP50Ms: number;
  bareP95Ms: number;
  /** recall ÷ bare query, at p50 and p95. */
  ratioP50: number;
  ratioP95: number;
}

export interface QuestionLatencyResult {
  scope: string;
  rows: QuestionLatencyRow[];
  loadAverage: number[];
}

const SCOPE = 'project:questions';
const WARM_UP = 50;
const BATCH = 1_000;
/** A paragraph of an assistant turn shorter than this is a heading or a list stub, not a memory. */
const MIN_PARAGRAPH_CHARS = 40;

interface QuestionSet {
  name: string;
  questions: string[];
  rounds: number;
}

export async function benchQuestionLatency(
  sizes: readonly number[] = (process.env.ENGRAM_BENCH_QUESTION_SIZES ?? '10000,100000').split(',').map(Number),
  rounds: number = Number(process.env.ENGRAM_BENCH_QUESTION_ROUNDS ?? 5),
): Promise<QuestionLatencyResult | undefined> {
  const corpus = conversationCorpus();
  if (!corpus) {
    console.log('\nQuestion latency: skipped, the benchmark data is absent (see ../shared/data/README.md).');
    return undefined;
  }
  const sets: QuestionSet[] = [
    { name: 'LoCoMo', questions: corpus.questions.locomo, rounds: 1 },
    { name: 'LongMemEval', questions: corpus.questions.longMemEval, rounds },
    { name: 'MemoryBank', questions: corpus.questions.memoryBank, rounds },
  ];
  const rows: QuestionLatencyRow[] = [];
  const directory = mkdtempSync(join(tmpdir(), 'engram-question-latency-'));
  try {
    for (const size of sizes) {
      if (size > corpus.memories.length)
        throw new Error(
          `Question latency: ${size} memories asked for, the conversation corpus has ${corpus.memories.length}.`,
        );
      rows.push(...(await benchSize(join(directory, `${size}.db`), corpus.memories.slice(0, size), sets)));
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  const loadAverage = (await import('node:os')).loadavg().map((value) => round(value, 2));
  console.log(
    `\nRecall of the benchmarks' questions in one scope, SQLite, beside the bare FTS5 query (MATCH, bm25(), LIMIT ${DEFAULT_SETTINGS.recall.topK}) interleaved; load average ${loadAverage.join(' ')}`,
  );
  console.table(
    rows.map((row) => ({
      memories: row.memories,
      questions: `${row.questions} (${row.asked})`,
      'recall p50 ms': row.recallP50Ms,
      'recall p95 ms': row.recallP95Ms,
      'bare p50 ms': row.bareP50Ms,
      'bare p95 ms': row.bareP95Ms,
      'ratio p50': row.ratioP50,
      'ratio p95': row.ratioP95,
    })),
  );
  return { scope: SCOPE, rows, loadAverage };
}

async function benchSize(path: string, memories: readonly NewMemory[], sets: readonly QuestionSet[]) {
  // The clock just after the newest memory, as `engram eval` sets it.
  const newest = Math.max(...memories.map((memory) => Date.parse(memory.createdAt ?? '1970-01-01T00:00:00Z')));
  const now = (): Date => new Date(newest + 1_000);
  const store = new SqliteMemoryStore({ path, now });
  await store.open();
  const bare = openSqlite(path);
  try {
    for (let start = 0; start < memories.length; start += BATCH)
      await store.createMany(memories.slice(start, start + BATCH), { actor: 'bench' });
    const engram = new Engram({ store, now });
    const topK = DEFAULT_SETTINGS.recall.topK;
    const statement = bare.prepare(
      'SELECT rowid, bm25(memories_fts) AS rank FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?',
    );
    const asked = sets.flatMap((set) => set.questions);
    // Both sides warm their caches on questions of every set.
    for (let index = 0; index < WARM_UP; index += 1) {
      const question = asked[Math.floor((index * asked.length) / WARM_UP)]!;
      await engram.recall(question, { scopes: [SCOPE], recordAccess: false });
      bareQuery(statement, question, topK);
    }
    const rows: QuestionLatencyRow[] = [];
    for (const set of sets) {
      const recall: number[] = [];
      const plain: number[] = [];
      for (let round = 0; round < set.rounds; round += 1) {
        for (const question of set.questions) {
          let start = process.hrtime.bigint();
          await engram.recall(question, { scopes: [SCOPE], recordAccess: false });
          recall.push(Number(process.hrtime.bigint() - start) / 1e6);
          start = process.hrtime.bigint();
          bareQuery(statement, question, topK);
          plain.push(Number(process.hrtime.bigint() - start) / 1e6);
        }
      }
      rows.push(latencyRow(memories.length, set.name, recall, plain));
    }
    return rows;
  } finally {
    closeSqlite(bare);
    await store.close();
  }
}

/** The bare full-text query: the question's words ORed, FTS5's own bm25(), the best top_k rowids. */
function bareQuery(statement: SqliteStatement, question: string, limit: number): unknown[] {
  const match = ftsMatchExpression(queryTerms(question), 'any');
  return match === undefined ? [] : statement.all(match, limit);
}

function latencyRow(memories: number, questions: string, recall: number[], bare: number[]): QuestionLatencyRow {
  const recallP50Ms = round(median(recall));
  const recallP95Ms = round(quantile(recall, 0.95));
  const bareP50Ms = round(median(bare));
  const bareP95Ms = round(quantile(bare, 0.95));
  return {
    memories,
    questions,
    asked: recall.length,
    recallP50Ms,
    recallP95Ms,
    bareP50Ms,
    bareP95Ms,
    ratioP50: round(recallP50Ms / bareP50Ms, 1),
    ratioP95: round(recallP95Ms / bareP95Ms, 1),
  };
}

/**
 * Real conversation text in one scope, in the order sizes take it: LoCoMo's turns (with source
 * session and turn), MemoryBank's exchanges, LongMemEval's distinct user turns, then paragraphs of
 * its distinct assistant turns; and each set's questions. Undefined when a dataset is absent.
 */
export function conversationCorpus():
  { memories: NewMemory[]; questions: { locomo: string[]; longMemEval: string[]; memoryBank: string[] } } | undefined {
  let locomo: EvalDataset;
  try {
    locomo = parseEvalDataset(convertLocomo(JSON.parse(readFileSync(LOCOMO_SOURCE, 'utf8'))).lines.join('\n'));
  } catch {
    return undefined;
  }
  const memoryBankLines = readMemoryBank();
  const longMemEval = readLongMemEvalQuestions();
  if (!memoryBankLines || !longMemEval) return undefined;
  const memoryBank = parseEvalDataset(memoryBankLines.lines.join('\n'));
  const userTurns = longMemEvalDataset(longMemEval, 'turn').dataset;
  const memories: NewMemory[] = [];
  const seen = new Set<string>();
  const add = (memory: NewMemory): void => {
    if (seen.has(memory.content)) return;
    seen.add(memory.content);
    memories.push({ ...memory, scope: SCOPE });
  };
  for (const memory of [...locomo.memories, ...memoryBank.memories, ...userTurns.memories]) add(memory);
  const maxBytes = DEFAULT_SETTINGS.memory.maxContentBytes;
  longMemEval.forEach((question, questionIndex) => {
    const record = question as { haystack_sessions?: unknown; haystack_dates?: unknown };
    const sessions = Array.isArray(record.haystack_sessions) ? record.haystack_sessions : [];
    const dates = Array.isArray(record.haystack_dates) ? record.haystack_dates : [];
    sessions.forEach((session: unknown, sessionIndex) => {
      const createdAt = parseLongMemEvalDate(dates[sessionIndex]);
      (Array.isArray(session) ? session : []).forEach((turn: unknown, turnIndex) => {
        const { role, content } = (turn ?? {}) as { role?: unknown; content?: unknown };
        if (role !== 'assistant' || typeof content !== 'string') return;
        repairTurnText(content, maxBytes)
          .text.split(/\n\s*\n/)
          .map((paragraph) => paragraph.trim())
          .filter((paragraph) => paragraph.length >= MIN_PARAGRAPH_CHARS)
          .forEach((paragraph, paragraphIndex) =>
            add({
              id: `assistant:${questionIndex}:${sessionIndex}:${turnIndex}:${paragraphIndex}`,
              scope: SCOPE,
              content: paragraph,
              ...(createdAt && { createdAt }),
            }),
          );
      });
    });
  });
  return {
    memories,
    questions: {
      locomo: locomo.queries.map((query) => query.query),
      longMemEval: userTurns.queries.map((query) => query.query),
      memoryBank: memoryBank.queries.map((query) => query.query),
    },
  };
}
