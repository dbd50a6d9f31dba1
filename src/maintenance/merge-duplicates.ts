import type { WarningCode } from '../kernel/warnings.js';
import { EngramError, isEngramError } from '../kernel/errors.js';
import { groupDuplicatePairs, lexicalDuplicatePairs, type DuplicatePair } from './duplicate-groups.js';
import type { Memory, MemoryPatch } from '../memory/memory.js';
import { compareByCosine, lexicalProfile, mergePatch, type DuplicateMethod } from '../remember/near-duplicate.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import type { Embedder } from '../contracts/embedder.js';
import { memoryEmbeddingText } from '../remember/memory-vectors.js';
import { dedupeActor } from '../remember/save-memory.js';
import type { MemoryStore } from '../contracts/memory-store.js';

/** What `engram dedupe` reads and writes. */
export interface DedupeDependencies {
  store: MemoryStore;
  settings: Settings;
  embedder?: Embedder;
}

export interface DedupeOptions {
  /** The scopes to look in; duplicates are only ever sought within one scope. */
  scopes: readonly Scope[];
  /** Merge the groups found (default false: a dry run that changes nothing). */
  apply?: boolean;
  /** Recorded in history as `<actor> (dedupe)`. */
  actor: string;
  /** Lexical threshold instead of `dedupe.lexicalThreshold`, 0..1. */
  lexicalThreshold?: number;
}

/** One group found: the memory kept, the near-duplicates folded into it, and the update the keeper gets. */
export interface DedupeGroupReport {
  scope: Scope;
  keeper: Memory;
  duplicates: Array<{ memory: Memory; similarity: number; method: DuplicateMethod }>;
  patch: MemoryPatch;
}

/** One change an applied dedupe made; `engram undo <changeId>` reverts it (latest first). */
export interface DedupeChange {
  memoryId: string;
  changeId: string;
  action: 'update' | 'invalidate';
}

export interface DedupeReport {
  applied: boolean;
  scopes: Scope[];
  groups: DedupeGroupReport[];
  /** How many memories were (or would be) folded into a keeper. */
  merged: number;
  changes: DedupeChange[];
  warnings: WarningCode[];
}

// Vector candidates sought per memory; near-duplicates of one memory are few.
const VECTOR_NEIGHBOURS = 10;

/**
 * Finds groups of near-duplicates among the active memories of each scope and, with `apply`,
 * merges each group: the keeper (the oldest; more hits on a tie) is updated as if the others had
 * been written to it in order (newest statement, highest importance), and each other member is
 * invalidated with `supersededBy` = the keeper, so it stays in history, linked to what replaced it.
 * Every change is a history entry that `engram undo` reverts.
 */
export async function dedupeMemories(dependencies: DedupeDependencies, options: DedupeOptions): Promise<DedupeReport> {
  const { store, settings } = dependencies;
  const threshold = options.lexicalThreshold ?? settings.dedupe.lexicalThreshold;
  if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold <= 0 || threshold > 1) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid threshold ${JSON.stringify(threshold)}: a number above 0, at most 1.`,
    );
  }
  const warnings: WarningCode[] = [];
  const report: DedupeReport = {
    applied: options.apply === true,
    scopes: [...options.scopes],
    groups: [],
    merged: 0,
    changes: [],
    warnings,
  };
  for (const scope of new Set(options.scopes)) {
    const memories = await store.list({
      scopes: [scope],
      archived: 'exclude',
      invalid: 'exclude',
      order: 'created-asc',
    });
    const pairs = lexicalDuplicatePairs(memories, threshold);
    pairs.push(...(await vectorDuplicatePairs(dependencies, scope, memories, warnings)));
    for (const group of groupDuplicatePairs(memories, pairs)) {
      let merged: Memory = group.keeper;
      for (const { memory } of group.duplicates)
        merged = { ...merged, ...mergePatch(merged, { content: memory.content, importance: memory.importance }) };
      report.groups.push({
        scope,
        keeper: group.keeper,
        duplicates: group.duplicates.map(({ memory, verdict }) => ({
          memory,
          similarity: verdict.similarity,
          method: verdict.method,
        })),
        patch: changedFields(group.keeper, merged),
      });
      report.merged += group.duplicates.length;
    }
  }
  if (options.apply === true) {
    const change = { actor: dedupeActor(options.actor) };
    for (const group of report.groups) {
      if (Object.keys(group.patch).length > 0) {
        await store.update(group.keeper.id, group.patch, change);
        report.changes.push({
          memoryId: group.keeper.id,
          changeId: await lastChangeId(store, group.keeper.id),
          action: 'update',
        });
      }
      for (const { memory } of group.duplicates) {
        try {
          await store.invalidate(memory.id, { supersededBy: group.keeper.id }, change);
        } catch (error) {
          // Invalidated or deleted by someone else since the scan: nothing left to merge.
          if (isEngramError(error) && (error.code === 'CONFLICT' || error.code === 'NOT_FOUND')) continue;
          throw error;
        }
        report.changes.push({
          memoryId: memory.id,
          changeId: await lastChangeId(store, memory.id),
          action: 'invalidate',
        });
      }
    }
  }
  return report;
}

/**
 * Near-duplicate pairs by cosine, when an embedder is configured and the store's vectors are in its
 * space (a dry run must not change the store, so the space is never set here). A failing embedder,
 * or a store without vectors, leaves words alone to decide, with a warning.
 */
async function vectorDuplicatePairs(
  dependencies: DedupeDependencies,
  scope: Scope,
  memories: readonly Memory[],
  warnings: WarningCode[],
): Promise<DuplicatePair[]> {
  const { embedder, settings } = dependencies;
  const { vectors: index } = dependencies.store;
  if (!embedder || memories.length < 2) return [];
  if (!index) {
    if (!warnings.includes('vector-search-unavailable')) warnings.push('vector-search-unavailable');
    return [];
  }
  const space = await index.space();
  if (!space || space.model !== embedder.model) {
    if (!warnings.includes('vector-space-differs')) warnings.push('vector-space-differs');
    return [];
  }
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embed(memories.map(memoryEmbeddingText));
  } catch {
    if (!warnings.includes('embedding-failed')) warnings.push('embedding-failed');
    return [];
  }
  const byId = new Map(memories.map((memory, position) => [memory.id, position]));
  const pairs: DuplicatePair[] = [];
  for (const [position, memory] of memories.entries()) {
    const vector = vectors[position];
    if (!vector || vector.length !== space.dimensions) continue;
    const hits = await index.search({ scopes: [scope], vector, limit: VECTOR_NEIGHBOURS });
    for (const hit of hits) {
      const other = byId.get(hit.memory.id);
      // Each unordered pair once: only neighbours listed before this memory.
      if (other === undefined || other >= position) continue;
      const verdict = compareByCosine(
        hit.similarity,
        lexicalProfile(memories[other]!.content),
        lexicalProfile(memory.content),
        settings.dedupe.cosineThreshold,
      );
      if (verdict.duplicate) pairs.push({ a: memories[other]!, b: memory, verdict });
    }
  }
  return pairs;
}

function changedFields(before: Memory, after: Memory): MemoryPatch {
  const patch: MemoryPatch = {};
  if (after.content !== before.content) patch.content = after.content;
  if (after.importance !== before.importance) patch.importance = after.importance;
  if (after.description !== before.description) patch.description = after.description;
  return patch;
}

async function lastChangeId(store: MemoryStore, memoryId: string): Promise<string> {
  return (await store.history(memoryId)).at(-1)?.id ?? '';
}
