import { EngramError } from '../kernel/errors.js';
import { deriveDescription, deriveName, type MemoryType } from '../memory/memory.js';
import { stripPrivateContent } from '../privacy/private-content.js';
import { findSecrets, redactSecrets } from '../privacy/secret-redaction.js';
import { DEFAULT_SETTINGS, type Settings } from '../kernel/settings.js';
import { maskSpans, sentenceSpans } from './explicit-sentences.js';
import { looksLikeBaseVerb } from './base-verb.js';
import { toThirdPerson } from './third-person.js';

/**
 * Explicit memory (SPEC §3, "explicit writes"): statements in a user message that ask to be
 * remembered or forgotten, recognised by rules so they are captured at once, with or without a model.
 *
 * Precise rather than greedy. A statement counts only when its sentence STARTS with the trigger
 * (after greetings and fillers like "ok,", "also", "please", "Claude,"):
 * - remember: "remember that …", "remember: …", "please remember …", "keep in mind that …",
 *   "don't forget that …", "can you remember that …?", "I want you to remember that …";
 * - feedback: "from now on, …" (or "… from now on"), "always …" / "never …" followed by a verb in
 *   its base form ("always run the tests", not "always fails"), "you should always/never …";
 * - preferences: "I prefer …", "I'd rather …", "I like/love/hate/don't like …" (not "I like it",
 *   "I like how you …": those point at this conversation, not at a lasting taste);
 * - identity: "my <name|email|timezone|role|editor|preferred …|favorite …> is …", "call me …";
 * - forget: "forget that …", "forget about …", "don't remember …", "you can forget …".
 * Never: questions ("do you remember …?"), hypotheticals ("if I always …"), reported or quoted speech
 * ("he said \"remember …\""), text in code spans or blocks or `>` quotes, and private text.
 * First person becomes "the user" ("I use tabs" → "The user uses tabs.") so the memory reads alone.
 */

export type ExplicitTrigger = 'remember' | 'from-now-on' | 'always-never' | 'preference' | 'identity' | 'forget';

export interface RememberIntent {
  kind: 'remember';
  type: MemoryType;
  /** A self-contained statement: "The user prefers tabs.", "Always run the tests before pushing." */
  content: string;
  name: string;
  description: string;
  importance: number;
  trigger: ExplicitTrigger;
}

export interface ForgetIntent {
  kind: 'forget';
  /** What to look for among the memories of the write scope. */
  query: string;
  trigger: 'forget';
}

export type ExplicitIntent = RememberIntent | ForgetIntent;

export interface ExplicitMemoryOptions {
  /** Defaults from `explicitMemory.*` of these settings (default DEFAULT_SETTINGS). */
  settings?: Pick<Settings, 'explicitMemory'>;
}

// ---------------------------------------------------------------------------------------------
// Triggers. Each is tried on the masked sentence after its lead-in; content comes from the original.

