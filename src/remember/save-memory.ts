import type { WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import { normalizeNewMemory, patchOfCheckedMemory, type Memory, type NewMemory } from '../memory/memory.js';
import {
  compareByCosine,
  compareLexically,
  lexicalProfile,
  mergePatch,
  type DuplicateMethod,
  type DuplicateVerdict,
  type LexicalProfile,
} from './near-duplicate.js';
import { porterStem } from '../recall/porter-stemmer.js';
import { queryTerms } from '../recall/query-terms.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import type { Embedder } from '../contracts/embedder.js';
import { memoryEmbeddingText, storeMemoryVectors, type VectorDependencies } from './memory-vectors.js';
import { hasDirection } from '../contracts/store-checks/vector-input.js';
import type { MemoryStore } from '../contracts/memory-store.js';

/** What the write path uses: the store, the settings, the clock, and an embedder when one is configured. */
export interface SaveDependencies {
  store: MemoryStore;
  settings: Settings;
  now: () => Date;
  embedder?: Embedder;
}

export interface SaveOptions {
  /** Recorded in history; a merge is recorded as `<actor> (dedupe)`. */
  actor: string;
  /** Update a near-duplicate in the same scope instead of adding another memory (default true). */
  dedupe?: boolean;
}

/** What a write did: created a memory, or merged the new statement into a near-duplicate. */
export interface SaveResult {
  memory: Memory;
  action: 'created' | 'merged';
  /** The memory the statement was merged into (the id of `memory`), when merged. */
  mergedInto?: string;
  /** The similarity that made it a duplicate, and how it was measured, when merged. */
  similarity?: number;
  method?: DuplicateMethod;
  /** The history entry of the merge (`engram undo` reverts it); null when the statement changed nothing. */
  changeId?: string | null;
  /**
   * `embedding-failed` or `vector-space-differs` (run `engram reindex`), or `vector-search-unavailable`
   * (an embedder over a store without vectors): dedupe compared words only. `write-lock-unavailable`:
   * the store has no locks, so dedupe checked and wrote without the cross-process lock.
   */
  warnings: WarningCode[];
}

/** A near-duplicate of a text found in one scope. */
export interface NearDuplicate {
  memory: Memory;
  verdict: DuplicateVerdict & { duplicate: true };
}

/** Suffix of the actor recorded for changes that dedupe makes. */
export const DEDUPE_ACTOR_SUFFIX = ' (dedupe)';

/**
 * The write path: validates a new memory, looks for a near-duplicate among the active memories of
 * its scope (cosine with an embedder, else words; see src/remember/near-duplicate.ts), and either
 * updates that memory or creates a new one. With an embedder, the vector computed here is stored
 * with the memory written. Writes that carry an id (imports) never dedupe. The check and the write
 * hold the store lock `memory-write:<scope>` (every process, every machine of a server store), so
 * concurrent saves of one statement make one memory; LOCK_TIMEOUT if it stays busy past `locks.waitMs`.
 * A store without the vectors role dedupes by words; one without locks checks and writes unlocked.
 * Either says so in `warnings`.
 */
export async function saveMemory(
  dependencies: SaveDependencies,
  input: NewMemory,
  options: SaveOptions,
): Promise<SaveResult> {
  const { store, settings } = dependencies;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new EngramError('INVALID_INPUT', 'A memory is an object with at least content.');
  }
  if (options.dedupe !== undefined && typeof options.dedupe !== 'boolean') {
    throw new EngramError('INVALID_INPUT', `Invalid dedupe ${JSON.stringify(options.dedupe)}: true or false.`);
  }
  // Validate everything before any search, so hostile input is refused the same way create refuses it.
  const checked = normalizeNewMemory(input, { now: new Date(0).toISOString(), id: 'unsaved', limits: settings.memory });
  const warnings: WarningCode[] = [];
  // Vectors take an embedder and a store that holds them.
  const vectorSide: VectorDependencies | undefined =
    dependencies.embedder && store.vectors ? { vectors: store.vectors, embedder: dependencies.embedder } : undefined;
  if (dependencies.embedder && !vectorSide) warnings.push('vector-search-unavailable');
  const embedder = vectorSide?.embedder;
  // The vector of the memory as it would be stored, so it is compared with stored vectors like for like.
  const embedded = embedder ? await embedOne(embedder, memoryEmbeddingText(checked), warnings) : undefined;
  const usable = embedded !== undefined && (await usableVectorSpace(vectorSide!, embedded));
  if (embedded && !usable) warnings.push('vector-space-differs');
  const vector = usable ? embedded : undefined;
  if (options.dedupe === false || input.id !== undefined) {
    const memory = await store.create(input, { actor: options.actor });
    if (vector) await storeVector(vectorSide!, memory, vector, warnings);
    return { memory, action: 'created', warnings };
  }
  // Check-then-write under the scope's store lock, so two processes saving one statement at once
  // make one memory. The embedding call stays outside: the lock is held only for store work.
  const checkThenWrite = async (): Promise<LockedWrite> => {
    const found = await findNearDuplicate(dependencies, { scope: checked.scope, content: checked.content }, vector);
    if (!found) {
      const memory = await store.create(input, { actor: options.actor });
      // Stored before the lock is let go, so the next writer's vector search already sees it.
      if (vector) await storeVector(vectorSide!, memory, vector, warnings);
      return { action: 'created', memory };
    }
    const merged = mergePatch(found.memory, {
      content: checked.content,
      ...(input.type !== undefined && { type: checked.type }),
      ...(input.name !== undefined && { name: checked.name }),
      ...(input.description !== undefined && { description: checked.description }),
      ...(input.importance !== undefined && { importance: checked.importance }),
    });
    // Drawn from the checked statement's own text: the store need not scan it again.
    const patch = patchOfCheckedMemory(merged, input, settings.memory);
    let memory = found.memory;
    let changeId: string | null = null;
    let needsVector = false;
    if (Object.keys(patch).length > 0) {
      memory = await store.update(found.memory.id, patch, { actor: dedupeActor(options.actor) });
      changeId = (await store.history(memory.id)).at(-1)?.id ?? null;
      // The store dropped the vector of the changed text: reuse ours if the text is the one embedded,
      // else embed the merged text once the lock is let go.
      const sameText = memoryEmbeddingText(memory) === memoryEmbeddingText(checked);
      if (vectorSide && sameText && vector) await storeVector(vectorSide, memory, vector, warnings);
      else needsVector = vectorSide !== undefined;
    }
    // Restating a fact is a use of it: aging must not archive a memory the user just repeated.
    const at = dependencies.now().toISOString();
    await store.recordAccess([memory.id], at);
    memory = { ...memory, hitCount: memory.hitCount + 1, lastAccessedAt: at };
    return { action: 'merged', memory, found, changeId, needsVector };
  };
  if (!store.locks) warnings.push('write-lock-unavailable');
  const outcome = store.locks
    ? await store.locks.hold(`memory-write:${checked.scope}`, checkThenWrite)
    : await checkThenWrite();
  if (outcome.action === 'created') return { memory: outcome.memory, action: 'created', warnings };
  if (outcome.needsVector) await storeVector(vectorSide!, outcome.memory, undefined, warnings);
  return {
    memory: outcome.memory,
    action: 'merged',
    mergedInto: outcome.memory.id,
    similarity: outcome.found.verdict.similarity,
    method: outcome.found.verdict.method,
    changeId: outcome.changeId,
    warnings,
  };
}

