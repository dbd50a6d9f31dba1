/**
 * Glob matching for the `paths:` of instruction rules and for excludes: brace expansion with a
 * pattern budget, `**` across directories, `*`, `?` and `[…]` within one segment. Pure, and
 * linear-time on hostile input (no regular expressions built from user text).
 */

// Longer than any path the OS accepts (PATH_MAX): such a glob or path is refused, which keeps
// matching and brace expansion cheap on hostile input.
export const MAX_PATH_LENGTH = 4_096;
// No real glob nests braces this deep.
const MAX_BRACE_DEPTH = 16;

/** Patterns a rule's globs expand to, and whether the budget cut some off. */
export interface GlobList {
  patterns: string[];
  truncated: boolean;
  /** Globs dropped for being longer than any path could be. */
  tooLong: number;
}

/**
 * Expands braces (`src/**\/*.{ts,tsx}` → two patterns, nested braces too) and normalizes each
 * pattern (`./` and `/` prefixes dropped; `dir/` means everything under it), stopping at
 * `maxPatterns` so `{a,b}{a,b}…` cannot explode.
 */
export function expandGlobs(patterns: readonly string[], maxPatterns: number): GlobList {
  const result: string[] = [];
  let truncated = false;
  let tooLong = 0;
  for (const pattern of patterns) {
    if (pattern.length > MAX_PATH_LENGTH) {
      tooLong += 1;
      continue;
    }
    const room = maxPatterns - result.length;
    if (room <= 0) {
      truncated = true;
      break;
    }
    const expanded = expandBraces(parseBraces(pattern), room + 1);
    if (expanded.length > room) truncated = true;
    for (const item of expanded.slice(0, room)) result.push(normalizePattern(item));
  }
  return { patterns: [...new Set(result)], truncated, tooLong };
}

function normalizePattern(pattern: string): string {
  let normalized = pattern.replace(/\/{2,}/g, '/');
  while (normalized.startsWith('./')) normalized = normalized.slice(2);
  normalized = normalized.replace(/^\/+/, '');
  if (normalized.endsWith('/')) normalized += '**';
  return normalized;
}

/** A glob with its brace groups parsed: literal text and groups of alternatives, in order. */
type BraceNode = string | BraceNode[][];

/**
 * Parses `{a,b}` groups (nested) of a glob: braces are paired in one pass first, so a group
 * without a top-level comma (`{a}`) or without its closing brace stays literal, as in bash, and
 * nothing is parsed twice. Braces nested deeper than MAX_BRACE_DEPTH are literal.
 */
function parseBraces(pattern: string): BraceNode[] {
  const closing = new Map<number, number>();
  const open: number[] = [];
  for (let index = 0; index < pattern.length; index += 1) {
    const character = pattern[index];
    if (character === '\\') index += 1;
    else if (character === '{') open.push(index);
    else if (character === '}' && open.length > 0) closing.set(open.pop()!, index);
  }
  const parseRange = (start: number, end: number, depth: number): BraceNode[] => {
    const sequence: BraceNode[] = [];
    let literal = '';
    for (let index = start; index < end;) {
      const character = pattern[index]!;
      if (character === '\\' && index + 1 < end) {
        literal += pattern.slice(index, index + 2);
        index += 2;
        continue;
      }
      const close = closing.get(index);
      if (character === '{' && close !== undefined && close < end && depth < MAX_BRACE_DEPTH) {
        const commas: number[] = [];
        for (let cursor = index + 1; cursor < close; cursor += 1) {
          const inner = pattern[cursor];
          if (inner === '\\') cursor += 1;
          else if (inner === '{' && closing.has(cursor)) cursor = closing.get(cursor)!;
          else if (inner === ',') commas.push(cursor);
        }
        if (commas.length > 0) {
          if (literal !== '') sequence.push(literal);
          literal = '';
          const bounds = [index, ...commas, close];
          sequence.push(bounds.slice(1).map((bound, position) => parseRange(bounds[position]! + 1, bound, depth + 1)));
          index = close + 1;
          continue;
        }
      }
      literal += character;
      index += 1;
    }
    if (literal !== '') sequence.push(literal);
    return sequence;
  };
  return parseRange(0, pattern.length, 0);
}

/** The strings a parsed glob stands for, at most `limit` of them (built left to right, so never more held). */
function expandBraces(sequence: readonly BraceNode[], limit: number): string[] {
  let results = [''];
  for (const node of sequence) {
    if (typeof node === 'string') {
      results = results.map((prefix) => prefix + node);
      continue;
    }
    const next: string[] = [];
    outer: for (const prefix of results) {
      for (const alternative of node) {
        for (const expanded of expandBraces(alternative, limit - next.length)) {
          next.push(prefix + expanded);
          if (next.length >= limit) break outer;
        }
      }
    }
    results = next;
  }
  return results;
}

