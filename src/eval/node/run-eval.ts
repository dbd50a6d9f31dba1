import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../../adapters/sqlite/sqlite-memory-store.js';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS, type Settings } from '../../kernel/settings.js';
import { Engram } from '../../engram.js';
import type { MemoryStore } from '../../contracts/memory-store.js';
import type { Embedder } from '../../contracts/embedder.js';
import { reindexVectors } from '../../remember/memory-vectors.js';
import type { EvalDataset } from '../eval-dataset.js';
import { mean, summarizeByTag, summarizeMetrics, type MetricSummary, type ScoredQuery } from '../retrieval-metrics.js';

export interface RunEvalOptions {
  /** Cut-offs to report, e.g. [5, 10, 25]; recall runs once with top_k at the largest. */
  ks: readonly number[];
  settings?: Settings;
  /** Folder under which the temporary store is made (and removed); default the system temp dir. */
  temporaryDirectory?: string;
  /** Keep each query's ranking in the report (for analysis and the bench). */
  includeQueries?: boolean;
  /**
   * Makes the store the dataset is loaded into: fresh, empty and not yet opened (runEval opens and
   * closes it; the caller removes what it made, e.g. a Postgres schema). Default: a temporary SQLite file.
   */
  createStore?: (context: { settings: Settings; now: () => Date }) => MemoryStore;
  /**
   * Load the memories without their `source` (session and turn), as memories imported or written by
   * hand carry none, so recall cannot lean on conversation context (`engram eval --no-source`).
   */
  ignoreSource?: boolean;
  /**
   * The embedder recall fuses full text with, as configured for real use (`engram eval` passes the
   * settings' one): the dataset's memories are embedded into the temporary store first, as
   * `engram reindex` would, and each question is embedded when it is recalled. Default: full text alone.
   */
  embedder?: Embedder;
}

/** What the embedder did in an evaluation that had one. */
export interface EvalEmbedding {
  model: string;
  dimensions: number;
  /** Memories given a vector, of `dataset.memories`. */
  embedded: number;
  /** Questions recalled on full text alone (for the ranking or the block): embedding them failed, or gave a vector of another length. */
  failedQuestions: number;
}

/** What `engram eval` reports. Recall and nDCG are means over the scored queries. */
export interface EvalReport {
  dataset: { memories: number; queries: number; skipped: number; scopes: number };
  /** Whether the memories were loaded without their `source` fields (`ignoreSource`). */
  ignoredSource: boolean;
  /** The embedder recall fused with, or null for full text alone. */
  embedding: EvalEmbedding | null;
  ks: number[];
  /** When recall ran: just after the newest memory's creation. */
  now: string;
  overall: MetricSummary;
  byTag: Record<string, MetricSummary>;
  /** One more pass per query at the settings' top_k, min_score and token budget: the `<memory_context>` block an agent would be given (its tokens as injection estimates them). */
  defaults: {
    topK: number;
    minScore: number;
    meanResults: number;
    /** Mean share of a query's relevant memories that made it into the block. */
    meanRecall: number;
    meanInjectedTokens: number;
    tokenCounting: 'memory-context';
  };
  latency: { p50Ms: number; p95Ms: number };
  skipped: EvalDataset['skipped'];
  /** Lines of the dataset left out, with why; the rest was scored. */
  invalidLines: EvalDataset['invalidLines'];
  warnings: string[];
  /** Each query's ranking, and the ids and estimated tokens of the block built at the settings. */
  queries?: Array<{
    id: string;
    tags: string[];
    relevant: string[];
    ranking: string[];
    injected: string[];
    injectedTokens: number;
  }>;
}

export const MAX_EVAL_K = 1_000;
const BATCH = 1_000;
const CLOCK_OFFSET_MS = 1_000;

/**
 * Loads a dataset into a fresh temporary SQLite store, recalls every query in its scope with the
 * clock set just after the newest memory, and scores the rankings. The store is removed after.
 */
