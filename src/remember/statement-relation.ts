import { compareByCosine, compareLexically, lexicalProfile, type LexicalProfile } from './near-duplicate.js';
import { statementParts, type StatementParts, type StatementToken } from './statement-parts.js';

/**
 * The one comparison of two statements that every path shares: dedupe on write and `engram dedupe`
 * (merge only what is the same), the dream (merge the same, overturn only an update) and recall
 * (hide only a near-copy, never the newer of two that disagree).
 *
 * - `same`: one statement said twice (dedupe's rules: see near-duplicate.ts).
 * - `updated`: the same subject got a different value, and the newer says so plainly enough for a
 *   person to accept that the older no longer holds: a negation flipped ("uses Docker" / "does not
 *   use Docker", "no longer uses"), a value changed in an otherwise identical present-tense
 *   statement ("runs PostgreSQL 14" / "16", "is 100 requests" / "250"), or a change said in words
 *   ("is now Helix", "moved from Postgres 14 to 16") with the older's subject and old value in it.
 * - `unsure`: the same subject, perhaps a different value, but not plainly enough (words swapped,
 *   "prefers tabs" / "prefers spaces", a value among several): both stay; recall shows the newer first.
 * - `distinct`: two facts. The subject differs (an id, a number, a version, a host, a person, a date,
 *   a negation or word order before the verb), a number names another thing ("customer 4411" /
 *   "customer 5822", "web-01" / "web-02"), or a past event happened again on another date.
 * When unsure, never `updated`: a fact is overturned only on evidence a person would accept.
 */

export type StatementRelation = 'same' | 'updated' | 'unsure' | 'distinct';

/** A statement read once for comparisons: dedupe's lexical profile and the parts of its clause. */
export interface StatementProfile extends LexicalProfile {
  parts: StatementParts;
}

/** How alike the caller measured two statements: dedupe's word rule, embeddings, or recall's token overlap. */
export type Likeness =
  | { method: 'lexical'; threshold: number }
  | { method: 'cosine'; cosine: number; threshold: number }
  | { method: 'overlap'; similarity: number; threshold: number };

export interface StatementComparison {
  relation: StatementRelation;
  /** What decided it: for `same` the method's verdict, else what differs ("value-changed", "subject-differs"…). */
  reason: string;
  similarity: number;
  method: Likeness['method'];
}

/** Reads a statement once for `compareStatements`. */
export function statementProfile(text: string): StatementProfile {
  return { ...lexicalProfile(text), parts: statementParts(text) };
}

/**
 * Compares an older statement with a newer one (the order matters only for `updated`: the newer
 * one's words of change are read). `likeness` decides `same` as dedupe does; the rest is read from
 * the two clauses.
 */
export function compareStatements(
  older: StatementProfile,
  newer: StatementProfile,
  likeness: Likeness,
): StatementComparison {
  const base = { method: likeness.method };
  if (likeness.method === 'lexical') {
    const verdict = compareLexically(older, newer, likeness.threshold);
    if (verdict.duplicate)
      return { ...base, relation: 'same', reason: 'near-duplicate', similarity: verdict.similarity };
    return { ...base, ...relate(older, newer), similarity: verdict.similarity };
  }
  if (likeness.method === 'cosine') {
    const verdict = compareByCosine(likeness.cosine, older, newer, likeness.threshold);
    if (verdict.duplicate)
      return { ...base, relation: 'same', reason: 'near-duplicate', similarity: verdict.similarity };
    return { ...base, ...relate(older, newer), similarity: verdict.similarity };
  }
  // Token overlap is a measure of words: dedupe's word rules decide, the caller's overlap replaces
  // its Jaccard ("prefers tabs" / "prefers spaces" is a substitution, never a near-copy).
  if (compareLexically(older, newer, 0).duplicate && likeness.similarity >= likeness.threshold)
    return { ...base, relation: 'same', reason: 'near-copy', similarity: likeness.similarity };
  return { ...base, ...relate(older, newer), similarity: likeness.similarity };
}

/**
 * Whether two statements share a subject, however they word the rest: no number names another
 * thing in one than in the other, no past event is dated otherwise, and the subject of one (the
 * words before its verb) is named in the other with one more of its words (what is said of it). What a model's merge or invalidation must show
 * ("ArgoCD handles every deployment" / "Deploys go out through ArgoCD…": yes; "Alice owns billing" /
 * "Bob owns billing": no).
 */
export function sharedSubject(a: StatementProfile, b: StatementProfile): boolean {
  const digits = difference(digitTokens(a.parts.tokens), digitTokens(b.parts.tokens));
  if ([...digits.onlyA, ...digits.onlyB].some((token) => token.kind === 'identifier')) return false;
  if ((a.parts.past || b.parts.past) && digits.onlyA.length + digits.onlyB.length > 0) return false;
  return subjectNamedIn(a.parts, b.parts) || subjectNamedIn(b.parts, a.parts);
}