/** What the locked part of a save did. */
type LockedWrite =
  | { action: 'created'; memory: Memory }
  | { action: 'merged'; memory: Memory; found: NearDuplicate; changeId: string | null; needsVector: boolean };

/**
 * The closest active memory in `scope` that `content` nearly duplicates, or undefined. Candidates
 * come from the vector index when a query vector is given, else from full-text search in that scope.
 */
export async function findNearDuplicate(
  dependencies: Pick<SaveDependencies, 'store' | 'settings'>,
  target: { scope: Scope; content: string; excludeId?: string },
  vector?: Float32Array,
): Promise<NearDuplicate | undefined> {
  const { store, settings } = dependencies;
  const profile = lexicalProfile(target.content);
  const limit = settings.dedupe.candidateLimit;
  let best: NearDuplicate | undefined;
  const consider = (memory: Memory, verdict: DuplicateVerdict): void => {
    if (!verdict.duplicate || memory.id === target.excludeId) return;
    // The most similar wins; on a tie, the oldest, which other memories and files may point to.
    if (
      !best ||
      verdict.similarity > best.verdict.similarity ||
      (verdict.similarity === best.verdict.similarity && memory.createdAt < best.memory.createdAt)
    ) {
      best = { memory, verdict };
    }
  };
  if (vector && store.vectors) {
    const hits = await store.vectors.search({ scopes: [target.scope], vector, limit });
    for (const hit of hits)
      consider(
        hit.memory,
        compareByCosine(hit.similarity, profile, lexicalProfile(hit.memory.content), settings.dedupe.cosineThreshold),
      );
    if (best) return best;
  }
  // Fuse, never gate: a weak embedder must not hide a restatement that words alone recognise.
  // First the memories holding every word of the text (a repeat, or one that said more): an AND
  // query, cheap and exact; then those holding a few of its longest words (it said less).
  const searches = [
    { terms: queryTerms(target.content), match: 'all' as const },
    { terms: candidateTerms(target.content, profile, settings.dedupe.lexicalThreshold), match: 'any' as const },
  ];
  for (const search of searches) {
    const hits = await store.searchText({ scopes: [target.scope], ...search, limit });
    for (const hit of hits)
      consider(
        hit.memory,
        compareLexically(profile, lexicalProfile(hit.memory.content), settings.dedupe.lexicalThreshold),
      );
    if (best) return best;
  }
  return best;
}

