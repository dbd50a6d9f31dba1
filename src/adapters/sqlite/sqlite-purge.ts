import {
  checkpointPlace,
  placeCounter,
  scrubCheckpointValue,
  type PurgeOptions,
  type PurgePlace,
} from '../../memory/memory-purge.js';
import type { SqliteStatement } from './sqlite-driver.js';

/**
 * The copies of a purged memory outside its own rows, removed inside the purge's transaction: jobs
 * whose payload quotes it or holds the conversation it came from (with their progress checkpoints),
 * and checkpoints that quote it (rewritten without what quotes it, see scrubCheckpointValue).
 */
export function removeSqliteCopies(
  statement: (sql: string) => SqliteStatement,
  input: { memoryId: string; needles: readonly string[]; options: PurgeOptions; now: number },
): { jobsRemoved: number; places: PurgePlace[] } {
  const removedJobs = new Map<string, string>();
  for (const needle of input.needles) {
    const rows = statement('SELECT id, key FROM jobs WHERE instr(payload, ?) > 0').all(needle) as JobRow[];
    for (const row of rows) removedJobs.set(row.id, row.key);
  }
  for (const source of input.options.jobSources ?? []) {
    // substr, not LIKE: the prefix is taken literally (keys may hold % and _).
    const rows = statement(
      'SELECT id, key, state, payload FROM jobs WHERE queue = ? AND substr(key, 1, length(?)) = ?',
    ).all(source.queue, source.keyPrefix, source.keyPrefix) as Array<JobRow & { state: string; payload: string }>;
    for (const row of rows) {
      const finished = row.state === 'done' || row.state === 'failed';
      if (finished || source.quotes.some((quote) => row.payload.includes(quote))) removedJobs.set(row.id, row.key);
    }
  }
  for (const id of removedJobs.keys()) statement('DELETE FROM jobs WHERE id = ?').run(id);
  const { count, places } = placeCounter();
  for (const key of removedJobs.values())
    for (const prefix of input.options.jobCheckpointPrefixes ?? []) {
      if (statement('DELETE FROM checkpoints WHERE name = ?').run(`${prefix}${key}`).changes > 0)
        count(checkpointPlace(`${prefix}${key}`), true);
    }
  const quoting = new Map<string, string>();
  for (const needle of input.needles) {
    const rows = statement('SELECT name, value FROM checkpoints WHERE instr(value, ?) > 0').all(needle) as Array<{
      name: string;
      value: string;
    }>;
    for (const row of rows) quoting.set(row.name, row.value);
  }
  for (const [name, value] of quoting) {
    const scrubbed = scrubCheckpointValue(value, input.memoryId, input.needles);
    if (scrubbed === undefined)
      count(checkpointPlace(name), false, `checkpoint "${name}" quotes the memory and is not JSON engram can rewrite`);
    else if (scrubbed === null) {
      statement('DELETE FROM checkpoints WHERE name = ?').run(name);
      count(checkpointPlace(name), true);
    } else {
      statement('UPDATE checkpoints SET value = ?, updated_at = ? WHERE name = ?').run(scrubbed, input.now, name);
      count(checkpointPlace(name), true);
    }
  }
  return {
    jobsRemoved: removedJobs.size,
    places: [{ place: 'jobs', removed: removedJobs.size, cleared: true }, ...places()],
  };
}

interface JobRow {
  id: string;
  key: string;
}
