import { porterStem } from '../recall/porter-stemmer.js';
import { isWrittenAsName, startsSentence } from './near-duplicate.js';

/**
 * The parts of a statement that decide whether two statements speak of the same thing: its subject
 * (what comes before the first verb), its predicate (the verb and what follows), which of its numbers
 * name a thing (an identifier: "customer 4411", "web-01", "#418") and which give a value of one
 * ("PostgreSQL 16", "100 requests", "March 3"), whether it tells of a past event, and whether it
 * says that something changed ("now", "no longer", "moved from X to Y"). English word lists only;
 * whatever these rules cannot read leaves the head undefined, and the comparison then stays unsure.
 */

export type TokenKind = 'word' | 'function' | 'negation' | 'value' | 'identifier' | 'marker';

export interface StatementToken {
  /** The token as written (case kept). */
  text: string;
  lower: string;
  /** The Porter stem of a word; a token holding a digit or a dotted/hyphenated name as it is. */
  stem: string;
  kind: TokenKind;
}

export interface StatementParts {
  tokens: readonly StatementToken[];
  /** Index of the clause's first verb; what comes before it is the subject. Undefined: no verb found. */
  head: number | undefined;
  /** The main verb's base form ("uses" → "use", "does not talk" → "talk", "is now" → "be"); undefined without a head. */
  verb: string | undefined;
  /** A past event ("ran", "was", "failed on March 3"), not a present state ("is built", "runs"). */
  past: boolean;
  /** An indefinite article in the predicate, at its index: "has a meeting on March 3" is one of several. */
  indefiniteAt: number | undefined;
  change: {
    /** The text says something changed: now, no longer, anymore, instead, switched, moved, upgraded… */
    marked: boolean;
    /** "also", "too", "as well": something was added, nothing replaced. */
    additive: boolean;
    /** The stems and numbers between "from" and "to" of a change ("from Postgres 14 to 16" → postgr, 14). */
    from: readonly string[];
    /** The stems and numbers after its "to". */
    to: readonly string[];
  };
}

// Words that carry no content (articles, pronouns, prepositions, auxiliaries): never a subject or a value.
const FUNCTION_WORDS = new Set(
  `a an the this that these those there here is are was were be been being am do does did doing done have has had having
  i me my mine myself we us our ours ourselves you your yours yourself he him his she her hers it its itself they them
  their theirs themselves of in at for to with by from as into onto about which who whom whose what when where how
  than then so and also just very really please can could may might shall should will would per via around until since
  till within across through behind near each every any some but`.split(/\s+/),
);
const NEGATIONS = new Set(`not non no never nor none nothing nobody nowhere neither without`.split(/\s+/));
const AUXILIARIES = new Set(
  `is are am was were be has have had do does did will would can could shall should may might must`.split(/\s+/),
);
const PAST_AUXILIARIES = new Set(['was', 'were', 'had', 'did']);
const PRESENT_PASSIVE = new Set(['is', 'are', 'am', 'be', 'being', 'get', 'gets', 'stays', 'remains']);
const DETERMINERS = new Set(
  `a an the this that these those my your our their his her its each every some any all no many few several
  which whose another other such what`.split(/\s+/),
);
const PREPOSITIONS = new Set(
  `of in at for to with by from as into onto about on off over under per via after before around until since till
  within across through behind near without between among during against`.split(/\s+/),
);
const PRONOUNS = new Set(['i', 'we', 'you', 'they', 'he', 'she', 'it', 'who', 'that', 'which']);
// Adverbs that may stand between a subject and its verb ("the user now prefers", "CI still runs").
const ADVERBS = new Set(
  `now always usually often sometimes still also currently recently just only already rarely seldom mostly generally
  typically normally mainly primarily actually finally eventually officially temporarily permanently no longer even
  never nowadays`.split(/\s+/),
);
// What marks a change of the same thing: the newer statement says it replaced the older one.
const CHANGE_WORDS = new Set(['now', 'nowadays', 'anymore', 'currently', 'instead', 'longer']);
const CHANGE_VERBS = new Set(
  `move migrate switch change upgrade downgrade replace rename bump transition become go`.split(/\s+/),
);
const ADDITIVE_WORDS = new Set(['also', 'too', 'additionally', 'both']);
// A number right after these words is a value of a thing ("version 4"), not the name of another thing.
const VALUE_ANCHORS = new Set(
  `version versions v ver release revision about around approximately roughly nearly almost over under least most
  than every each top`.split(/\s+/),
);

