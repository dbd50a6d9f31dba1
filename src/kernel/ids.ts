import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TAIL_LENGTH = 12;

// The last id of each prefix, its time and tail: ids made in the same millisecond count up from it
// instead of drawing a new random tail, so they still sort in the order they were made (history
// entries of one memory written in one millisecond keep their order when a store is copied by id).
const lastByPrefix = new Map<string, { time: number; tail: number[] }>();

// Random bytes drawn a few kilobytes at a time: one draw per id costs more than the rest of
// making it (a call into the system's random source each time), on every write.
const POOL_BYTES = 4_096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function randomTail(): number[] {
  if (poolOffset + TAIL_LENGTH > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  const digits = new Array<number>(TAIL_LENGTH);
  for (let index = 0; index < TAIL_LENGTH; index += 1) digits[index] = pool[poolOffset + index]! % 32;
  poolOffset += TAIL_LENGTH;
  return digits;
}

/**
 * A sortable unique id: `<prefix>_` + 10 characters of millisecond time + 12 random characters
 * (Crockford base32, lowercase). Sorting ids sorts them by creation time; within one millisecond
 * of one process, ids of one prefix sort in the order they were made.
 */
export function createSortableId(prefix: string, now: number = Date.now()): string {
  let time = '';
  let value = now;
  for (let index = 0; index < 10; index += 1) {
    time = ALPHABET[value % 32]! + time;
    value = Math.floor(value / 32);
  }
  const last = lastByPrefix.get(prefix);
  const next = last !== undefined && last.time === now ? increment(last.tail) : undefined;
  const digits = next ?? randomTail();
  lastByPrefix.set(prefix, { time: now, tail: digits });
  return `${prefix}_${time}${digits.map((digit) => ALPHABET[digit]).join('')}`;
}

/** The next base-32 number, or undefined when all digits are at their maximum (then a fresh random tail is drawn). */
function increment(digits: readonly number[]): number[] | undefined {
  const next = [...digits];
  for (let index = next.length - 1; index >= 0; index -= 1) {
    if (next[index]! < 31) {
      next[index] = next[index]! + 1;
      return next;
    }
    next[index] = 0;
  }
  return undefined;
}