export async function runEval(dataset: EvalDataset, options: RunEvalOptions): Promise<EvalReport> {
  const ks = checkKs(options.ks);
  const settings = options.settings ?? DEFAULT_SETTINGS;
  const nowMs = newestCreation(dataset) + CLOCK_OFFSET_MS;
  // The clock each recall runs at: a query's own `at` (when it was asked), else just after the newest memory.
  let clockMs = nowMs;
  const now = (): Date => new Date(clockMs);
  const directory = await mkdtemp(join(options.temporaryDirectory ?? tmpdir(), 'engram-eval-'));
  const store: MemoryStore =
    options.createStore?.({ settings, now }) ??
    new SqliteMemoryStore({
      path: join(directory, 'eval.db'),
      limits: settings.memory,
      now,
      fullText: {
        k1: settings.recall.fullTextK1,
        b: settings.recall.fullTextB,
        coverage: settings.recall.fullTextCoverage,
      },
    });
  try {
    await store.open();
    const memories = options.ignoreSource
      ? dataset.memories.map(({ source: _source, ...memory }) => memory)
      : dataset.memories;
    for (let start = 0; start < memories.length; start += BATCH) {
      await store.createMany(memories.slice(start, start + BATCH), { actor: 'eval' });
    }
    const { embedder } = options;
    let embedding: EvalEmbedding | null = null;
    if (embedder !== undefined) {
      if (store.vectors === undefined)
        throw new EngramError(
          'CONFIG_INVALID',
          'The evaluation store keeps no vectors, so an embedder cannot be measured on it.',
        );
      const { vectors } = store;
      const report = await reindexVectors({ vectors, embedder }, { batchSize: BATCH }).catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        throw new EngramError(
          isEngramError(error) ? error.code : 'EMBEDDING_FAILED',
          `Embedding the dataset's memories failed: ${message} (--no-embedder measures full text alone).`,
          { cause: error },
        );
      });
      embedding = { model: report.model, dimensions: report.dimensions, embedded: report.embedded, failedQuestions: 0 };
    }
    const engram = new Engram({ store, settings, now, actor: 'eval', ...(embedder && { embedder }) });
    const topK = ks.at(-1)!;
    const scored: Array<
      ScoredQuery & { id: string; relevantIds: string[]; injected: string[]; injectedTokens: number }
    > = [];
    const latencies: number[] = [];
    const defaultResults: number[] = [];
    const injectedTokens: number[] = [];
    const injectedRecall: number[] = [];
    for (const query of dataset.queries) {
      clockMs = query.at === undefined ? nowMs : Date.parse(query.at);
      const started = performance.now();
      const result = await engram.recall(query.query, {
        scopes: [query.scope],
        topK,
        minScore: 0,
        recordAccess: false,
      });
      latencies.push(performance.now() - started);
      // What an agent would be given at the settings: the real <memory_context> block, counted as injection counts it.
      const context = await engram.buildMemoryContext(query.query, {
        scopes: [query.scope],
        recordAccess: false,
        includeStaticPart: false,
      });
      // Both recalls embed the question; one that fell back to full text makes the question's figures full-text ones.
      if (embedding !== null && [...result.warnings, ...context.warnings].some(isEmbeddingFallback))
        embedding.failedQuestions += 1;
      scored.push({
        id: query.id,
        ranking: result.memories.map((entry) => entry.memory.id),
        relevant: new Set(query.relevant),
        relevantIds: query.relevant,
        tags: query.tags,
        injected: context.included.map((entry) => entry.memory.id),
        injectedTokens: context.tokens.block,
      });
      defaultResults.push(context.included.length);
      injectedTokens.push(context.tokens.block);
      injectedRecall.push(
        context.included.filter((entry) => query.relevant.includes(entry.memory.id)).length / query.relevant.length,
      );
    }
    clockMs = nowMs;
    const scopes = new Set(dataset.memories.map((memory) => memory.scope));
    return {
      dataset: {
        memories: dataset.memories.length,
        queries: dataset.queries.length,
        skipped: dataset.skipped.length,
        scopes: scopes.size,
      },
      ignoredSource: options.ignoreSource === true,
      embedding,
      ks,
      now: now().toISOString(),
      overall: summarizeMetrics(scored, ks),
      byTag: summarizeByTag(scored, ks),
      defaults: {
        topK: settings.recall.topK,
        minScore: settings.recall.minScore,
        meanResults: mean(defaultResults),
        meanRecall: mean(injectedRecall),
        meanInjectedTokens: mean(injectedTokens),
        tokenCounting: 'memory-context',
      },
      latency: { p50Ms: quantile(latencies, 0.5), p95Ms: quantile(latencies, 0.95) },
      skipped: dataset.skipped,
      invalidLines: dataset.invalidLines,
      warnings: dataset.warnings,
      ...(options.includeQueries && {
        queries: scored.map((query) => ({
          id: query.id,
          tags: [...(query.tags ?? [])],
          relevant: query.relevantIds,
          ranking: [...query.ranking],
          injected: query.injected,
          injectedTokens: query.injectedTokens,
        })),
      }),
    };
  } finally {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  }
}

/** A recall warning that says the question was ranked on full text alone though an embedder is set. */
function isEmbeddingFallback(warning: string): boolean {
  return warning === 'embedding-failed' || warning === 'vector-space-differs';
}

/** Checks and sorts the cut-offs: whole numbers from 1 to 1000, at least one, duplicates dropped. */
export function checkKs(ks: readonly number[]): number[] {
  if (!Array.isArray(ks) || ks.length === 0)
    throw new EngramError('INVALID_INPUT', 'Give at least one cut-off k, e.g. --k 5,10,25.');
  for (const k of ks) {
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_EVAL_K) {
      throw new EngramError('INVALID_INPUT', `Invalid k ${JSON.stringify(k)}: a whole number from 1 to ${MAX_EVAL_K}.`);
    }
  }
  return [...new Set(ks)].sort((a, b) => a - b);
}

function newestCreation(dataset: EvalDataset): number {
  let newest = Number.NEGATIVE_INFINITY;
  for (const memory of dataset.memories) {
    if (memory.createdAt !== undefined) newest = Math.max(newest, Date.parse(memory.createdAt));
  }
  // A dataset without dates is timeless: every memory is created at the same instant.
  return Number.isFinite(newest) ? newest : Date.now();
}

function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 1_000) / 1_000;
}