/**
 * The words to search candidates by. A near-duplicate shares at least ⌈t·|A|⌉ of the text's |A|
 * content words, so it holds at least one of ANY |A| − ⌈t·|A|⌉ + 1 of them (pigeonhole): searching
 * only that many, the longest (rarer, so fewer postings), misses no near-duplicate that full-text
 * can match, at a fraction of the cost of the whole sentence as an OR query.
 */
export function candidateTerms(content: string, profile: LexicalProfile, threshold: number): string[] {
  const terms = queryTerms(content).filter((term) => profile.words.has(porterStem(term)));
  const needed = profile.words.size - Math.ceil(threshold * profile.words.size) + 1;
  if (terms.length < needed || needed < 1) return queryTerms(content);
  return [...terms].sort((a, b) => b.length - a.length || (a < b ? -1 : 1)).slice(0, needed);
}

/** The actor recorded for a change dedupe makes on behalf of `actor`. */
export function dedupeActor(actor: string): string {
  return `${actor.slice(0, 200 - DEDUPE_ACTOR_SUFFIX.length)}${DEDUPE_ACTOR_SUFFIX}`;
}

/** Embeds one text; a failing embedder degrades dedupe to words (with a warning) rather than failing the write. */
async function embedOne(embedder: Embedder, text: string, warnings: WarningCode[]): Promise<Float32Array | undefined> {
  try {
    const [vector] = await embedder.embed([text]);
    if (vector instanceof Float32Array && vector.length > 0 && hasDirection(vector)) return vector;
  } catch {
    // Reported below, like an unusable answer.
  }
  warnings.push('embedding-failed');
  return undefined;
}

/** Stores a written memory's vector (the one given, or a fresh one); best effort, since the write itself is done. */
async function storeVector(
  dependencies: VectorDependencies,
  memory: Memory,
  vector: Float32Array | undefined,
  warnings: WarningCode[],
): Promise<void> {
  try {
    if (vector) {
      await dependencies.vectors.put([{ id: memory.id, vector, updatedAt: memory.updatedAt }]);
      return;
    }
    const result = await storeMemoryVectors(dependencies, [memory]);
    for (const warning of result.warnings) if (!warnings.includes(warning)) warnings.push(warning);
  } catch {
    if (!warnings.includes('embedding-failed')) warnings.push('embedding-failed');
  }
}

/**
 * Whether vectors of this embedder may be searched and stored: the store's space is this model and
 * length (a fresh store takes it). A store in another space keeps it until `engram reindex` moves it.
 */
async function usableVectorSpace({ vectors, embedder }: VectorDependencies, vector: Float32Array): Promise<boolean> {
  const space = await vectors.space();
  if (space === undefined) {
    await vectors.setSpace({ model: embedder.model, dimensions: vector.length });
    return true;
  }
  return space.model === embedder.model && space.dimensions === vector.length;
}