// Words that may open a sentence before its trigger: a bullet, fillers ("ok,", "also", "btw"), or a
// name addressed ("Claude,"), but never a trigger or a hypothetical itself.
const LEAD_IN = new RegExp(
  '^(?:(?:[-*•]|\\d{1,2}[.)])\\s+)?' +
    '(?:(?:by the way|one more thing|just so you know|thank you|quick note|one thing|' +
    '(?!(?:always|never|remember|forget|please|from|going|moving|call|keep|don|do|if|when|whenever|unless|suppose|what|would|should|whether|maybe|perhaps|i|my)\\b)\\p{L}{2,20})' +
    '\\s*[,:!—–-]\\s*|(?:and|also|so|oh|plus|btw|actually|ok|okay|note)\\s+)*',
  'iu',
);
const PLEASE = /^(?:please|pls|kindly)\s*,?\s+/i;
const HYPOTHETICAL =
  /^(?:if|when|whenever|unless|suppose|supposing|imagine|what if|in case|even if|whether|assuming|let's say|hypothetically|maybe|perhaps|would|should|do|does|did|is|are|was|were|have|has|had|why|how|what|who|where)\b/i;

const REMEMBER =
  /^(?:(?:can|could|would) you\s+(?:please\s+)?|i\s+(?:want|need|would like|'d like|’d like)\s+you\s+to\s+)?(?:remember|keep in mind|don'?t forget|don’t forget|do not forget|never forget|note for the future|for future reference)(?:\s+(?:that|this))?(?:\s*[:,—–-]\s*|\s+)(?=\S)/i;
const PLEASE_REMEMBER = /^(?:please|pls|kindly)\s*,?\s+remember(?:\s+(?:that|this))?(?:\s*[:,—–-]\s*|\s+)(?=\S)/i;
const FORGET =
  /^(?:(?:you can|you may|please|just)\s+)*(?:forget|stop remembering|don'?t remember|don’t remember|do not remember|no need to remember)(?:\s+(?:that|about|what i said about|the fact that))?\s+(?=\S)/i;
const FROM_NOW_ON_LEAD =
  /^(?:from now on|going forward|from here on(?: out)?|moving forward|henceforth|in the future)\s*,?\s+(?=\S)/i;
const FROM_NOW_ON_TAIL = /\s*,?\s+(?:from now on|going forward|from here on(?: out)?|moving forward)\s*[.!]?\s*$/i;
const ALWAYS_NEVER =
  /^(?:you\s+(?:should|must|need to|have to|ought to)\s+)?(always|never|never ever|don'?t ever|don’t ever|do not ever)\s+/i;
const PREFERENCE =
  /^i(?:\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|much\s+|definitely\s+|always\s+)?(prefer|would prefer|would rather)|['’]d\s+(?:much\s+)?(prefer|rather))\s+(?=\S)/i;
const LIKING =
  /^i\s+(?:really\s+|absolutely\s+|truly\s+|do\s+)?(like|love|enjoy|hate|dislike|don'?t like|don’t like|do not like|can'?t stand|can’t stand)\s+(?=\S)/i;
const IDENTITY_NOUNS =
  '(?:(?:preferred|favou?rite)\\s+[a-z][\\w-]*(?:\\s+[a-z][\\w-]*){0,2}|' +
  '(?:(?:first|last|full|legal|nick|user|display)\\s*)?name|nickname|pronouns|e-?mail(?: address)?|time ?zone|role|job(?: title)?|title|company|employer|' +
  'github(?: (?:handle|username|user))?|gitlab(?: (?:handle|username))?|username|handle|editor|ide|shell|terminal|os|operating system|' +
  '(?:native |first |programming )?language|home city|country|birthday|browser|keyboard layout)';
const IDENTITY = new RegExp(`^my\\s+(${IDENTITY_NOUNS})\\s+(is|are)\\s+(?=\\S)`, 'i');
const CALL_ME = /^(?:please\s+)?(?:call me|i go by)\s+(?=\S)/i;

// Every trigger holds one of these words: sentences without any are skipped cheaply.
const TRIGGER_WORD =
  /remember|forget|always|never|now on|forward|here on|henceforth|future|prefer|rather|like|love|enjoy|hate|stand|my\s|call me|go by/i;

// Content that points at the conversation rather than a lasting fact: not worth a memory.
const DEICTIC =
  /^(?:it|this|that|these|those|them|him|her|you|your|yours|how|what|the way|when you|everything|all of (?:it|this|that)|anything|so|too|very much|a lot)\b/i;
const CATCH_ALL =
  /^(?:it|that|this|them|those|these|everything|all|all of (?:it|this|that|them)|anything|what i (?:just )?said|the last (?:one|message|thing)|everything you know)[.!]?$/i;
// A name as people write it: one to four capitalized words ("Ada", "Dr. Lovelace").
const PERSON_NAME = /^\p{Lu}[\p{L}'’.-]*(?:\s+\p{Lu}[\p{L}'’.-]*){0,3}$/u;
const NOT_A_LIKING = /^to (?:say|ask|bother|interrupt|admit|break it|tell you|be that)\b/i;
const WHEN_ALWAYS =
  /^(?:when|whenever|before|after)\b[^,;]{1,80},\s*(?:please\s+)?(?:you\s+(?:should|must)\s+)?(?:always|never|don'?t ever|don’t ever|do not ever)\s+(\p{L}+)\s+\S/iu;
const HEDGED_VALUE = /^(?:not|probably|maybe|perhaps|kind of|sort of|i think|unknown|unclear|a secret|private)\b/i;

const FEEDBACK_START =
  /^(?:always|never|don'?t|don’t|do not|please|use|avoid|prefer|make sure|keep|run|write|ask|check|put|add|stop|start|try|answer|reply|respond|format|commit|push|test|name|indent|follow|include|mention|skip|be|you should|you must|you need to|remember to|when you)\b/i;

/**
 * Finds the explicit remember and forget statements of one user message, in order, at most
 * `explicitMemory.maxIntentsPerMessage`. Private text is stripped first; code and quotes are skipped.
 * @example
 * detectExplicitMemory('From now on, use pnpm instead of npm.')
 * // [{ kind: 'remember', type: 'feedback', content: 'Use pnpm instead of npm.', … }]
 */
export function detectExplicitMemory(message: string, options: ExplicitMemoryOptions = {}): ExplicitIntent[] {
  if (typeof message !== 'string')
    throw new EngramError('INVALID_INPUT', 'An explicit-memory message is a string (the text the user typed).');
  const limits = (options.settings ?? DEFAULT_SETTINGS).explicitMemory;
  if (message.length > limits.maxMessageChars) {
    throw new EngramError(
      'PAYLOAD_TOO_LARGE',
      `The message is ${message.length} characters; explicit memory reads at most ${limits.maxMessageChars} (explicitMemory.maxMessageChars). Pass the user's own words, not a pasted file.`,
    );
  }
  const text = stripPrivateContent(message).text;
  const masked = maskSpans(text);
  const intents: ExplicitIntent[] = [];
  for (const span of sentenceSpans(masked)) {
    if (intents.length >= limits.maxIntentsPerMessage) break;
    if (span.end - span.start > limits.maxStatementChars) continue;
    if (!TRIGGER_WORD.test(masked.slice(span.start, span.end))) continue;
    const intent = readSentence(
      text.slice(span.start, span.end),
      masked.slice(span.start, span.end),
      limits.importance,
    );
    if (intent && !intents.some((known) => sameIntent(known, intent))) intents.push(intent);
  }
  return intents;
}

function sameIntent(a: ExplicitIntent, b: ExplicitIntent): boolean {
  return (
    a.kind === b.kind &&
    (a.kind === 'forget' ? a.query === (b as ForgetIntent).query : a.content === (b as RememberIntent).content)
  );
}

function readSentence(original: string, masked: string, importance: number): ExplicitIntent | undefined {
  const leading = masked.length - masked.trimStart().length;
  let cursor = leading + (LEAD_IN.exec(masked.slice(leading))?.[0].length ?? 0);
  const rest = (): string => masked.slice(cursor);
  const body = (): string => original.slice(cursor).trim();
  const question = /\?\s*$/.test(original);
  // "When writing tests, never mock the database": an instruction with its condition, not a hypothetical.
  const whenFirst = question ? null : WHEN_ALWAYS.exec(rest());
  if (whenFirst && looksLikeBaseVerb(whenFirst[1]!))
    return instruction(stripTerminal(original.slice(cursor).trim()), 'always-never', importance, 'feedback');
  if (HYPOTHETICAL.test(rest())) return undefined;

  // Polite requests ("can you remember that …?", "please remember …") may end with "?".
  const remember = REMEMBER.exec(rest()) ?? PLEASE_REMEMBER.exec(rest());
  if (remember) {
    const asked = /^(?:can|could|would) you/i.test(remember[0]);
    if (question && !asked) return undefined;
    cursor += remember[0].length;
    return rememberStatement(stripTerminal(body()), importance);
  }
  if (question) return undefined;
  const forget = FORGET.exec(rest());
  if (forget) {
    cursor += forget[0].length;
    const query = stripTerminal(body());
    if (query.length < 2 || CATCH_ALL.test(query) || /^(?:to|the last|it|them|everything|anything|all)\b/i.test(query))
      return undefined;
    return { kind: 'forget', query, trigger: 'forget' };
  }
  const please = PLEASE.exec(rest());
  if (please) cursor += please[0].length;
  if (HYPOTHETICAL.test(rest())) return undefined;

  const lead = FROM_NOW_ON_LEAD.exec(rest());
  if (lead) {
    cursor += lead[0].length;
    return instruction(stripTerminal(body()), 'from-now-on', importance);
  }
  const tail = FROM_NOW_ON_TAIL.exec(rest());
  if (tail && tail.index > 0)
    return instruction(original.slice(cursor, cursor + tail.index).trim(), 'from-now-on', importance);
  const always = ALWAYS_NEVER.exec(rest());
  if (always) {
    const after = rest()
      .slice(always[0].length)
      .split(/\s+/)
      .map((word) => word.replace(/[.,;:!?]+$/, ''));
    // "never really push …": one adverb may stand between the word and the verb.
    const verb = /ly$/i.test(after[0] ?? '') && after.length > 1 ? after[1]! : (after[0] ?? '');
    if (!looksLikeBaseVerb(verb) || after.length < 2) return undefined;
    const word = always[1]!.toLowerCase().startsWith('always') ? 'Always' : 'Never';
    const statement = `${word} ${original.slice(cursor + always[0].length).trim()}`;
    return instruction(stripTerminal(statement), 'always-never', importance);
  }
  const preference = PREFERENCE.exec(rest());
  if (preference) {
    cursor += preference[0].length;
    const object = stripTerminal(body());
    // "I'd rather you …" is a preference about the agent; "I prefer this/your …" points at the conversation.
    if ((!/^you\b/i.test(object) && DEICTIC.test(object)) || /^not to (?:say|answer)\b/i.test(object)) return undefined;
    const said = (preference[1] ?? `would ${preference[2]!}`).toLowerCase();
    const verb = said.endsWith('rather') ? 'would rather' : said.startsWith('would') ? 'would prefer' : 'prefers';
    return statementOf(`The user ${verb} ${toThirdPerson(object)}`, 'user', 'preference', importance);
  }
  const liking = LIKING.exec(rest());
  if (liking) {
    cursor += liking[0].length;
    const object = stripTerminal(body());
    if (DEICTIC.test(object) || NOT_A_LIKING.test(object) || object.split(/\s+/).length > 40) return undefined;
    const verb = likingVerb(liking[1]!);
    return statementOf(`The user ${verb} ${toThirdPerson(object)}`, 'user', 'preference', importance);
  }
  const identity = IDENTITY.exec(rest());
  if (identity) {
    cursor += identity[0].length;
    const value = stripTerminal(body());
    if (value.length === 0 || value.split(/\s+/).length > 12 || HEDGED_VALUE.test(value)) return undefined;
    return statementOf(
      `The user's ${identity[1]!.toLowerCase()} ${identity[2]!.toLowerCase()} ${value}`,
      'user',
      'identity',
      importance,
    );
  }
  const callMe = CALL_ME.exec(rest());
  if (callMe) {
    cursor += callMe[0].length;
    const value = stripTerminal(body());
    if (!PERSON_NAME.test(value)) return undefined;
    return statementOf(`The user wants to be called ${value}`, 'user', 'identity', importance);
  }
  return undefined;
}

function likingVerb(verb: string): string {
  const lower = verb.toLowerCase().replace(/’/g, "'");
  if (lower === "don't like" || lower === 'dont like' || lower === 'do not like') return "doesn't like";
  if (lower.startsWith('can')) return "can't stand";
  return `${lower}s`;
}

/** "remember that X": the statement X, typed by what it says. */
function rememberStatement(statement: string, importance: number): RememberIntent | undefined {
  // "don't forget to X" is a reminder for the task at hand, not a fact to keep.
  if (statement.split(/\s+/).length < 2 || CATCH_ALL.test(statement) || /^to\b/i.test(statement)) return undefined;
  const normalized = toThirdPerson(statement);
  const type: MemoryType = /^the user\b/i.test(normalized)
    ? 'user'
    : FEEDBACK_START.test(statement) || /\bfrom now on\b/i.test(statement)
      ? 'feedback'
      : 'project';
  return statementOf(normalized, type, 'remember', importance);
}

/** An instruction to the agent ("always …", "from now on, …"): feedback, unless it says who the user is. */
function instruction(
  statement: string,
  trigger: ExplicitTrigger,
  importance: number,
  type?: MemoryType,
): RememberIntent | undefined {
  if (statement.split(/\s+/).length < 2 || DEICTIC.test(statement) || /^(?:there|things|we'll see)\b/i.test(statement))
    return undefined;
  const normalized = toThirdPerson(statement);
  const firstWord = statement.split(/\s+/)[0]!.replace(/[^\p{L}'’-]/gu, '');
  const chosen: MemoryType =
    type ??
    (/^the user\b/i.test(normalized)
      ? 'user'
      : FEEDBACK_START.test(statement) || looksLikeBaseVerb(firstWord)
        ? 'feedback'
        : 'project');
  return statementOf(normalized, chosen, trigger, importance);
}

function statementOf(
  text: string,
  type: MemoryType,
  trigger: ExplicitTrigger,
  importance: number,
): RememberIntent | undefined {
  const content = sentenceCase(text);
  if (content.replace(/[^\p{L}\p{N}]/gu, '').length < 3) return undefined;
  // From the redacted text: a slug of a secret would hold it lowercased, past any pattern's reach.
  const nameSource = redactSecrets(content)
    .text.replace(/^The user's\s+/i, 'user ')
    .replace(/^The user\s+/i, 'user ')
    .replace(/['’]/g, '');
  return {
    kind: 'remember',
    type,
    content,
    name: deriveName(nameSource),
    description: deriveDescription(content),
    importance,
    trigger,
  };
}

function stripTerminal(text: string): string {
  // A secret may end in the sentence's punctuation (`Toor2024!`): what belongs to it stays, so the store sees it whole.
  const secretEnd = Math.max(0, ...findSecrets(text).map((secret) => secret.end));
  const tail = text.slice(secretEnd).replace(/[\s.!?…]+$/u, '');
  return (text.slice(0, secretEnd) + tail).replace(/^[\s:,—–-]+/u, '').trim();
}

function sentenceCase(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return trimmed;
  const capitalized = trimmed[0]!.toUpperCase() + trimmed.slice(1);
  return /[.!?…)"'`\]]$/u.test(capitalized) ? capitalized : `${capitalized}.`;
}
