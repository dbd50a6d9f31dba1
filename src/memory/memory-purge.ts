import type { Memory } from './memory.js';
import type { HistoryEntry } from './memory-history.js';

// What a purge is and reports, shared by every backend and every surface: the places a memory's
// text may have been copied to, what the purge did in each, and the rules that find copies outside
// the memory's own rows (job payloads, checkpoints) so SQLite and Postgres remove the same ones.

/**
 * A place a purged memory's text came from or went to:
 * - `memory`, `history`, `full-text-index`, `vectors`: its own rows and what is derived from them;
 * - `extraction-jobs`: queued conversation spans that quote it or that it was extracted from;
 * - checkpoints that quoted it, by family: `extraction-progress` (a job's kept model answers),
 *   `recent-extractions` (the viewer's Activity), `dream-change-sets`, `explicit-statements`, or
 *   `checkpoint:<family>` for another;
 * - `freed-space` and `write-ahead-log`: bytes the database freed or logged, which keep a copy until
 *   they are overwritten (SQLite: vacuum and a truncating checkpoint; Postgres: VACUUM FULL, CHECKPOINT);
 * - outside the store: `hook-spool` (queued Claude Code events of the source session) and
 *   `source-transcript` (the agent's own record of the conversation, which engram never edits).
 */
export type PurgePlaceName = string;

/** What a purge did in one place. */
export interface PurgePlace {
  place: PurgePlaceName;
  /** Copies removed or rewritten there (rows, entries, records). */
  removed: number;
  /** True only when no copy is left there; when false, `reason` says what may remain and what would clear it. */
  cleared: boolean;
  reason?: string;
}

/** What a purge removed, place by place, and whether any copy may remain anywhere it looked. */
export interface PurgeReport {
  /** The `purge` history entry: actor and time, no content (before and after are null). */
  changeId: string;
  /** Whether the memory itself still existed (the history of a deleted memory can be purged too). */
  memoryRemoved: boolean;
  /** History entries removed (every earlier entry of the memory: each held a copy of its content). */
  historyEntriesRemoved: number;
  /** Jobs removed: their payload quoted the memory, or held the conversation it came from. */
  jobsRemoved: number;
  /** True only when every place was cleared (`places`): "no copy is left" may be said only then. */
  copiesCleared: boolean;
  /** Every place looked at, in the order it was cleared. */
  places: PurgePlace[];
}

/** The conversation spans a memory came from, as jobs of one queue: keys starting with `keyPrefix`. */
export interface PurgeJobSource {
  queue: string;
  keyPrefix: string;
  /** A job of this source that has not finished is removed only when its payload quotes one of these (the turn's id). */
  quotes: readonly string[];
}

/** What a caller that knows more than the store adds to a purge (Engram.purge sets it). */
export interface PurgeOptions {
  /**
   * Jobs holding the conversation the memory was extracted from: every finished (done or failed)
   * job of a source, and an unfinished one that quotes its turn. Jobs quoting the memory's id or
   * text go whatever this says.
   */
  jobSources?: readonly PurgeJobSource[];
  /** Checkpoints named `<prefix><job key>` of each job removed go with it (a job's progress). */
  jobCheckpointPrefixes?: readonly string[];
}

/** Texts shorter than this are too common to mark a job as quoting the memory (a name like "Deploy"). */
const MIN_QUOTED_CHARS = 16;

/** The states a memory was in: its current one and every before and after of its history. */
export function purgedStates(current: Memory | undefined, history: readonly HistoryEntry[]): Memory[] {
  const states: Memory[] = [];
  if (current) states.push(current);
  for (const entry of history) {
    if (entry.before) states.push(entry.before);
    if (entry.after) states.push(entry.after);
  }
  return states;
}

/**
 * The strings whose presence in a job payload or a checkpoint means it holds the memory: its id, and
 * each distinct name, description and content it ever had, raw and as they read inside JSON text.
 */
export function purgeNeedles(
  memoryId: string,
  current: Memory | undefined,
  history: readonly HistoryEntry[],
): string[] {
  const needles = new Set<string>([memoryId]);
  for (const state of purgedStates(current, history)) {
    for (const text of [state.name, state.description, state.content]) {
      if (typeof text !== 'string' || text.trim().length < MIN_QUOTED_CHARS) continue;
      needles.add(text);
      needles.add(JSON.stringify(text).slice(1, -1));
    }
  }
  return [...needles];
}

