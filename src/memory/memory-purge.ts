import type { Memory } from './memory.js';
import type { HistoryEntry } from './memory-history.js';

// What a purge looks for outside the memory's own rows: the texts of every state the memory was in
// (current and in its history), as a job payload would quote them. Shared by every backend, so a
// purge removes the same jobs on SQLite and Postgres.

/** Texts shorter than this are too common to mark a job as quoting the memory (a name like "Deploy"). */
const MIN_QUOTED_CHARS = 16;

/**
 * The strings whose presence in a job payload means the payload holds the memory: its id, and each
 * distinct name, description and content it ever had, raw and as they read inside JSON text.
 */
export function purgeNeedles(
  memoryId: string,
  current: Memory | undefined,
  history: readonly HistoryEntry[],
): string[] {
  const states: Memory[] = [];
  if (current) states.push(current);
  for (const entry of history) {
    if (entry.before) states.push(entry.before);
    if (entry.after) states.push(entry.after);
  }
  const needles = new Set<string>([memoryId]);
  for (const state of states) {
    for (const text of [state.name, state.description, state.content]) {
      if (typeof text !== 'string' || text.trim().length < MIN_QUOTED_CHARS) continue;
      needles.add(text);
      needles.add(JSON.stringify(text).slice(1, -1));
    }
  }
  return [...needles];
}
