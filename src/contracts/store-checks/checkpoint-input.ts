import { checkIdentifier, parseInstant, invalid, MAX_COORDINATION_NAME_LENGTH } from './input-primitives.js';

// The checks every backend applies to checkpoint names and values, once, so SQLite and Postgres
// refuse the same input with the same message and store only what they can give back.

export const MAX_CHECKPOINT_VALUE_BYTES = 256 * 1024;

/** Checks a checkpoint name (1-500 characters, no control characters). */
export function checkCheckpointName(name: unknown): string {
  return checkIdentifier(name, 'A checkpoint name', MAX_COORDINATION_NAME_LENGTH);
}

/** Checks a checkpoint value: a string of at most 256 KiB without NUL characters. */
export function checkCheckpointValue(value: unknown, field = 'A checkpoint value'): string {
  if (typeof value !== 'string') throw invalid(`${field} is a string.`);
  if (value.includes('\u0000')) throw invalid(`${field} may not contain NUL characters.`);
  if (Buffer.byteLength(value, 'utf8') > MAX_CHECKPOINT_VALUE_BYTES) {
    throw invalid(
      `${field} is larger than ${MAX_CHECKPOINT_VALUE_BYTES} bytes; store a cursor or an id, not the data.`,
    );
  }
  return value;
}

/** Checks the options of checkpoints.set: `expected` absent (plain set), null (set only if absent) or the value to replace. */
export function checkCheckpointOptions(options: unknown): { expected?: string | null } {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw invalid('checkpoints.set options are an object: { expected? }.');
  const expected = (options as { expected?: unknown }).expected;
  if (expected === undefined) return {};
  if (expected === null) return { expected: null };
  return { expected: checkCheckpointValue(expected, 'expected') };
}

/** Checks the filter of checkpoints.delete: a non-empty name prefix and an instant. */
export function checkCheckpointDeletion(filter: unknown): { prefix: string; updatedBefore: number } {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw invalid('checkpoints.delete takes { prefix, updatedBefore }.');
  const { prefix, updatedBefore } = filter as { prefix?: unknown; updatedBefore?: unknown };
  return { prefix: checkCheckpointName(prefix), updatedBefore: parseInstant(updatedBefore, 'updatedBefore') };
}
