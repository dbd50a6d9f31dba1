import type { WarningCode } from '../kernel/warnings.js';
import { EngramError, isEngramError } from '../kernel/errors.js';
import type { MemoryType } from '../memory/memory.js';
import { queryTerms } from './query-terms.js';
import { rankByRelevance, type RankedMemory } from './ranking.js';
import { applyRecallSignals, questionTime, withSignals } from './recall-signals.js';
import { newerBeforeOlder } from './recall-diversity.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import { withWordForms } from './word-forms.js';
import type { Embedder } from '../contracts/embedder.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import { fuseRankings, vectorCandidates, withComponents } from './rank-fusion.js';

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
  warnings: WarningCode[];
}

/** What recall reads from: the store, the settings and the clock. */
export interface RecallDependencies {
  store: MemoryStore;
  settings: Settings;
  now: () => Date;
  /** When set, full-text and vector rankings are fused (`embedding.fusion`); else full-text alone. */
  embedder?: Embedder | undefined;
}

/** How much larger than top_k the full-text candidate pool is before ranking (and its least size). */
const CANDIDATE_FACTOR = 8;
const MIN_CANDIDATES = 50;
/** How many of the vectors' best hits min_score does not cut (see recallMemories). */
const SPARED_BY_MEANING = 3;
/** How much larger the pool is when the question names a date. */
const DATED_POOL_FACTOR = 2;

/**
 * The read path: candidates from the store in the given scopes, full-text hits re-ordered by
 * conversation context (same session, adjacent turns), time (dates the question names, "when"
 * questions), a second hop and diversity (see recall-signals.ts), fused with vector hits when an
 * embedder is set, ranked by relevance × recency × importance, cut at top_k and min_score; hits are recorded.
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
  // Irregular forms join the search (at most 3 per word, within the store's 256 terms).
  const terms = withWordForms(queryTerms(query));
  const now = dependencies.now().toISOString();
  const time = questionTime(query, now, settings.recall);
  // A named date narrows what is relevant to fewer words: a larger pool lets its memories compete.
  const limit = Math.max(topK * CANDIDATE_FACTOR, MIN_CANDIDATES) * (time.dates.length > 0 ? DATED_POOL_FACTOR : 1);
  const found = await store.searchText({
    scopes,
    terms,
    match: 'any',
    limit,
    sufficientHits: topK,
    ...(options.types && { types: options.types }),
  });
  const hits = applyRecallSignals(found, { terms, topK, time, settings: settings.recall });
  // Fuse, never gate: vector hits join the full-text candidates; none are dropped for lack of a vector.
  // Weighted fusion that gives the vectors no weight is full text alone: the question is not embedded.
  const { embedding } = settings;
  const vectorSide =
    embedding.fusion === 'weighted' && embedding.fusionWeight === 0
      ? { hits: [], warnings: [] }
      : await vectorCandidates(dependencies, query, {
          scopes,
          limit,
          ...(options.types && { types: options.types }),
        });
  const fused = vectorSide.hits.length > 0 ? fuseRankings(hits, vectorSide.hits, embedding) : undefined;
  // The vectors' first few are not cut by min_score: a memory found by meaning alone holds at most
  // fusionWeight of the best relevance, under min_score once it is a few weeks old. Only the few: an
  // embedder ranks every memory, so sparing all its top_k would fill the block with whatever is least
  // far. The weakest vector hit (scaled to 0) holds no relevance and is never spared.
  const nearest = new Set(vectorSide.hits.slice(0, SPARED_BY_MEANING).map((hit) => hit.memory.id));
  // Of two hits that disagree, the newer goes first whatever their recency and importance.
  const ranked = newerBeforeOlder(
    rankByRelevance(fused ?? hits, {
      now,
      recencyBase: settings.recall.recencyBase,
      recencyFloor: settings.recall.recencyFloor,
    }),
    hits,
  )
    .filter((entry) => entry.parts.score >= minScore || (nearest.has(entry.memory.id) && entry.parts.relevance > 0))
    .slice(0, topK);
  const warnings = [...vectorSide.warnings];
  if (options.recordAccess !== false)
    warnings.push(
      ...(await recordHits(
        store,
        ranked.map((entry) => entry.memory.id),
        now,
      )),
    );
  // Amounts are shown relative to the best hit, as relevance is: relevance = ((own + context) × date × when + hop) × (1 − dup).
  const best = Math.max(0, ...hits.map((hit) => hit.relevance));
  return {
    query,
    terms,
    scopes,
    memories: withSignals(fused ? withComponents(ranked, fused) : ranked, hits, best),
    warnings,
  };
}

/**
 * Records that memories were recalled. Recall is a read: a store that cannot take the write right
 * now (busy with another writer past its timeout, read-only, full) costs the hit counts, never the
 * answer. Returns the warning to pass on, if any.
 */
export async function recordHits(store: MemoryStore, ids: readonly string[], now: string): Promise<WarningCode[]> {
  if (ids.length === 0) return [];
  try {
    await store.recordAccess([...new Set(ids)], now);
    return [];
  } catch (error) {
    if (isEngramError(error) && (error.code === 'STORE_ERROR' || error.code === 'STORE_CLOSED'))
      return ['hits-not-recorded'];
    throw error;
  }
}

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000) {
    throw new EngramError('INVALID_INPUT', `Invalid ${field} ${JSON.stringify(value)}: a whole number from 1 to 1000.`);
  }
  return value;
}
