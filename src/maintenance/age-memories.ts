import { EngramError, isEngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import { daysSinceAccess } from '../recall/ranking.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import type { MemoryStore } from '../contracts/memory-store.js';

/** What aging reads and writes: the store, the settings and the clock. */
export interface AgingDependencies {
  store: MemoryStore;
  settings: Settings;
  now: () => Date;
}

export interface AgingOptions {
  /** The scopes to age; undefined ages every scope in the store (what the service's daily run does). */
  scopes?: readonly Scope[];
  /** Report what would be archived and change nothing. */
  dryRun?: boolean;
  /** Recorded in history as `<actor> (aging)`; default `aging`. */
  actor?: string;
}

export interface AgingReport {
  dryRun: boolean;
  /** Memories last used before this instant are old: recalled, written (created, edited, merged) or restored. */
  cutoff: string;
  archiveAfterDays: number;
  archiveBelowImportance: number;
  /** The scopes looked at; `all` when every scope of the store was. */
  scopes: Scope[] | 'all';
  /** What aging archives (dryRun) or archived: old, unimportant, active memories. */
  candidates: Memory[];
  archived: string[];
  /** Candidates left alone because they changed between the scan and the archive (recalled, archived or deleted meanwhile). */
  skipped: string[];
}

const DAY_MS = 86_400_000;

/**
 * Aging (SPEC §3): archives active memories not used for more than `aging.archiveAfterDays` whose
 * importance is below `aging.archiveBelowImportance`. Used means recalled (last access) or written:
 * created, edited, merged into or restored (updatedAt), so a memory someone restored or corrected
 * last week is not archived again the next day. Archived memories are kept, left out of recall,
 * counted in stats, and `engram restore` (or undo of the history entry) brings them back.
 */
export async function ageMemories(dependencies: AgingDependencies, options: AgingOptions = {}): Promise<AgingReport> {
  const { store, settings } = dependencies;
  const { archiveAfterDays, archiveBelowImportance } = settings.aging;
  if (!Number.isFinite(archiveAfterDays) || archiveAfterDays < 0 || !Number.isFinite(archiveBelowImportance)) {
    throw new EngramError(
      'CONFIG_INVALID',
      'aging.archiveAfterDays and aging.archiveBelowImportance must be non-negative numbers.',
    );
  }
  const now = dependencies.now();
  const cutoff = new Date(now.getTime() - archiveAfterDays * DAY_MS).toISOString();
  const scopes = options.scopes === undefined ? Object.keys((await store.stats()).byScope) : [...options.scopes];
  const report: AgingReport = {
    dryRun: options.dryRun === true,
    cutoff,
    archiveAfterDays,
    archiveBelowImportance,
    scopes: options.scopes === undefined ? 'all' : scopes,
    candidates: [],
    archived: [],
    skipped: [],
  };
  if (scopes.length === 0) return report;
  report.candidates = await store.list({
    scopes,
    archived: 'exclude',
    invalid: 'exclude',
    accessedBefore: cutoff,
    updatedBefore: cutoff,
    importanceBelow: archiveBelowImportance,
    order: 'created-asc',
  });
  if (report.dryRun) return report;
  const change = {
    actor: `${(options.actor ?? 'aging').slice(0, 180)}${options.actor === undefined ? '' : ' (aging)'}`,
  };
  for (const candidate of report.candidates) {
    // Re-read just before archiving: a recall since the scan makes the memory young again.
    const current = await store.get(candidate.id);
    if (!current || !isAging(current, now.toISOString(), archiveAfterDays, archiveBelowImportance)) {
      report.skipped.push(candidate.id);
      continue;
    }
    try {
      await store.archive(candidate.id, change);
      report.archived.push(candidate.id);
    } catch (error) {
      if (isEngramError(error) && (error.code === 'CONFLICT' || error.code === 'NOT_FOUND'))
        report.skipped.push(candidate.id);
      else throw error;
    }
  }
  return report;
}

/** Whether aging would archive this memory now. */
export function isAging(
  memory: Memory,
  now: string,
  archiveAfterDays: number,
  archiveBelowImportance: number,
): boolean {
  const daysSinceWrite = (Date.parse(now) - Date.parse(memory.updatedAt)) / DAY_MS;
  return (
    !memory.archived &&
    memory.invalidAt === null &&
    memory.importance < archiveBelowImportance &&
    daysSinceAccess(memory, now) > archiveAfterDays &&
    daysSinceWrite > archiveAfterDays
  );
}
