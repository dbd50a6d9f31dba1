import { statSync } from 'node:fs';
import type { Engram } from '../../engram.js';
import { MEMORY_TYPES, type Memory, type MemoryType } from '../../memory/memory.js';
import type { Scope } from '../../memory/scope.js';

// The numbers behind the viewer's charts that the store's own counts do not give: how often
// memories are recalled, when they were made, and how much room the store takes.

/** How many memories the usage scan reads at most, newest first; beyond it the answer says it sampled. */
export const USAGE_SCAN_LIMIT = 20_000;
const SCAN_PAGE = 1_000;

/** Hit-count buckets: 0, 1, 2–4, 5–9, 10–49, 50 and more. */
export const HIT_BUCKETS = [
  { label: '0', min: 0, max: 0 },
  { label: '1', min: 1, max: 1 },
  { label: '2–4', min: 2, max: 4 },
  { label: '5–9', min: 5, max: 9 },
  { label: '10–49', min: 10, max: 49 },
  { label: '50+', min: 50, max: Number.POSITIVE_INFINITY },
] as const;

export interface UsageStats {
  /** Memories read: every one of the scopes, or the newest `USAGE_SCAN_LIMIT` when `sampled`. */
  scanned: number;
  sampled: boolean;
  hits: Array<{ label: string; count: number }>;
  /** Memories created per month (UTC, `YYYY-MM`), by type, oldest month first. */
  createdByMonth: Array<{ month: string; byType: Record<MemoryType, number> }>;
  /**
   * Memories in recall at the end of each month (for the current month: now), by type and by scope,
   * the last 24 months at most: created by then, not yet invalid, not yet archived (an archived
   * memory counts until its last change, when it was archived). Hard-deleted memories are gone.
   */
  inRecallByMonth: Array<{ month: string; byType: Record<MemoryType, number>; byScope: Record<string, number> }>;
  /** Bytes of name, description and content of the memories read. */
  textBytes: number;
  /** The store's files on disk (SQLite: the database and its write-ahead log); absent for a server database. */
  fileBytes?: number;
}

/** Reads the scopes' memories (archived and invalid too), newest first, in keyset pages, and counts them. */
export async function usageStats(
  engram: Engram,
  scopes: readonly Scope[],
  now: () => Date = () => new Date(),
): Promise<UsageStats> {
  const hits = HIT_BUCKETS.map((bucket) => ({ label: bucket.label, count: 0 }));
  const months = new Map<string, Record<MemoryType, number>>();
  const encoder = new TextEncoder();
  let scanned = 0;
  let textBytes = 0;
  let sampled = false;
  let before: string | undefined;
  let skip = 0;
  const spans: Array<{ type: MemoryType; scope: string; from: number; until: number }> = [];
  for (;;) {
    const page: Memory[] = await engram.list({
      scopes,
      archived: 'include',
      invalid: 'include',
      limit: SCAN_PAGE,
      ...(before !== undefined && { updatedBefore: before, offset: skip }),
    });
    for (const memory of page) {
      const bucket = HIT_BUCKETS.findIndex((range) => memory.hitCount >= range.min && memory.hitCount <= range.max);
      hits[bucket === -1 ? 0 : bucket]!.count += 1;
      const month = memory.createdAt.slice(0, 7);
      let byType = months.get(month);
      if (!byType) {
        byType = Object.fromEntries(MEMORY_TYPES.map((type) => [type, 0])) as Record<MemoryType, number>;
        months.set(month, byType);
      }
      byType[memory.type] += 1;
      spans.push({ type: memory.type, scope: memory.scope, ...recallSpan(memory) });
      textBytes += encoder.encode(memory.name + memory.description + memory.content).length;
    }
    scanned += page.length;
    if (page.length < SCAN_PAGE) break;
    if (scanned >= USAGE_SCAN_LIMIT) {
      sampled = true;
      break;
    }
    const next = nextKeyset(page, before === undefined ? undefined : { before, skip });
    before = next.before;
    skip = next.skip;
  }
  const fileBytes = storeFileBytes(engram);
  return {
    scanned,
    sampled,
    hits,
    createdByMonth: [...months.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([month, byType]) => ({ month, byType })),
    inRecallByMonth: inRecallByMonth(spans, now()),
    textBytes,
    ...(fileBytes !== undefined && { fileBytes }),
  };
}

const MONTHS_SHOWN = 24;

/** When a memory was in recall: from its creation until it was invalidated or archived (epoch ms). */
function recallSpan(memory: Memory): { from: number; until: number } {
  const ends = [
    memory.invalidAt ? Date.parse(memory.invalidAt) : Number.POSITIVE_INFINITY,
    memory.archived ? Date.parse(memory.updatedAt) : Number.POSITIVE_INFINITY,
  ];
  return { from: Date.parse(memory.createdAt), until: Math.min(...ends) };
}

/** The count in recall at each month's end, from the first month a memory was made (or 24 months back) to now. */
export function inRecallByMonth(
  spans: ReadonlyArray<{ type: MemoryType; scope: string; from: number; until: number }>,
  now: Date,
): UsageStats['inRecallByMonth'] {
  const first = Math.min(...spans.map((span) => span.from).filter(Number.isFinite));
  if (!Number.isFinite(first)) return [];
  const start = new Date(first);
  let index = Math.max(
    start.getUTCFullYear() * 12 + start.getUTCMonth(),
    now.getUTCFullYear() * 12 + now.getUTCMonth() - (MONTHS_SHOWN - 1),
  );
  const last = now.getUTCFullYear() * 12 + now.getUTCMonth();
  const months: UsageStats['inRecallByMonth'] = [];
  for (; index <= last; index += 1) {
    const monthStart = Date.UTC(Math.floor(index / 12), index % 12, 1);
    const end = index === last ? now.getTime() : Date.UTC(Math.floor((index + 1) / 12), (index + 1) % 12, 1);
    const byType = Object.fromEntries(MEMORY_TYPES.map((type) => [type, 0])) as Record<MemoryType, number>;
    const byScope: Record<string, number> = {};
    for (const span of spans) {
      if (!(span.from < end && span.until >= end)) continue;
      byType[span.type] += 1;
      byScope[span.scope] = (byScope[span.scope] ?? 0) + 1;
    }
    months.push({ month: new Date(monthStart).toISOString().slice(0, 7), byType, byScope });
  }
  return months;
}

/**
 * The keyset after a page listed newest first: memories updated before the last one's instant
 * plus one millisecond, skipping those of that instant already seen (ties keep the store's order).
 */
export function nextKeyset(
  page: readonly Memory[],
  previous: { before: string; skip: number } | undefined,
): { before: string; skip: number } {
  const last = page[page.length - 1]!;
  const at = Date.parse(last.updatedAt);
  let trailing = 0;
  for (let index = page.length - 1; index >= 0 && Date.parse(page[index]!.updatedAt) === at; index -= 1) trailing += 1;
  const before = new Date(at + 1).toISOString();
  const sameInstant = previous !== undefined && previous.before === before;
  return { before, skip: trailing === page.length && sameInstant ? previous.skip + trailing : trailing };
}

function storeFileBytes(engram: Engram): number | undefined {
  const { backend, location } = engram.storage.info();
  if (backend !== 'sqlite' || location === ':memory:' || location === '') return undefined;
  let total = 0;
  for (const path of [location, `${location}-wal`]) {
    try {
      total += statSync(path).size;
    } catch {
      // No write-ahead log right now (or no file): nothing to count.
    }
  }
  return total;
}