// Verbs a memory's statements are made of. Kept to verbs whose forms are seldom the plural of a
// noun in a subject ("tests", "builds" and "reports" are left out): a verb this list misses leaves
// the head undefined, and an undefined head never overturns anything.
const VERBS = new Set(
  `use run prefer like love hate enjoy want need require own lead manage live reside talk speak write read start stop
  begin finish open move migrate switch upgrade downgrade replace rename bump handle cover support contain hold include
  listen serve point belong depend go come sit meet pay cost take make get give send receive mentor approve maintain
  sync expire fail pass break block allow forbid ban avoid enable disable expose accept reject choose pick favor favour
  dislike know attend teach study commute drive rent visit postpone cancel restart reboot crash ship join leave become
  stay keep call ask tell say feel seem appear look think believe mean understand remember forget expect agree decide
  try help show wear eat drink play watch communicate respond reply deploy target default route redirect connect fetch
  push pull trigger happen occur sleep wake work install configure set put reach host store release build test
  report review log transition change remain lack exceed equal involve affect`.split(/\s+/),
);
const IRREGULAR_PAST = new Map(
  Object.entries({
    ran: 'run',
    went: 'go',
    gone: 'go',
    came: 'come',
    wrote: 'write',
    written: 'write',
    took: 'take',
    taken: 'take',
    made: 'make',
    got: 'get',
    gotten: 'get',
    gave: 'give',
    given: 'give',
    sent: 'send',
    kept: 'keep',
    held: 'hold',
    met: 'meet',
    paid: 'pay',
    led: 'lead',
    left: 'leave',
    built: 'build',
    began: 'begin',
    begun: 'begin',
    broke: 'break',
    broken: 'break',
    chose: 'choose',
    chosen: 'choose',
    knew: 'know',
    known: 'know',
    sat: 'sit',
    spoke: 'speak',
    spoken: 'speak',
    taught: 'teach',
    drove: 'drive',
    driven: 'drive',
    became: 'become',
    thought: 'think',
    meant: 'mean',
    felt: 'feel',
    told: 'tell',
    said: 'say',
    understood: 'understand',
    forgot: 'forget',
    forgotten: 'forget',
    shown: 'show',
    wore: 'wear',
    worn: 'wear',
    ate: 'eat',
    eaten: 'eat',
    drank: 'drink',
    slept: 'sleep',
    woke: 'wake',
    stood: 'stand',
  }),
);

type VerbForm = 'base' | 'third-person' | 'past' | 'ing';

/** The base form of a known verb and which form this is, or undefined. */
function verbForm(lower: string): { base: string; form: VerbForm } | undefined {
  const irregular = IRREGULAR_PAST.get(lower);
  if (irregular !== undefined) return { base: irregular, form: 'past' };
  if (VERBS.has(lower)) return { base: lower, form: 'base' };
  const tries: Array<[RegExp, string[], VerbForm]> = [
    [/ies$/, ['y'], 'third-person'],
    [/es$/, ['', 'e'], 'third-person'],
    [/s$/, [''], 'third-person'],
    [/ied$/, ['y'], 'past'],
    [/ed$/, ['', 'e'], 'past'],
    [/ing$/, ['', 'e'], 'ing'],
  ];
  for (const [suffix, endings, form] of tries) {
    if (!suffix.test(lower)) continue;
    const stem = lower.replace(suffix, '');
    for (const ending of endings) if (VERBS.has(stem + ending)) return { base: stem + ending, form };
    // A doubled last consonant: "stopped", "shipping".
    if (form !== 'third-person' && /([b-df-hj-np-tv-z])\1$/.test(stem) && VERBS.has(stem.slice(0, -1)))
      return { base: stem.slice(0, -1), form };
  }
  return undefined;
}