/** Whether the subject of `a` (non-empty, without a negation) is named, word for word, in `b`, and one more word of `a`. */
function subjectNamedIn(a: StatementParts, b: StatementParts): boolean {
  if (a.head === undefined) return false;
  const subject = a.tokens.slice(0, a.head);
  const words = subject.filter(isContent);
  if (words.length === 0 || negationsIn(subject) !== negationsIn(b.tokens.slice(0, b.head ?? 0))) return false;
  const stems = new Set(b.tokens.filter(isContent).map((token) => token.stem));
  if (!words.every((token) => stems.has(token.stem))) return false;
  // And what is said of it: "the user" alone is the subject of everything a user store holds.
  const named = new Set(words.map((token) => token.stem));
  return a.tokens.some((token) => isContent(token) && !named.has(token.stem) && stems.has(token.stem));
}

type Relation = { relation: Exclude<StatementRelation, 'same'>; reason: string };

function relate(older: StatementProfile, newer: StatementProfile): Relation {
  const a = older.parts;
  const b = newer.parts;
  const marked = markedChange(a, b);
  if (marked) return marked;
  // "also", "too", "as well": the newer adds to the older, it replaces nothing.
  if (b.change.additive) return { relation: 'unsure', reason: 'added' };
  const digits = difference(digitTokens(a.tokens), digitTokens(b.tokens));
  if ([...digits.onlyA, ...digits.onlyB].some((token) => token.kind === 'identifier'))
    return { relation: 'distinct', reason: 'identifier-differs' };
  if (a.head === undefined || b.head === undefined) return { relation: 'unsure', reason: 'no-verb-found' };
  if (subjectKey(a) !== subjectKey(b)) return { relation: 'distinct', reason: 'subject-differs' };

  const predicateA = predicate(a);
  const predicateB = predicate(b);
  const wordsA = predicateA.filter((token) => token.kind === 'word').map((token) => token.stem);
  const wordsB = predicateB.filter((token) => token.kind === 'word').map((token) => token.stem);
  const sameWords = wordsA.join(' ') === wordsB.join(' ');
  const negationsA = predicateA.filter((token) => token.kind === 'negation').length;
  const negationsB = predicateB.filter((token) => token.kind === 'negation').length;
  const valuesA = predicateA.filter(isDigitToken).map((token) => token.lower);
  const valuesB = predicateB.filter(isDigitToken).map((token) => token.lower);
  const sameValues = valuesA.join(' ') === valuesB.join(' ');

  if (sameWords && sameValues && negationsA !== negationsB)
    return negationsA + negationsB === 1
      ? { relation: 'updated', reason: 'negation-flipped' }
      : { relation: 'unsure', reason: 'negations-differ' };
  if (sameWords && negationsA === negationsB && !sameValues) {
    if (a.past || b.past) return { relation: 'distinct', reason: 'another-event' };
    // "also tests on Node 22" beside "tests on Node 20": one of several values, whichever came first.
    if (a.change.additive) return { relation: 'unsure', reason: 'added' };
    if (valuesA.length !== valuesB.length) return { relation: 'unsure', reason: 'values-added' };
    if (indefiniteBeforeChange(a, valuesA, valuesB) || indefiniteBeforeChange(b, valuesB, valuesA))
      return { relation: 'unsure', reason: 'one-of-several' };
    return { relation: 'updated', reason: 'value-changed' };
  }
  if (sameWords && sameValues) return { relation: 'unsure', reason: 'restated' };
  if ([...wordsA].sort().join(' ') === [...wordsB].sort().join(' '))
    return { relation: 'unsure', reason: 'order-differs' };
  if (!wordsA.some((word) => wordsB.includes(word))) return { relation: 'distinct', reason: 'other-fact' };
  return { relation: 'unsure', reason: 'words-substituted' };
}

/**
 * A change said in words in the newer statement: "The user's editor is now Helix" after "The user's
 * editor is VS Code"; "We moved the database from Postgres 14 to 16" after "The database runs
 * Postgres 14". The older's subject must be named in the newer, and one slot of its value replaced
 * (or, with "from … to", the old value named and the new one absent from the older).
 */
