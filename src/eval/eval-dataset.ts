import { EngramError } from '../kernel/errors.js';
import { cleanControlCharacters, controlCharacterWarning } from '../kernel/text-cleaning.js';
import { parseJsonl, type ParseJsonlOptions } from '../memory/jsonl-format.js';
import type { NewMemory } from '../memory/memory.js';
import { isScope, type Scope } from '../memory/scope.js';

/**
 * An evaluation dataset: the JSON Lines export format (memory lines) plus query lines
 * `{"kind":"query","id","scope","query","relevant":[memory ids],"tags"?:[…],"at"?:"<ISO instant>"}`.
 */
export interface EvalDataset {
  memories: NewMemory[];
  queries: EvalQuery[];
  /** Queries left out of the scores, with why (an empty relevant list, or relevant memories only on invalid lines). */
  skipped: Array<{ line: number; id: string; reason: string }>;
  /** Lines left out (malformed JSON, an empty memory, an unknown id…), by line number; the rest is scored. */
  invalidLines: Array<{ line: number; message: string }>;
  warnings: string[];
}

/** One query of a dataset: recalled in its scope; `relevant` are the memory ids it should find. */
export interface EvalQuery {
  line: number;
  id: string;
  scope: Scope;
  query: string;
  relevant: string[];
  tags: string[];
  /** When the question is asked (ISO-8601): recall runs with its clock there. Absent: the evaluation's clock. */
  at?: string;
}

export interface ParseEvalDatasetOptions extends ParseJsonlOptions {
  /** Longest query text, in characters; default 10,000. */
  maxQueryLength?: number;
}

const DEFAULT_MAX_QUERY_LENGTH = 10_000;
const MAX_ID_LENGTH = 200;
const MAX_TAGS = 50;
const MAX_TAG_LENGTH = 100;
const MAX_RELEVANT = 10_000;
const MAX_LISTED_PROBLEMS = 20;
const MAX_LISTED_WARNINGS = 20;
const QUERY_FIELDS = new Set(['kind', 'id', 'scope', 'query', 'relevant', 'tags', 'at']);

/**
 * Parses and validates an evaluation dataset. A bad line (malformed JSON, an empty memory, a
 * duplicate id, a query naming an unknown memory or scope) is left out and listed with its line
 * number in `invalidLines`; the rest is scored. Control characters in text are replaced with a
 * warning. Relevant ids of memories on invalid lines are dropped from their queries (a query left
 * with none is skipped). Only a dataset with no memory or no scorable query is refused.
 */