const TOKEN = /#?[\p{L}\p{N}]+(?:[-._:/@+][\p{L}\p{N}]+)*/gu;
const UNIT_VALUE =
  /^\d+(?:[.,]\d+)?(?:ms|s|sec|secs|min|mins|h|hr|hrs|d|w|y|k|m|b|kb|mb|gb|tb|px|em|rem|x|am|pm|st|nd|rd|th)$/i;
const VERSION_VALUE = /^v\d+(?:[.\-]\d+)*$/i;

/** Reads a statement's parts (see the top of this file). Pure; the same text always gives the same parts. */
export function statementParts(text: string): StatementParts {
  const expanded = text
    .normalize('NFKC')
    .replace(/[’‘`]/g, "'")
    .replace(/\b(?:can't|cannot)\b/gi, 'can not')
    .replace(/\bwon't\b/gi, 'will not')
    .replace(/n't\b/gi, ' not')
    .replace(/'(?:s|re|ve|ll|d|m)\b/gi, '');
  const matches = [...expanded.matchAll(TOKEN)];
  const raw = matches.map((match) => match[0]);
  const tokens: StatementToken[] = [];
  for (const [index, written] of raw.entries()) {
    const label = written.startsWith('#');
    const text = label ? written.slice(1) : written;
    const lower = text.toLowerCase();
    const previous = tokens.at(-1);
    let kind: TokenKind;
    if (/\p{N}/u.test(text)) kind = label ? 'identifier' : numberKind(text, previous, index);
    else if (NEGATIONS.has(lower)) kind = 'negation';
    else if (CHANGE_WORDS.has(lower) && !(lower === 'longer' && previous?.lower !== 'no')) kind = 'marker';
    else if (FUNCTION_WORDS.has(lower) && !isWrittenAsName(text, startsSentence(expanded, matches[index]!.index)))
      kind = 'function';
    else kind = 'word';
    // Porter turns a final y into i only where no suffix follows ("deploys" → deploi, "deployment" →
    // deploy): written back as y, one word keeps one stem.
    const stem = kind === 'word' && /^[\p{L}]+$/u.test(lower) ? porterStem(lower).replace(/i$/, 'y') : lower;
    tokens.push({ text, lower, stem, kind });
  }
  const head = findHead(tokens);
  return {
    tokens,
    head,
    verb: head === undefined ? undefined : mainVerb(tokens, head),
    past: tellsOfThePast(tokens),
    indefiniteAt:
      head === undefined
        ? undefined
        : (() => {
            const at = tokens.findIndex(
              (token, index) => index > head && (token.lower === 'a' || token.lower === 'an'),
            );
            return at < 0 ? undefined : at;
          })(),
    change: changeOf(tokens),
  };
}

/**
 * Whether a number names a thing or gives a value: "#418", "web-01", "customer 4411" and "note 3"
 * name one of several things; "PostgreSQL 16", "version 4", "is 100", "at 02:00", "March 3" and
 * "250ms" give a value.
 */
function numberKind(text: string, previous: StatementToken | undefined, index: number): 'value' | 'identifier' {
  if (/\p{L}/u.test(text)) return VERSION_VALUE.test(text) || UNIT_VALUE.test(text) ? 'value' : 'identifier';
  if (previous === undefined) return 'value';
  if (previous.kind === 'value' || previous.kind === 'function' || previous.kind === 'marker') return 'value';
  if (previous.kind === 'negation' || VALUE_ANCHORS.has(previous.lower) || PREPOSITIONS.has(previous.lower))
    return 'value';
  if (previous.kind === 'identifier') return 'identifier';
  if (verbForm(previous.lower) !== undefined || AUXILIARIES.has(previous.lower)) return 'value';
  // A name as written (PostgreSQL, Node, March, API) gives a version or a date; a common noun
  // ("customer", "room", "port") numbers one of several things. The first word is capitalised anyway.
  const proper = /\p{Lu}/u.test(previous.text.slice(1)) || (/^\p{Lu}/u.test(previous.text) && index > 1);
  return proper ? 'value' : 'identifier';
}

/** The index of the clause's first verb, or undefined when none is found (then nothing is overturned). */
function findHead(tokens: readonly StatementToken[]): number | undefined {
  let imperative: number | undefined;
  // Inside a relative clause ("files that are not tracked … are ignored"), the subject goes on: its
  // verb is not the head, the next verb after it is.
  let relative: 'none' | 'verb' | 'after-verb' = 'none';
  for (const [index, token] of tokens.entries()) {
    const head = headAt(tokens, index);
    if (head === 'imperative') {
      imperative ??= index;
      continue;
    }
    if (!head) {
      if (relative === 'verb' && isContentToken(token)) relative = 'after-verb';
      continue;
    }
    let before = index - 1;
    while (before >= 0 && (ADVERBS.has(tokens[before]!.lower) || tokens[before]!.kind === 'negation')) before -= 1;
    if (before >= 0 && RELATIVE_PRONOUNS.has(tokens[before]!.lower) && before > 0) {
      relative = 'verb';
      continue;
    }
    if (relative === 'verb') continue;
    return index;
  }
  return relative === 'none' ? imperative : undefined;
}

const RELATIVE_PRONOUNS = new Set(['that', 'which', 'who', 'whom', 'whose', 'where']);

function isContentToken(token: StatementToken): boolean {
  return token.kind === 'word' || token.kind === 'value' || token.kind === 'identifier';
}

/** Whether the token at `index` can open the predicate: a verb, an auxiliary, "not"/"never", an adverb before a verb. */
function headAt(tokens: readonly StatementToken[], index: number): boolean | 'imperative' {
  const token = tokens[index]!;
  const { lower } = token;
  const next = tokens[index + 1];
  const nextIsVerb = next !== undefined && (AUXILIARIES.has(next.lower) || verbForm(next.lower) !== undefined);
  if (AUXILIARIES.has(lower)) return true;
  if ((lower === 'not' || lower === 'never') && index > 0) return true;
  if ((ADVERBS.has(lower) || (lower.length > 4 && lower.endsWith('ly'))) && nextIsVerb)
    return index === 0 ? 'imperative' : true;
  if (lower === 'no' && next?.lower === 'longer' && index > 0) return true;
  const verb = verbForm(lower);
  if (verb === undefined || token.kind !== 'word') return false;
  // "Use pnpm", "Run the linter": an order; but "Release notes … are" has its verb later.
  if (index === 0) return verb.form === 'base' ? 'imperative' : false;
  const previous = tokens[index - 1]!;
  if (DETERMINERS.has(previous.lower) || PREPOSITIONS.has(previous.lower) || previous.kind === 'negation') return false;
  if (verb.form === 'ing') return false;
  if (
    verb.form === 'base' &&
    !(PRONOUNS.has(previous.lower) || (previous.lower.endsWith('s') && previous.lower.length > 3))
  )
    return false;
  return true;
}

const BE = new Set(['is', 'are', 'am', 'was', 'were', 'be', 'been', 'being']);
const DO = new Set(['do', 'does', 'did']);

/** The base form of the verb the predicate turns on, from its head: auxiliaries "do" and modals lead to the verb after them. */
function mainVerb(tokens: readonly StatementToken[], head: number): string | undefined {
  for (const token of tokens.slice(head)) {
    const { lower } = token;
    if (BE.has(lower)) return 'be';
    if (lower === 'has' || lower === 'have' || lower === 'had') {
      // "has moved": the verb after; "has 3 nodes": have.
      continue;
    }
    if (DO.has(lower) || AUXILIARIES.has(lower) || ADVERBS.has(lower) || token.kind === 'negation') continue;
    if (token.kind === 'marker') continue;
    const verb = verbForm(lower);
    if (verb !== undefined && token.kind === 'word') return verb.base;
    return tokens.slice(head).some((other) => other.lower === 'has' || other.lower === 'have' || other.lower === 'had')
      ? 'have'
      : lower;
  }
  return undefined;
}

/** Whether a past form tells of an event: not after is/are/be ("is built" is a state), not an adjective ("the required field"). */
function tellsOfThePast(tokens: readonly StatementToken[]): boolean {
  for (const [index, token] of tokens.entries()) {
    if (PAST_AUXILIARIES.has(token.lower)) return true;
    if (token.kind !== 'word') continue;
    // Any -ed word counts, a verb this file does not list too ("Go 1.21 added the slices package").
    const past = verbForm(token.lower)?.form === 'past' || (token.lower.length > 4 && /[^e]ed$|ied$/.test(token.lower));
    if (!past) continue;
    let before = index - 1;
    while (before >= 0 && ADVERBS.has(tokens[before]!.lower)) before -= 1;
    const previous = before >= 0 ? tokens[before]!.lower : undefined;
    if (previous === undefined && index === 0) return true;
    if (
      previous !== undefined &&
      (PRESENT_PASSIVE.has(previous) || DETERMINERS.has(previous) || PREPOSITIONS.has(previous))
    )
      continue;
    return true;
  }
  return false;
}

function changeOf(tokens: readonly StatementToken[]): StatementParts['change'] {
  let marked = false;
  let additive = false;
  for (const [index, token] of tokens.entries()) {
    if (token.kind === 'marker' && (token.lower !== 'longer' || tokens[index - 1]?.lower === 'no')) marked = true;
    if (ADDITIVE_WORDS.has(token.lower)) additive = true;
    if (token.lower === 'well' && tokens[index - 1]?.lower === 'as') additive = true;
    if (token.lower === 'addition' && tokens[index - 1]?.lower === 'in') additive = true;
    const verb = token.kind === 'word' ? verbForm(token.lower) : undefined;
    if (verb && CHANGE_VERBS.has(verb.base) && (verb.base !== 'go' || tokens[index + 1]?.lower === 'from')) {
      // Used as a verb: "moved", "is migrating", "we switch", "switches"; not the noun in "the changes".
      const previous = tokens[index - 1]?.lower;
      const asVerb =
        verb.form === 'past' ||
        verb.form === 'ing' ||
        (previous !== undefined && (AUXILIARIES.has(previous) || PRONOUNS.has(previous) || previous === 'to')) ||
        (verb.form === 'third-person' && previous !== undefined && !DETERMINERS.has(previous));
      if (asVerb) marked = true;
    }
  }
  const from = tokens.findIndex((token) => token.lower === 'from');
  const to = from < 0 ? -1 : tokens.findIndex((token, index) => index > from + 1 && token.lower === 'to');
  if (from < 0 || to < 0 || !marked) return { marked, additive, from: [], to: [] };
  const content = (slice: readonly StatementToken[]): string[] =>
    slice
      .filter((token) => token.kind === 'word' || token.kind === 'value' || token.kind === 'identifier')
      .map((token) => token.stem);
  const end = tokens.findIndex(
    (token, index) => index > to && (PREPOSITIONS.has(token.lower) || token.lower === 'and'),
  );
  return {
    marked,
    additive,
    from: content(tokens.slice(from + 1, to)),
    to: content(tokens.slice(to + 1, end < 0 ? undefined : end)),
  };
}