function markedChange(a: StatementParts, b: StatementParts): Relation | undefined {
  if (!b.change.marked || b.change.additive || a.head === undefined) return undefined;
  const stemsA = new Set(a.tokens.filter(isContent).map((token) => token.stem));
  const stemsB = new Set(b.tokens.filter(isContent).map((token) => token.stem));
  const subjectA = a.tokens.slice(0, a.head).filter(isContent);
  if (!subjectA.every((token) => stemsB.has(token.stem))) return undefined;
  if (negationsIn(a.tokens.slice(0, a.head)) !== 0) return undefined;
  if (b.change.from.length > 0) {
    const fromHeld = b.change.from.every((stem) => stemsA.has(stem));
    const toNew = b.change.to.filter((stem) => !b.change.from.includes(stem));
    if (fromHeld && toNew.length > 0 && toNew.every((stem) => !stemsA.has(stem)))
      return { relation: 'updated', reason: 'changed-from-to' };
    return undefined;
  }
  if (b.head === undefined) return undefined;
  const subjectB = b.tokens.slice(0, b.head).filter(isContent);
  if (!subjectB.every((token) => stemsA.has(token.stem))) return undefined;
  const old = slot(a.tokens, a.head, stemsB);
  const replacement = slot(b.tokens, b.head, stemsA);
  if (old === 'none' || old === 'several' || replacement === 'none' || replacement === 'several') return undefined;
  // What stays around the value must be one frame, and it must pin which value of the subject changed:
  // "prefers light mode" / "prefers dark mode now" (mode), "the default branch is" (an attribute as
  // the subject), "lives in" (one place at a time); not "speaks German" / "prefers dark mode now".
  const frame = [...stemsA].filter((stem) => stemsB.has(stem));
  const subjects = new Set([...subjectA, ...subjectB].map((token) => token.stem));
  const verbs = new Set([a.verb, b.verb].map((verb) => (verb === undefined ? '' : stemOf(verb))));
  const topic = frame.filter((stem) => !subjects.has(stem) && !verbs.has(stem));
  const attribute = (a.verb === 'be' || b.verb === 'be') && Math.max(subjectA.length, subjectB.length) >= 2;
  const oneAtATime = a.verb !== undefined && a.verb === b.verb && SINGLE_VALUED_VERBS.has(a.verb);
  if (topic.length === 0 && !attribute && !oneAtATime) return undefined;
  return { relation: 'updated', reason: 'change-marked' };
}

// Verbs whose object is one at a time: a person lives in one place, works at one employer.
const SINGLE_VALUED_VERBS = new Set(['live', 'reside', 'work', 'commute', 'report', 'belong']);

function stemOf(word: string): string {
  return statementParts(word).tokens[0]?.stem ?? word;
}

/** Whether the predicate's content tokens missing from `other` form one run ('one'), none, or several. */
function slot(tokens: readonly StatementToken[], head: number, other: ReadonlySet<string>): 'none' | 'one' | 'several' {
  let runs = 0;
  let inRun = false;
  for (const token of tokens.slice(head)) {
    const missing = isContent(token) && !other.has(token.stem);
    if (missing && !inRun) runs += 1;
    // Markers ("now") and the verb's own words do not break a run; anything else shared does.
    if (token.kind !== 'marker') inRun = missing;
  }
  return runs === 0 ? 'none' : runs === 1 ? 'one' : 'several';
}

/** The subject of a statement as a key (its words and numbers before the verb); undefined when no verb was found. */
export function subjectKeyOf(profile: StatementProfile): string | undefined {
  return profile.parts.head === undefined ? undefined : subjectKey(profile.parts);
}

function subjectKey(parts: StatementParts): string {
  return parts.tokens
    .slice(0, parts.head)
    .filter((token) => isContent(token) || token.kind === 'negation')
    .map((token) => (token.kind === 'negation' ? '¬' : token.stem))
    .join(' ');
}

function predicate(parts: StatementParts): StatementToken[] {
  return parts.tokens.slice(parts.head).filter((token) => token.kind !== 'function' && token.kind !== 'marker');
}

/** An "a"/"an" before the first value that changed: "has a meeting on March 3" is one meeting of several. */
function indefiniteBeforeChange(parts: StatementParts, values: readonly string[], other: readonly string[]): boolean {
  if (parts.indefiniteAt === undefined) return false;
  const changed = parts.tokens.findIndex(
    (token, index) => index > parts.head! && isDigitToken(token) && !other.includes(token.lower),
  );
  return changed >= 0 && parts.indefiniteAt < changed && values.length > 0;
}

function isContent(token: StatementToken): boolean {
  return token.kind === 'word' || isDigitToken(token);
}

function isDigitToken(token: StatementToken): boolean {
  return token.kind === 'value' || token.kind === 'identifier';
}

function negationsIn(tokens: readonly StatementToken[]): number {
  return tokens.filter((token) => token.kind === 'negation').length;
}

function digitTokens(tokens: readonly StatementToken[]): StatementToken[] {
  return tokens.filter(isDigitToken);
}

/** The tokens of each list that the other lacks (as many times as they are missing). */
function difference(
  a: readonly StatementToken[],
  b: readonly StatementToken[],
): { onlyA: StatementToken[]; onlyB: StatementToken[] } {
  const remaining = new Map<string, number>();
  for (const token of b) remaining.set(token.lower, (remaining.get(token.lower) ?? 0) + 1);
  const onlyA: StatementToken[] = [];
  for (const token of a) {
    const left = remaining.get(token.lower) ?? 0;
    if (left > 0) remaining.set(token.lower, left - 1);
    else onlyA.push(token);
  }
  const used = new Map<string, number>();
  for (const token of a) used.set(token.lower, (used.get(token.lower) ?? 0) + 1);
  const onlyB: StatementToken[] = [];
  for (const token of b) {
    const left = used.get(token.lower) ?? 0;
    if (left > 0) used.set(token.lower, left - 1);
    else onlyB.push(token);
  }
  return { onlyA, onlyB };
}
