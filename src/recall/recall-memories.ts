import { EngramError, isEngramError } from '../core/errors.js';
import type { MemoryType } from '../core/memory.js';
import { queryTerms } from '../core/query-terms.js';
import { rankByRelevance, type RankedMemory } from '../core/ranking.js';
import type { Scope } from '../core/scope.js';
import type { Settings } from '../core/settings.js';
import type { Embedder } from '../embedding/embedder.js';
import type { MemoryStore } from '../store/memory-store.js';
import { fuseByReciprocalRank, vectorCandidates, withComponents } from './rank-fusion.js';

export interface RecallOptions {
  scopes?: readonly Scope[];
  types?: readonly MemoryType[];
  topK?: number;
  minScore?: number;
  /** Update hit count and last accessed of what is returned (default true). */
  recordAccess?: boolean;
}

export interface RecallResult {
  query: string;
  terms: string[];
  scopes: Scope[];
  memories: RankedMemory[];
  warnings: string[];
}

/** What recall reads from: the store, the settings and the clock. */
export interface RecallDependencies {
  store: MemoryStore;
  settings: Settings;
  now: () => Date;
  /** When set, full-text and vector rankings are fused (reciprocal rank fusion); else full-text alone. */
  embedder?: Embedder | undefined;
}

/** How much larger than top_k the full-text candidate pool is before ranking. */
const CANDIDATE_FACTOR = 8;

/**
 * The read path: candidates from the store in the given scopes, ranked by relevance × recency ×
 * importance, cut at top_k and min_score; hits are recorded.
 */
export async function recallMemories(
  dependencies: RecallDependencies,
  query: string,
  scopes: Scope[],
  options: RecallOptions = {},
): Promise<RecallResult> {
  if (typeof query !== 'string') throw new EngramError('INVALID_INPUT', 'A recall query is a string.');
  const { store, settings } = dependencies;
  const topK = positiveInteger(options.topK ?? settings.recall.topK, 'topK');
  const minScore = options.minScore ?? settings.recall.minScore;
  if (typeof minScore !== 'number' || !Number.isFinite(minScore) || minScore < 0 || minScore > 1) {
    throw new EngramError('INVALID_INPUT', `Invalid minScore ${JSON.stringify(minScore)}: a number from 0 to 1.`);
  }
  const terms = queryTerms(query);
  const limit = Math.max(topK * CANDIDATE_FACTOR, 50);
  const hits = await store.searchText({
    scopes,
    terms,
    match: 'any',
    limit,
    sufficientHits: topK,
    ...(options.types && { types: options.types }),
  });
  // Fuse, never gate: vector hits join the full-text candidates; none are dropped for lack of a vector.
  const vectorSide = await vectorCandidates(dependencies, query, { scopes, limit, ...(options.types && { types: options.types }) });
  const fused = vectorSide.hits.length > 0 ? fuseByReciprocalRank(hits, vectorSide.hits, settings.embedding.fusionK) : undefined;
  const now = dependencies.now().toISOString();
  const ranked = rankByRelevance(fused ?? hits, { now, recencyBase: settings.recall.recencyBase, recencyFloor: settings.recall.recencyFloor })
    .filter((entry) => entry.parts.score >= minScore)
    .slice(0, topK);
  const warnings = [...vectorSide.warnings];
  if (options.recordAccess !== false) warnings.push(...(await recordHits(store, ranked.map((entry) => entry.memory.id), now)));
  return { query, terms, scopes, memories: fused ? withComponents(ranked, fused) : ranked, warnings };
}

/**
 * Records that memories were recalled. Recall is a read: a store that cannot take the write right
 * now (busy with another writer past its timeout, read-only, full) costs the hit counts, never the
 * answer. Returns the warning to pass on, if any.
 */
export async function recordHits(store: MemoryStore, ids: readonly string[], now: string): Promise<string[]> {
  if (ids.length === 0) return [];
  try {
    await store.recordAccess([...new Set(ids)], now);
    return [];
  } catch (error) {
    if (isEngramError(error) && (error.code === 'STORE_ERROR' || error.code === 'STORE_CLOSED')) return ['hits-not-recorded'];
    throw error;
  }
}

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000) {
    throw new EngramError('INVALID_INPUT', `Invalid ${field} ${JSON.stringify(value)}: a whole number from 1 to 1000.`);
  }
  return value;
}
