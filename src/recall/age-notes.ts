import type { Memory } from '../memory/memory.js';
import { memoryAgeDays } from '../memory/memory.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';

/** How current a memory is: `fresh`, `aging` (older than `recall.ageNoteDays`) or `stale` (older than `recall.staleDays`). */
export type AgeState = 'fresh' | 'aging' | 'stale';

export interface AgeNoteOptions {
  /** Older than this many days, a memory carries its age; default `recall.ageNoteDays` (2). */
  ageNoteDays?: number;
  /** Older than this many days, a memory is stale; default `recall.staleDays` (30). */
  staleDays?: number;
}

/** What a reader (a model or a person) is told about a memory's age. */
export interface AgeNote {
  state: AgeState;
  /** Whole days since the memory was last written. */
  days: number;
  /** "3 days old", or undefined while fresh. */
  age?: string;
  /** "may be out of date" (aging) or "stale: may be out of date, verify before relying on it"; undefined while fresh. */
  note?: string;
}

/**
 * The age note of a memory (SPEC §3): age counts from the last write (updatedAt), so a fact that
 * was re-confirmed is young again. Pure: the caller passes `now`, so an injected clock decides.
 */
export function ageNote(memory: Pick<Memory, 'updatedAt'>, now: string, options: AgeNoteOptions = {}): AgeNote {
  const ageNoteDays = options.ageNoteDays ?? DEFAULT_SETTINGS.recall.ageNoteDays;
  const staleDays = options.staleDays ?? DEFAULT_SETTINGS.recall.staleDays;
  const exact = memoryAgeDays(memory, now);
  const days = Number.isFinite(exact) ? Math.floor(exact) : 0;
  if (!(exact > ageNoteDays) && !(exact > staleDays)) return { state: 'fresh', days };
  const age = `${formatDays(days)} old`;
  if (exact > staleDays)
    return { state: 'stale', days, age, note: 'stale: may be out of date, verify before relying on it' };
  return { state: 'aging', days, age, note: 'may be out of date' };
}

/** The note as one phrase, "3 days old, may be out of date", or '' while fresh. */
export function formatAgeNote(note: AgeNote): string {
  return note.age === undefined ? '' : `${note.age}, ${note.note}`;
}

/** "1 day", "12 days". */
export function formatDays(days: number): string {
  return days === 1 ? '1 day' : `${days} days`;
}