export function parseEvalDataset(text: string, options: ParseEvalDatasetOptions = {}): EvalDataset {
  const maxQueryLength = options.maxQueryLength ?? DEFAULT_MAX_QUERY_LENGTH;
  const parsed = parseJsonl(text, options);
  const problems: Array<{ line: number; message: string }> = parsed.errors.map(({ line, message }) => ({
    line,
    message,
  }));
  const warnings = [...parsed.warnings];
  const refusedMemoryIds = new Set(parsed.errors.flatMap((error) => (error.id === undefined ? [] : [error.id])));

  const memoryLine = new Map<string, number>();
  const memoryScope = new Map<string, Scope>();
  const memories: NewMemory[] = [];
  for (const { line, input } of parsed.memories) {
    const id = input.id!;
    const first = memoryLine.get(id);
    if (first !== undefined) {
      problems.push({ line, message: `Duplicate memory id ${quote(id)} (first on line ${first}).` });
      continue;
    }
    memoryLine.set(id, line);
    memoryScope.set(id, input.scope);
    memories.push(input);
    if (input.archived === true || (input.invalidAt !== undefined && input.invalidAt !== null)) {
      warnings.push(`Line ${line}: memory ${quote(id)} is archived or invalidated, so recall never returns it.`);
    }
  }
  const scopes = new Set(memoryScope.values());

  const queries: EvalQuery[] = [];
  const skipped: EvalDataset['skipped'] = [];
  const queryLine = new Map<string, number>();
  for (const { line, value } of parsed.others) {
    if (value.kind !== 'query') {
      problems.push({ line, message: `Unknown line kind ${quote(String(value.kind))}: use "memory" or "query".` });
      continue;
    }
    const outcome = parseQueryLine(value, maxQueryLength);
    if ('error' in outcome) {
      problems.push({ line, message: outcome.error });
      continue;
    }
    const query = { line, ...outcome.query };
    const refused = query.relevant.filter((id) => refusedMemoryIds.has(id) && !memoryScope.has(id));
    if (refused.length > 0) {
      query.relevant = query.relevant.filter((id) => !refused.includes(id));
      warnings.push(
        `Line ${line}: query ${quote(query.id)} leaves out relevant memor${refused.length === 1 ? 'y' : 'ies'} ${listIds(refused)}, on invalid lines.`,
      );
      if (query.relevant.length === 0) {
        skipped.push({ line, id: query.id, reason: 'its relevant memories are on invalid lines' });
        continue;
      }
    }
    const first = queryLine.get(query.id);
    if (first !== undefined) {
      problems.push({ line, message: `Duplicate query id ${quote(query.id)} (first on line ${first}).` });
      continue;
    }
    queryLine.set(query.id, line);
    if (outcome.unknownFields.length > 0)
      warnings.push(`Line ${line}: ignored unknown fields ${outcome.unknownFields.slice(0, 5).map(quote).join(', ')}.`);
    const controls = controlCharacterWarning(`Line ${line}`, outcome.replacedControls);
    if (controls !== undefined) warnings.push(controls);
    if (!scopes.has(query.scope)) {
      problems.push({
        line,
        message: `Query ${quote(query.id)} names scope ${quote(query.scope)}, which holds no memory of this dataset.`,
      });
      continue;
    }
    const unknown = query.relevant.filter((id) => !memoryScope.has(id));
    if (unknown.length > 0) {
      problems.push({
        line,
        message: `Query ${quote(query.id)} names unknown memory id${unknown.length === 1 ? '' : 's'} ${listIds(unknown)}.`,
      });
      continue;
    }
    const elsewhere = query.relevant.filter((id) => memoryScope.get(id) !== query.scope);
    if (elsewhere.length > 0) {
      problems.push({
        line,
        message: `Query ${quote(query.id)} in ${quote(query.scope)} names memories of other scopes, which it can never recall: ${listIds(elsewhere)}.`,
      });
      continue;
    }
    if (query.relevant.length === 0) {
      skipped.push({ line, id: query.id, reason: 'no relevant memory ids' });
      continue;
    }
    queries.push(query);
  }

  problems.sort((a, b) => a.line - b.line);
  const invalidLines = problems.map((problem) => ({ line: problem.line, message: clean(problem.message) }));
  if (memories.length === 0)
    throw refusal('The dataset holds no memory lines ({"kind":"memory","id","scope","content"}).', invalidLines);
  if (queries.length === 0) {
    const emptyLists = skipped.filter((entry) => entry.reason === 'no relevant memory ids').length;
    throw refusal(
      `The dataset holds no query with relevant memories ({"kind":"query","id","scope","query","relevant":[…]})${emptyLists > 0 ? `; ${emptyLists} had an empty relevant list` : ''}${skipped.length > emptyLists ? `; ${skipped.length - emptyLists} named only memories on invalid lines` : ''}.`,
      invalidLines,
    );
  }
  const shownWarnings = warnings.slice(0, MAX_LISTED_WARNINGS);
  if (warnings.length > MAX_LISTED_WARNINGS)
    shownWarnings.push(`${warnings.length - MAX_LISTED_WARNINGS} more warnings not listed.`);
  return { memories, queries, skipped, invalidLines, warnings: shownWarnings };
}

