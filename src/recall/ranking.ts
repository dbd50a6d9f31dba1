import type { ContextSupport } from './conversation-context.js';
import type { Memory } from '../memory/memory.js';

export interface RankingOptions {
  now: string;
  recencyBase: number;
  /**
   * Least weight age can leave a memory, 0..1 (default 0: SPEC's plain product). With a floor, the
   * recency weight is floor + (1 − floor) × recency, so a memory untouched for a year still
   * competes on relevance instead of falling under min_score whatever it says.
   */
  recencyFloor?: number;
}

/** The parts of one recalled memory's score, shown by `recall --explain`. */
export interface ScoreParts {
  /** Full-text relevance relative to the best candidate of this query, 0..1. */
  relevance: number;
  /** recencyBase ^ days since last access (or creation). */
  recency: number;
  /** 0.5 + importance. */
  importanceWeight: number;
  /** relevance × (floor + (1 − floor) × recency) × importanceWeight ÷ 1.5, so the best possible score is 1. */
  score: number;
  /** With an embedder: the full-text side of the fused relevance (rank 1 = best; BM25 relative to the best hit). */
  text?: { rank: number; relevance: number };
  /** With an embedder: the vector side of the fused relevance (rank 1 = best; cosine similarity). */
  vector?: { rank: number; similarity: number };
  /**
   * When conversation context lent relevance: the memory's own full-text relevance and what the
   * best same-or-adjacent-turn and same-session hits added, relative to the best full-text hit
   * (without an embedder, relevance = own + neighbour.added + session.added, or own + sitting.added for a
   * memory without a source session, before the other signals).
   */
  context?: ContextSupport;
  /** What the other lexical signals did (absent when none applied): see `RecallSignals`. */
  signals?: RecallSignals;
}

/** What recall's lexical signals did to one memory, shown by `recall --explain`. */
export interface RecallSignals {
  /** Time-aware recall: relevance was multiplied by this because the memory was written within a date the question names. */
  date?: number;
  /** Time-aware recall: relevance was multiplied by this because the question asks when and the memory says when. */
  timeMention?: number;
  /** Second hop: relevance added (relative to the best full-text hit) and the searched words the memory holds. */
  secondHop?: { added: number; via: string[] };
  /** Diversity: the better hit this one nearly repeats and their token overlap; relevance was multiplied by 1 − similarity. */
  duplicate?: { of: string; similarity: number };
  /** Diversity: a newer hit with the same words says otherwise (a value, a negation, word order); it ranks first, this one follows. */
  disagrees?: { newer: string; similarity: number };
}

export interface RankedMemory {
  memory: Memory;
  parts: ScoreParts;
}

const MAX_IMPORTANCE_WEIGHT = 1.5;

/** Days since a memory was last accessed, or created if never accessed. */
export function daysSinceAccess(memory: Memory, now: string): number {
  return daysSince(memory, Date.parse(now));
}

function daysSince(memory: Memory, nowMs: number): number {
  const reference = Date.parse(memory.lastAccessedAt ?? memory.createdAt);
  return Math.max(0, (nowMs - reference) / 86_400_000);
}

/** Scores candidates by relevance × recency × importance (SPEC §3) and sorts them, best first. */
export function rankByRelevance(
  candidates: ReadonlyArray<{ memory: Memory; relevance: number }>,
  options: RankingOptions,
): RankedMemory[] {
  const best = Math.max(0, ...candidates.map((candidate) => candidate.relevance));
  const floor = options.recencyFloor ?? 0;
  const nowMs = Date.parse(options.now);
  const ranked = candidates.map(({ memory, relevance }) => {
    const normalized = best > 0 ? Math.max(0, relevance) / best : candidates.length > 0 ? 1 : 0;
    const recency = options.recencyBase ** daysSince(memory, nowMs);
    const importanceWeight = 0.5 + memory.importance;
    const score = (normalized * (floor + (1 - floor) * recency) * importanceWeight) / MAX_IMPORTANCE_WEIGHT;
    return { memory, parts: { relevance: normalized, recency, importanceWeight, score } };
  });
  return ranked.sort((a, b) => b.parts.score - a.parts.score || (a.memory.id < b.memory.id ? -1 : 1));
}
