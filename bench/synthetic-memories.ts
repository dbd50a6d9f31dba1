import type { NewMemory } from '../src/memory/memory.js';
import { MEMORY_TYPES } from '../src/memory/memory.js';

/** A small seeded PRNG (mulberry32) so every bench run sees the same data. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const SYLLABLES = 'ka lo mi ra te su no vi pe da zo ri an el or us in ta be go fu ly qu ex ni sa mo ke'.split(' ');
const FILLER = 'the user prefers to when we use and for with on in of a that is our this project team'.split(' ');

/** A vocabulary of pseudo-words; drawn with a Zipf-like skew so some words are common, most rare. */
export function makeVocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) {
    const length = 2 + Math.floor(random() * 3);
    let word = '';
    for (let index = 0; index < length; index += 1) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    words.add(word);
  }
  return [...words];
}

export function pickZipf(vocabulary: readonly string[], random: () => number): string {
  const index = Math.floor(vocabulary.length * random() ** 2.5);
  return vocabulary[Math.min(index, vocabulary.length - 1)]!;
}

/** Sentences of 12-30 words mixing filler and vocabulary, in `scopeCount` project scopes plus global. */
export function makeMemories(
  count: number,
  options: { seed: number; scopeCount: number; vocabulary: readonly string[] },
): NewMemory[] {
  const random = seededRandom(options.seed);
  const memories: NewMemory[] = [];
  for (let index = 0; index < count; index += 1) {
    const length = 12 + Math.floor(random() * 18);
    const words: string[] = [];
    for (let position = 0; position < length; position += 1) {
      words.push(
        random() < 0.35 ? FILLER[Math.floor(random() * FILLER.length)]! : pickZipf(options.vocabulary, random),
      );
    }
    const scopeIndex = Math.floor(random() * (options.scopeCount + 1));
    memories.push({
      scope: scopeIndex === options.scopeCount ? 'global' : `project:bench-${scopeIndex}`,
      type: MEMORY_TYPES[Math.floor(random() * MEMORY_TYPES.length)]!,
      content: `${words.join(' ')}.`,
      importance: Math.round(random() * 100) / 100,
    });
  }
  return memories;
}

/** Natural-question-shaped queries: a few words of a random memory wrapped in stop words. */
export function makeQueries(
  memories: readonly NewMemory[],
  count: number,
  seed: number,
): Array<{ scope: string; text: string }> {
  const random = seededRandom(seed);
  const queries: Array<{ scope: string; text: string }> = [];
  for (let index = 0; index < count; index += 1) {
    const memory = memories[Math.floor(random() * memories.length)]!;
    const words = memory.content.replace(/\.$/, '').split(' ');
    const picked: string[] = [];
    for (let pick = 0; pick < 4; pick += 1) picked.push(words[Math.floor(random() * words.length)]!);
    queries.push({ scope: memory.scope, text: `what did we decide about the ${picked.join(' ')}?` });
  }
  return queries;
}
