import type { WarningCode } from '../kernel/warnings.js';
import type { Memory, MemoryType } from '../memory/memory.js';
import type { RankedMemory } from './ranking.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import type { Embedder } from '../contracts/embedder.js';
import type { MemoryStore, TextHit } from '../contracts/memory-store.js';
import type { VectorHit } from '../contracts/memory-store-vectors.js';

/** Where a fused candidate stood in the full-text ranking: its rank (1 = best) and BM25 relative to the best hit. */
export interface TextComponent {
  rank: number;
  relevance: number;
}

/** Where a fused candidate stood in the vector ranking: its rank (1 = best) and cosine similarity. */
export interface VectorComponent {
  rank: number;
  similarity: number;
}

/** One candidate of the union of both rankings, with its fused relevance and the parts it came from. */
export interface FusedCandidate {
  memory: Memory;
  /** Fused relevance (not normalized; ranking divides by the best): see `fuseRankings`. */
  relevance: number;
  text?: TextComponent;
  vector?: VectorComponent;
}

/**
 * Fuses the full-text hits (re-ordered by recall's signals) with the vector hits by the settings'
 * method, `embedding.fusion`: the union of both, never gated by either.
 */
export function fuseRankings(
  textHits: readonly TextHit[],
  vectorHits: readonly VectorHit[],
  settings: Pick<Settings['embedding'], 'fusion' | 'fusionWeight' | 'fusionK'>,
): FusedCandidate[] {
  return settings.fusion === 'reciprocal-rank'
    ? fuseByReciprocalRank(textHits, vectorHits, settings.fusionK)
    : fuseByWeight(textHits, vectorHits, settings.fusionWeight);
}

/**
 * Weighted fusion, a convex combination of both scores (Bruch et al. 2023): full text's relevance
 * relative to its best hit × (1 − weight), plus the vector similarity scaled from the weakest to the
 * strongest vector hit of the query × weight. Full text's own spread is kept, so a weak embedder
 * (one whose similarities say little) moves a hit by at most `weight`: a memory more than
 * weight ÷ (1 − weight) ahead in full text stays ahead, and a memory full text does not find
 * ranks by meaning after the clear full-text matches. With reciprocal ranks instead, a hit both
 * rankings hold can outrank full text's best when the embedder disagrees (measured with averaged word
 * vectors: LoCoMo R@10 0.726 → 0.519; weighted at 0.15, 0.730; bench part `fusion`).
 */
export function fuseByWeight(
  textHits: readonly TextHit[],
  vectorHits: readonly VectorHit[],
  weight: number,
): FusedCandidate[] {
  let strongest = -Infinity;
  let weakest = Infinity;
  for (const hit of vectorHits) {
    strongest = Math.max(strongest, hit.similarity);
    weakest = Math.min(weakest, hit.similarity);
  }
  return fuseUnion(
    textHits,
    vectorHits,
    (relevance) => (1 - weight) * relevance,
    (similarity) => weight * (strongest > weakest ? (similarity - weakest) / (strongest - weakest) : 1),
  );
}

/**
 * Reciprocal rank fusion (Cormack et al. 2009): each ranking adds 1 / (k + rank) for the memories
 * it found. The union of both lists is kept (fuse, never gate: what full-text finds stays a
 * candidate however the embedder ranks it), and ranks rather than raw scores are fused because
 * BM25 and cosine live on scales that differ per query and per model.
 */
export function fuseByReciprocalRank(
  textHits: readonly TextHit[],
  vectorHits: readonly VectorHit[],
  k: number,
): FusedCandidate[] {
  return fuseUnion(
    textHits,
    vectorHits,
    (_relevance, rank) => 1 / (k + rank),
    (_similarity, rank) => 1 / (k + rank),
  );
}

/**
 * The union of both rankings, each candidate's relevance the sum of what each ranking that found
 * it gives: `textShare` of its full-text relevance relative to the best hit and its rank (1 = best),
 * `vectorShare` of its similarity and rank.
 */
function fuseUnion(
  textHits: readonly TextHit[],
  vectorHits: readonly VectorHit[],
  textShare: (relevance: number, rank: number) => number,
  vectorShare: (similarity: number, rank: number) => number,
): FusedCandidate[] {
  const fused = new Map<string, FusedCandidate>();
  const bestText = Math.max(0, ...textHits.map((hit) => hit.relevance));
  textHits.forEach((hit, index) => {
    const relevance = bestText > 0 ? Math.max(0, hit.relevance) / bestText : 1;
    fused.set(hit.memory.id, {
      memory: hit.memory,
      relevance: textShare(relevance, index + 1),
      text: { rank: index + 1, relevance },
    });
  });
  vectorHits.forEach((hit, index) => {
    const vector = { rank: index + 1, similarity: hit.similarity };
    const share = vectorShare(hit.similarity, index + 1);
    const found = fused.get(hit.memory.id);
    if (found) {
      found.relevance += share;
      found.vector = vector;
    } else {
      fused.set(hit.memory.id, { memory: hit.memory, relevance: share, vector });
    }
  });
  return [...fused.values()];
}

/** Copies each candidate's text and vector components into its ranked score parts (for `--explain`). */
export function withComponents(ranked: readonly RankedMemory[], candidates: readonly FusedCandidate[]): RankedMemory[] {
  const byId = new Map(candidates.map((candidate) => [candidate.memory.id, candidate]));
  return ranked.map((entry) => {
    const candidate = byId.get(entry.memory.id);
    if (!candidate) return entry;
    return {
      ...entry,
      parts: {
        ...entry.parts,
        ...(candidate.text && { text: candidate.text }),
        ...(candidate.vector && { vector: candidate.vector }),
      },
    };
  });
}

/** The vector side of recall: hits, or none with the warning that says why. */
export interface VectorCandidates {
  hits: VectorHit[];
  warnings: WarningCode[];
}

/**
 * Embeds the query and searches the store's vectors in the same scopes. Never throws for the
 * embedder's sake: a failed, slow or mismatched embedder leaves recall to full-text, with a warning;
 * so does a store without the vectors role, as if no embedder were configured.
 */
export async function vectorCandidates(
  dependencies: { store: MemoryStore; settings: Settings; embedder?: Embedder | undefined },
  query: string,
  search: { scopes: readonly Scope[]; limit: number; types?: readonly MemoryType[] },
): Promise<VectorCandidates> {
  const { embedder, settings } = dependencies;
  const { vectors } = dependencies.store;
  if (!embedder || !vectors) return { hits: [], warnings: ['vector-search-unavailable'] };
  if (query.trim() === '') return { hits: [], warnings: [] };
  const space = await vectors.space();
  if (space === undefined) return { hits: [], warnings: ['vectors-missing'] };
  if (
    space.model !== embedder.model ||
    (embedder.dimensions !== undefined && embedder.dimensions !== space.dimensions)
  ) {
    return { hits: [], warnings: ['vector-space-differs'] };
  }
  let vector: Float32Array | undefined;
  try {
    [vector] = await embedder.embed([query], { signal: AbortSignal.timeout(settings.embedding.queryTimeoutMs) });
  } catch {
    return { hits: [], warnings: ['embedding-failed'] };
  }
  if (!vector || vector.length !== space.dimensions) return { hits: [], warnings: ['vector-space-differs'] };
  const hits = await vectors.search({
    scopes: search.scopes,
    vector,
    limit: search.limit,
    ...(search.types && { types: search.types }),
  });
  return { hits, warnings: [] };
}