// Checkpoint families whose place has a name of its own in the report.
const CHECKPOINT_PLACES: ReadonlyArray<[RegExp, PurgePlaceName]> = [
  [/^extraction-turn:/, 'extraction-progress'],
  [/^extraction-recent$/, 'recent-extractions'],
  [/^extraction-explicit:/, 'explicit-statements'],
  [/^change-sets?(?::|$)/, 'dream-change-sets'],
];

/** The report's place for a checkpoint: its family's name, else `checkpoint:<name up to its first ':'>`. */
export function checkpointPlace(name: string): PurgePlaceName {
  for (const [pattern, place] of CHECKPOINT_PLACES) if (pattern.test(name)) return place;
  return `checkpoint:${name.split(':')[0]!.slice(0, 60)}`;
}

const REMOVE = Symbol('remove');

/**
 * A checkpoint's value without what quotes a purged memory, whatever the record's format: in a JSON
 * value, an array item or an object member that names the memory's id or holds one of its texts is
 * removed (a recent run that wrote it, a change set's id list, a kept model answer), and an object
 * whose `id` is the memory's goes whole. Returns the new value, null when nothing of it is left
 * (delete it), or undefined when the value is not JSON (it cannot be rewritten: report it).
 */
export function scrubCheckpointValue(
  value: string,
  memoryId: string,
  needles: readonly string[],
): string | null | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  const quotes = (text: string): boolean => text === memoryId || needles.some((needle) => text.includes(needle));
  const scrub = (node: unknown): unknown => {
    if (typeof node === 'string') return quotes(node) ? REMOVE : node;
    if (Array.isArray(node)) return node.map(scrub).filter((item) => item !== REMOVE);
    if (node !== null && typeof node === 'object') {
      if ((node as { id?: unknown }).id === memoryId) return REMOVE;
      const kept = Object.create(null) as Record<string, unknown>;
      for (const [key, inner] of Object.entries(node)) {
        if (quotes(key)) continue;
        const scrubbed = scrub(inner);
        if (scrubbed !== REMOVE) kept[key] = scrubbed;
      }
      return kept;
    }
    return node;
  };
  const scrubbed = scrub(parsed);
  return scrubbed === REMOVE ? null : JSON.stringify(scrubbed);
}

/** Whether a purge left a copy anywhere: every place must be cleared for `copiesCleared`. */
export function allCleared(places: readonly PurgePlace[]): boolean {
  return places.every((place) => place.cleared);
}

/**
 * One sentence on what a purge left, for a person: "no copy is left …" only when every place was
 * cleared, else each place that was not, with its reason.
 */
export function describePurgeResidue(report: Pick<PurgeReport, 'places'>): string {
  const left = report.places.filter((place) => !place.cleared);
  if (left.length === 0)
    return `no copy is left in the places it looked (${report.places.map((place) => place.place).join(', ')})`;
  return `NOT cleared: ${left.map((place) => `${place.place}: ${place.reason ?? 'a copy may remain'}`).join('; ')}`;
}

/** The report of a purge's rows, before its files are cleared: the memory's own places, then the copies found elsewhere. */
export function purgedRowsReport(input: {
  changeId: string;
  memoryRemoved: boolean;
  historyEntriesRemoved: number;
  vectorsRemoved: number;
  copies: { jobsRemoved: number; places: PurgePlace[] };
}): Omit<PurgeReport, 'copiesCleared'> {
  const own = input.memoryRemoved ? 1 : 0;
  return {
    changeId: input.changeId,
    memoryRemoved: input.memoryRemoved,
    historyEntriesRemoved: input.historyEntriesRemoved,
    jobsRemoved: input.copies.jobsRemoved,
    places: [
      { place: 'memory', removed: own, cleared: true },
      { place: 'history', removed: input.historyEntriesRemoved, cleared: true },
      { place: 'full-text-index', removed: own, cleared: true },
      { place: 'vectors', removed: input.vectorsRemoved, cleared: true },
      ...input.copies.places,
    ],
  };
}

/** Counts what a purge did per place: `removed` for each copy cleared; one not cleared marks the place, with why. */
export function placeCounter(): {
  count(place: string, cleared: boolean, reason?: string): void;
  places(): PurgePlace[];
} {
  const places = new Map<string, PurgePlace>();
  return {
    count(place, cleared, reason) {
      const entry = places.get(place) ?? { place, removed: 0, cleared: true };
      if (cleared) entry.removed += 1;
      else Object.assign(entry, { cleared: false, reason });
      places.set(place, entry);
    },
    places: () => [...places.values()],
  };
}