/**
 * Whether a `/`-separated relative path matches one expanded glob: `**` (a whole segment) spans
 * any number of directories, `*` any run within a segment, `?` one character, `[…]` a class.
 * Runs in time proportional to pattern × path, whatever the input.
 */
export function matchGlob(pattern: string, path: string): boolean {
  if (pattern.length > MAX_PATH_LENGTH || path.length > MAX_PATH_LENGTH) return false;
  const patternSegments = pattern.split('/');
  const pathSegments = path.split('/').filter((segment) => segment !== '' && segment !== '.');
  const count = pathSegments.length;
  // Bottom-up over the pattern: after step p, matched[s] says whether patternSegments[p..] matches pathSegments[s..].
  let matched = new Uint8Array(count + 1);
  matched[count] = 1;
  for (let p = patternSegments.length - 1; p >= 0; p -= 1) {
    const segment = patternSegments[p]!;
    const current = new Uint8Array(count + 1);
    for (let s = count; s >= 0; s -= 1) {
      if (segment === '**') current[s] = matched[s] === 1 || (s < count && current[s + 1] === 1) ? 1 : 0;
      else current[s] = s < count && matched[s + 1] === 1 && matchSegment(segment, pathSegments[s]!) ? 1 : 0;
    }
    matched = current;
  }
  return matched[0] === 1;
}

/** Whether a path matches any of the expanded patterns. */
export function matchAnyGlob(patterns: readonly string[], path: string): boolean {
  return patterns.some((pattern) => matchGlob(pattern, path));
}

type SegmentToken =
  | { kind: 'literal'; text: string }
  | { kind: 'any' }
  | { kind: 'star' }
  | { kind: 'class'; negate: boolean; test: (character: string) => boolean };

function tokenizeSegment(segment: string): SegmentToken[] {
  const tokens: SegmentToken[] = [];
  const characters = [...segment];
  for (let index = 0; index < characters.length; index += 1) {
    const character = characters[index]!;
    if (character === '\\' && index + 1 < characters.length) {
      tokens.push({ kind: 'literal', text: characters[(index += 1)]! });
    } else if (character === '*') {
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (character === '?') {
      tokens.push({ kind: 'any' });
    } else if (character === '[') {
      const parsed = parseClass(characters, index);
      if (parsed) {
        tokens.push(parsed.token);
        index = parsed.end;
      } else {
        tokens.push({ kind: 'literal', text: character });
      }
    } else {
      tokens.push({ kind: 'literal', text: character });
    }
  }
  return tokens;
}

function parseClass(characters: readonly string[], open: number): { token: SegmentToken; end: number } | undefined {
  let index = open + 1;
  const negate = characters[index] === '!' || characters[index] === '^';
  if (negate) index += 1;
  const ranges: Array<[string, string]> = [];
  let first = true;
  for (; index < characters.length; index += 1) {
    const character = characters[index]!;
    if (character === ']' && !first) {
      const token: SegmentToken = {
        kind: 'class',
        negate,
        test: (value) => ranges.some(([low, high]) => value >= low && value <= high) !== negate,
      };
      return { token, end: index };
    }
    first = false;
    if (characters[index + 1] === '-' && index + 2 < characters.length && characters[index + 2] !== ']') {
      ranges.push([character, characters[index + 2]!]);
      index += 2;
    } else {
      ranges.push([character, character]);
    }
  }
  return undefined;
}

/** Wildcard match of one segment: greedy with backtracking to the last star only, so O(pattern × name). */
function matchSegment(segment: string, name: string): boolean {
  if (segment === '*') return true;
  if (!/[*?[\\]/.test(segment)) return segment === name;
  const tokens = tokenizeSegment(segment);
  const characters = [...name];
  let tokenIndex = 0;
  let characterIndex = 0;
  let starToken = -1;
  let starCharacter = 0;
  while (characterIndex < characters.length) {
    const token = tokens[tokenIndex];
    if (token && token.kind !== 'star' && tokenMatches(token, characters[characterIndex]!)) {
      tokenIndex += 1;
      characterIndex += 1;
    } else if (token?.kind === 'star') {
      starToken = tokenIndex;
      starCharacter = characterIndex;
      tokenIndex += 1;
    } else if (starToken !== -1) {
      tokenIndex = starToken + 1;
      starCharacter += 1;
      characterIndex = starCharacter;
    } else {
      return false;
    }
  }
  while (tokens[tokenIndex]?.kind === 'star') tokenIndex += 1;
  return tokenIndex === tokens.length;
}

function tokenMatches(token: SegmentToken, character: string): boolean {
  if (token.kind === 'literal') return token.text === character;
  if (token.kind === 'any') return true;
  if (token.kind === 'class') return token.test(character);
  return false;
}
