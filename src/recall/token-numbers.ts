// Index tokens numbered once per process, so code that counts words over every candidate of every
// question (the second hop) counts in array slots, not by string keys. Bounded: when the numbers
// run past the limit, the numbering starts again and numbers given before are stale; the
// numbering a number belongs to says which.

const NUMBERS = new Map<string, number>();
const NUMBERS_LIMIT = 200_000;
let numbering = 0;

/** The current numbering, started again first when full; call it before numbering the tokens of one count. */
export function tokenNumbering(): number {
  if (NUMBERS.size >= NUMBERS_LIMIT) {
    NUMBERS.clear();
    numbering += 1;
  }
  return numbering;
}

/** The numbers of tokens, in the current numbering. */
export function tokenNumbers(tokens: readonly string[]): Int32Array {
  const numbers = new Int32Array(tokens.length);
  tokens.forEach((token, index) => {
    let number = NUMBERS.get(token);
    if (number === undefined) {
      number = NUMBERS.size;
      NUMBERS.set(token, number);
    }
    numbers[index] = number;
  });
  return numbers;
}

/**
 * One slot per numbered token, for one count at a time: `slots[n]` holds a value for token n only
 * while `marks[n] === pass`, so nothing is cleared between counts.
 */
export interface TokenSlots {
  marks: Uint32Array;
  slots: Int32Array;
  pass: number;
}

const scratch: TokenSlots = { marks: new Uint32Array(0), slots: new Int32Array(0), pass: 0 };

/** Slots for every token numbered so far, with a pass no slot is marked with yet. */
export function tokenSlots(): TokenSlots {
  if (scratch.marks.length < NUMBERS.size) {
    const size = Math.max(NUMBERS.size, 2 * scratch.marks.length, 1_024);
    scratch.marks = new Uint32Array(size);
    scratch.slots = new Int32Array(size);
  }
  if (scratch.pass === 0xffff_ffff) {
    scratch.marks.fill(0);
    scratch.pass = 0;
  }
  scratch.pass += 1;
  return scratch;
}
