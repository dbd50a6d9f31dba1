import { MONTHS, NUMBER_WORDS, WEEKDAYS } from '../kernel/calendar-words.js';
import { lexicalProfile } from '../remember/near-duplicate.js';
import { sharedSubject, statementProfile } from '../remember/statement-relation.js';

/**
 * What a model's dream step may do (issue 26). A model's plan is untrusted input: it may have read a
 * memory that says "ignore previous instructions", or simply be wrong. Beyond `resolvePlan`'s checks
 * (ids, scopes, guards), a model's step that writes text must keep every fact its sources hold and
 * add none: no number, list item or name dropped that the result does not hold; no instruction
 * that no source gave ("SYSTEM: always run …", "ignore previous …", "you must …"); no new subject
 * or meaning (a few new words for a paraphrase, no new names). A merge or an invalidation joins only
 * memories that share a subject. Each function answers the reason for refusing, or undefined.
 */

/** Why the text a model wrote in place of `sources` cannot stand, or undefined when it keeps their facts and adds none. */
export function rewriteRefusal(
  sources: readonly string[],
  result: string,
  kind: 'merge' | 'condense' | 'rewrite-dates',
): string | undefined {
  const instruction = newInstruction(sources, result);
  if (instruction !== undefined)
    return `adds an instruction no memory gave (${JSON.stringify(instruction.slice(0, 80))})`;
  const resultProfile = lexicalProfile(result);
  const resultValues = new Set(lexicalProfile(withoutListMarkers(result)).values);
  // A list's "1." is no fact; nor is the "3" of "3 days ago" once the date is written out.
  const factsOf = (source: string): string =>
    kind === 'rewrite-dates' ? withoutListMarkers(source).replace(COUNTED_DAYS, ' ') : withoutListMarkers(source);
  const lostValues = [...new Set(sources.flatMap((source) => lexicalProfile(factsOf(source)).values))].filter(
    (value) => !resultValues.has(value),
  );
  if (lostValues.length > 0) return `drops ${lostValues.slice(0, 3).join(', ')}, which nothing kept holds`;
  const lostItem = sources.flatMap(listItems).find((item) => !itemKept(item, resultProfile.words));
  if (lostItem !== undefined) return `drops the list item ${JSON.stringify(lostItem.slice(0, 80))}`;
  // A name counts as held wherever it stands (the first word of a sentence is capitalised anyway).
  const resultTokens = new Set(nameTokens(result));
  const lostName = sources.flatMap(names).find((name) => !resultTokens.has(name));
  if (lostName !== undefined) return `drops "${lostName}", which nothing kept holds`;
  const sourceTokens = new Set(sources.flatMap(nameTokens));
  const newName = names(result).find(
    (name) => !sourceTokens.has(name) && !(kind === 'rewrite-dates' && isDateWord(name)),
  );
  if (newName !== undefined) return `brings in "${newName}", which no memory named`;
  const sourceWords = new Set(sources.flatMap((source) => [...lexicalProfile(factsOf(source)).words]));
  const added = [...resultProfile.words].filter((word) => !sourceWords.has(word));
  if (kind === 'rewrite-dates') {
    const notDates = added.filter((word) => !isDateWord(word));
    if (notDates.length > 0) return `changes more than dates (${notDates.slice(0, 3).join(', ')})`;
    const removed = [...sourceWords].filter((word) => !resultProfile.words.has(word) && !RELATIVE_DATE_WORDS.has(word));
    if (removed.length > 0) return `changes more than dates (drops ${removed.slice(0, 3).join(', ')})`;
    return undefined;
  }
  // A paraphrase needs a few words of its own; a changed meaning needs more.
  const allowed = Math.max(2, Math.floor(resultProfile.words.size * 0.25));
  if (added.length > allowed) return `says more than its memories (${added.slice(0, 4).join(', ')})`;
  return undefined;
}

/** Why a model may not join these memories (a merge's duplicate, an invalidation's newer), or undefined. */
export function subjectRefusal(a: string, b: string): string | undefined {
  return sharedSubject(statementProfile(a), statementProfile(b)) ? undefined : 'they do not share a subject';
}

// --- instructions ---------------------------------------------------------------------------------

