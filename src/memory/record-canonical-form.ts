import { MEMORY_FIELD_ORDER, type Memory } from './memory.js';

// One text per stored record, the same on every backend: what `records.restore` compares to decide
// "identical" and what `engram migrate` hashes to prove two stores hold the same records. Objects
// are written with sorted keys, so the order a driver returns JSON keys in never matters.

/** A history entry as the canonical form sees it (the shape of `HistoryEntry`, without importing the store layer). */
export interface CanonicalHistoryEntry {
  id: string;
  memoryId: string;
  action: string;
  actor: string;
  at: string;
  before: Memory | null;
  after: Memory | null;
  undoOf: string | null;
}

/** A stored vector as the canonical form sees it. */
export interface CanonicalVectorEntry {
  id: string;
  vector: Float32Array;
  updatedAt?: string;
}

/** JSON with object keys sorted at every depth; `undefined` members are left out as JSON does. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

/** A memory's canonical text: every field in MEMORY_FIELD_ORDER. */
export function canonicalMemory(memory: Memory): string {
  return canonicalJson(MEMORY_FIELD_ORDER.map((field) => memory[field] ?? null));
}

/** A history entry's canonical text; the snapshots before and after are canonical memories. */
export function canonicalHistoryEntry(entry: CanonicalHistoryEntry): string {
  return canonicalJson([
    entry.id,
    entry.memoryId,
    entry.action,
    entry.actor,
    entry.at,
    entry.before === null ? null : JSON.parse(canonicalMemory(entry.before)),
    entry.after === null ? null : JSON.parse(canonicalMemory(entry.after)),
    entry.undoOf,
  ]);
}

/** A vector's canonical text: memory id, the memory version it was computed from, and its float32 bits (little-endian hex). */
export function canonicalVector(entry: CanonicalVectorEntry): string {
  return `${JSON.stringify([entry.id, entry.updatedAt ?? null])}${float32Hex(entry.vector)}`;
}

/** The exact bits of a float32 vector as hex, so -0 and 0, or two NaN payloads, are told apart. */
export function float32Hex(vector: Float32Array): string {
  const view = new DataView(vector.buffer, vector.byteOffset, vector.byteLength);
  let hex = '';
  for (let offset = 0; offset < vector.byteLength; offset += 4)
    hex += view.getUint32(offset, true).toString(16).padStart(8, '0');
  return hex;
}
