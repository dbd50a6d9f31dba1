import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A sortable unique id: `<prefix>_` + 10 characters of millisecond time + 12 random characters
 * (Crockford base32, lowercase). Sorting ids sorts them by creation time.
 */
export function createSortableId(prefix: string, now: number = Date.now()): string {
  let time = '';
  let value = now;
  for (let index = 0; index < 10; index += 1) {
    time = ALPHABET[value % 32]! + time;
    value = Math.floor(value / 32);
  }
  const random = randomBytes(12);
  let tail = '';
  for (const byte of random) tail += ALPHABET[byte % 32];
  return `${prefix}_${time}${tail}`;
}