/** The dataset is refused: the reason, then the invalid lines that left it with nothing to score. */
function refusal(reason: string, invalidLines: EvalDataset['invalidLines']): EngramError {
  const listed = invalidLines
    .slice(0, MAX_LISTED_PROBLEMS)
    .map((problem) => `  line ${problem.line}: ${problem.message}`);
  const more =
    invalidLines.length > MAX_LISTED_PROBLEMS ? [`  … and ${invalidLines.length - MAX_LISTED_PROBLEMS} more`] : [];
  const head = invalidLines.length > 0 ? [`${reason} It has ${invalidLines.length} invalid line(s):`] : [reason];
  return new EngramError('INVALID_INPUT', [...head, ...listed, ...more].join('\n'), {
    details: { problems: invalidLines.slice(0, 1_000) },
  });
}

type QueryOutcome =
  { error: string } | { query: Omit<EvalQuery, 'line'>; unknownFields: string[]; replacedControls: number };

function parseQueryLine(record: Record<string, unknown>, maxQueryLength: number): QueryOutcome {
  const { id, scope, relevant, tags, at } = record;
  const cleaned = typeof record.query === 'string' ? cleanControlCharacters(record.query) : undefined;
  const query = cleaned?.text;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH)
    return { error: `A query needs an "id": a string of 1-${MAX_ID_LENGTH} characters.` };
  if (typeof scope !== 'string' || !isScope(scope)) {
    return {
      error: `Query ${quote(id)}: "scope" must be a scope such as "project:<id>" or "session:<id>", got ${quote(String(scope))}.`,
    };
  }
  if (typeof query !== 'string' || query.trim().length === 0)
    return { error: `Query ${quote(id)}: "query" must be non-empty text.` };
  if (query.length > maxQueryLength)
    return {
      error: `Query ${quote(id)}: "query" is ${query.length} characters; at most ${maxQueryLength} are accepted.`,
    };
  if (!Array.isArray(relevant) || relevant.some((entry) => typeof entry !== 'string')) {
    return { error: `Query ${quote(id)}: "relevant" must be an array of memory ids (strings).` };
  }
  if (relevant.length > MAX_RELEVANT)
    return { error: `Query ${quote(id)}: "relevant" lists ${relevant.length} ids; at most ${MAX_RELEVANT}.` };
  if (
    tags !== undefined &&
    (!Array.isArray(tags) ||
      tags.length > MAX_TAGS ||
      tags.some((tag) => typeof tag !== 'string' || tag.length === 0 || tag.length > MAX_TAG_LENGTH))
  ) {
    return {
      error: `Query ${quote(id)}: "tags" must be an array of at most ${MAX_TAGS} non-empty strings of up to ${MAX_TAG_LENGTH} characters.`,
    };
  }
  if (at !== undefined && (typeof at !== 'string' || at.length > 40 || !Number.isFinite(Date.parse(at)))) {
    return {
      error: `Query ${quote(id)}: "at" must be the instant the question is asked, ISO-8601 (e.g. "2023-05-20T00:31:00Z").`,
    };
  }
  const unknownFields = Object.keys(record).filter((key) => !QUERY_FIELDS.has(key));
  return {
    query: {
      id,
      scope,
      query,
      relevant: [...new Set(relevant as string[])],
      tags: [...new Set((tags ?? []) as string[])],
      ...(typeof at === 'string' && { at: new Date(Date.parse(at)).toISOString() }),
    },
    unknownFields,
    replacedControls: cleaned?.replaced ?? 0,
  };
}

// Values come from the input: shorten and quote them so a hostile line cannot flood the report.
function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

function listIds(ids: readonly string[]): string {
  const shown = ids.slice(0, 5).map(quote).join(', ');
  return ids.length > 5 ? `${shown} and ${ids.length - 5} more` : shown;
}

function clean(message: string): string {
  return message.replace(/[\u0000-\u001F\u007F-\u009F]+/g, ' ');
}