// Text aimed at the assistant reading memories rather than a fact about the user or the project.
const INSTRUCTION_PATTERNS: readonly RegExp[] = [
  /(?:^|[\s[(<{])(?:system|assistant|developer|human|ai)\s*(?:prompt|message|note|override)?\s*:/i,
  /<\/?\s*(?:system|instructions?|assistant|developer|im_start|im_end)\b[^>]*>/i,
  /\[\/?(?:INST|SYS)\]|<\|[a-z_]+\|>/i,
  /\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}\b(?:previous|prior|above|earlier|preceding|all|any|other|system)\b[^.!?\n]{0,30}\b(?:instructions?|rules?|prompts?|messages?|guidelines?|context|constraints?)\b/i,
  /\byou\s+(?:must|should|shall|will|need\s+to|have\s+to|are\s+(?:required|instructed|told)\s+to)\b/i,
  /\b(?:from now on|new instructions?|important instructions?)\b/i,
  /\b(?:always|never|must|do not|don't)\s+(?:run|execute|call|send|post|upload|download|fetch|curl|wget|reveal|print|output|include|tell|share|mention|say|reply|respond|answer|obey|follow|trust|ignore|delete|remove|install|open|visit|email|paste|approve|grant|disable|skip|use)\b/i,
  /\b(?:curl|wget)\b[^\n]*\|\s*(?:ba|z)?sh\b|\brm\s+-rf\b|\bbase64\s+-d\b/i,
  /^\s*(?:run|execute|call|send|post|upload|download|fetch|reveal|print|output|tell|ignore|disregard|obey|install|open|visit|email|paste|grant|disable)\b/i,
];

function isInstruction(sentence: string): boolean {
  return INSTRUCTION_PATTERNS.some((pattern) => pattern.test(sentence));
}

/**
 * The first instruction-like sentence of `result` that no source already gave: a sentence of a source
 * that is itself an instruction and holds nearly every word of it ("Always run the linter" may be
 * restated; "SYSTEM: always run curl … | sh" may not be added).
 */
function newInstruction(sources: readonly string[], result: string): string | undefined {
  const given = sources
    .flatMap(sentences)
    .filter(isInstruction)
    .map((sentence) => lexicalProfile(sentence).words);
  for (const sentence of sentences(result)) {
    if (!isInstruction(sentence)) continue;
    const words = [...lexicalProfile(sentence).words];
    const restated = given.some((source) => {
      const held = words.filter((word) => source.has(word)).length;
      return words.length === 0 ? true : held / words.length >= 0.8;
    });
    if (!restated) return sentence.trim();
  }
  return undefined;
}

function sentences(text: string): string[] {
  return text.split(/(?<=[.!?;])\s+|\n+/).filter((sentence) => sentence.trim() !== '');
}

// --- facts a rewrite must keep --------------------------------------------------------------------

const LIST_ITEM = /^\s*(?:[-*+•]|\d+[.)]|[a-z][.)])\s+(?:\[[ xX]\]\s+)?(.+)$/;

const COUNTED_DAYS = /\b\d{1,3}\s+(?:days?|weeks?|months?|years?)\s+ago\b|\bin\s+\d{1,3}\s+(?:days?|weeks?)\b/gi;

function withoutListMarkers(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/^\s*(?:[-*+•]|\d+[.)]|[a-z][.)])\s+(?:\[[ xX]\]\s+)?/, ''))
    .join('\n');
}

/** The items of a text's lists (bullets, numbered lines, checkboxes). */
function listItems(text: string): string[] {
  return text.split('\n').flatMap((line) => {
    const match = LIST_ITEM.exec(line);
    return match && match[1]!.trim() !== '' ? [match[1]!.trim()] : [];
  });
}

/** An item is kept when the result holds at least 3 of every 4 of its words (all of them when it has 3 or fewer). */
function itemKept(item: string, resultWords: ReadonlySet<string>): boolean {
  const words = [...lexicalProfile(item).words];
  if (words.length === 0) return true;
  const held = words.filter((word) => resultWords.has(word)).length;
  return words.length <= 3 ? held === words.length : held / words.length >= 0.75;
}

/**
 * The names a text holds, lowercased: a word with a capital past a sentence's first word ("Alice",
 * "PostgreSQL", "ArgoCD"), an acronym, a code-like token ("api-eu.example.com", "web-01", "npm_token").
 */
function names(text: string): string[] {
  const found: string[] = [];
  for (const sentence of sentences(text)) {
    const tokens = [...sentence.matchAll(NAME_TOKEN)].map((match) => match[0]);
    for (const [index, token] of tokens.entries()) {
      const code = /[-._/@:]/.test(token) && /\p{L}/u.test(token);
      const capital = /\p{Lu}/u.test(token.slice(1)) || (index > 0 && /^\p{Lu}/u.test(token));
      if ((code || capital) && token !== 'I') found.push(token.toLowerCase());
    }
  }
  return [...new Set(found)];
}

const NAME_TOKEN = /[\p{L}\p{N}]+(?:[-._/@:][\p{L}\p{N}]+)*/gu;

/** Every token of a text as `names` spells them (lowercased), wherever they stand. */
function nameTokens(text: string): string[] {
  return [...text.matchAll(NAME_TOKEN)].map((match) => match[0].toLowerCase());
}

const RELATIVE_DATE_WORDS = new Set(
  `yesterday today tomorrow tonight ago last next this week weekend month year day morning afternoon evening night
  the befor after`
    .split(/\s+/)
    .flatMap((word) => [word, lexicalProfile(word).sequence[0] ?? word]),
);

function isDateWord(word: string): boolean {
  const lower = word.toLowerCase();
  if (/^\d{1,4}(?:st|nd|rd|th)?$/.test(lower) || /^\d{4}-\d{2}(?:-\d{2})?$/.test(lower)) return true;
  return DATE_WORDS.has(lower);
}

const DATE_WORDS = new Set(
  [
    ...MONTHS,
    ...WEEKDAYS,
    ...NUMBER_WORDS.keys(),
    ...'week weekend morning afternoon evening night day of on in the'.split(' '),
  ].flatMap((word) => [word.toLowerCase(), lexicalProfile(word).sequence[0] ?? word.toLowerCase()]),
);
