import { parseScopeList } from '../../memory/scope.js';
import { z } from 'zod';
import { EngramError } from '../../kernel/errors.js';
import { MEMORY_TYPES } from '../../memory/memory.js';

// Shapes only: the memory model validates values (scope forms, slugs, sizes, control characters)
// with the same messages the CLI and the library give.

const scope = z.string().max(400);
const memoryType = z.enum(MEMORY_TYPES);
const importance = z.number().min(0).max(1);
const source = z.strictObject({
  sessionId: z.string().optional(),
  turnId: z.string().optional(),
  origin: z.string().optional(),
});

export const createMemoryBody = z.strictObject({
  content: z.string(),
  scope: scope.optional(),
  type: memoryType.optional(),
  name: z.string().optional(),
  description: z.string().optional(),
  importance: importance.optional(),
  source: source.nullable().optional(),
  /** false always adds a new memory; default true updates a near-duplicate in the same scope. */
  dedupe: z.boolean().optional(),
});

export const updateMemoryBody = z
  .strictObject({
    content: z.string().optional(),
    type: memoryType.optional(),
    name: z.string().optional(),
    description: z.string().optional(),
    importance: importance.optional(),
    source: source.nullable().optional(),
  })
  .refine((patch) => Object.keys(patch).length > 0, { message: 'Name at least one field to change.' });

export const recallBody = z.strictObject({
  query: z.string().max(10_000),
  scopes: z.array(scope).min(1).max(50).optional(),
  topK: z.number().int().min(1).max(100).optional(),
  minScore: z.number().min(0).max(1).optional(),
  types: z.array(memoryType).min(1).optional(),
  recordAccess: z.boolean().optional(),
  /** What was true then: memories valid at that date, invalidated ones included (an ISO date). */
  asOf: z.string().max(40).optional(),
  /** Also invalidated and superseded memories. */
  includeInvalid: z.boolean().optional(),
});

// The conversation's own checks (ids, roles, texts) run in the extractor; this only bounds the shape.
const turnMessage = z.strictObject({
  id: z.string().min(1).max(200),
  role: z.enum(['user', 'assistant', 'tool']),
  text: z.string(),
  toolCalls: z
    .array(
      z.strictObject({ id: z.string().max(200), name: z.string().max(200), input: z.record(z.string(), z.unknown()) }),
    )
    .max(100)
    .optional(),
  toolResults: z
    .array(z.strictObject({ toolUseId: z.string().max(200), content: z.string(), isError: z.boolean().optional() }))
    .max(100)
    .optional(),
  timestamp: z.string().max(40).optional(),
  meta: z.boolean().optional(),
});

export const turnBody = z.strictObject({
  sessionId: z.string().min(1).max(200),
  messages: z.array(turnMessage).max(10_000),
  recalled: z
    .array(
      z.strictObject({
        id: z.string().min(1).max(200),
        content: z.string().optional(),
        name: z.string().optional(),
        type: z.string().optional(),
      }),
    )
    .max(50)
    .optional(),
});

export const undoBody = z.strictObject({
  changeId: z.string().min(1).max(200),
  scopes: z.array(scope).min(1).max(50).optional(),
});

export const emptyBody = z.strictObject({});

/** `POST /v1/context`: what a model would receive for a message (the injection preview). */
export const contextBody = z.strictObject({
  query: z.string().max(10_000),
  scopes: z.array(scope).min(1).max(50).optional(),
  maxTokens: z.number().int().min(0).max(1_000_000).optional(),
  topK: z.number().int().min(1).max(100).optional(),
  minScore: z.number().min(0).max(1).optional(),
  types: z.array(memoryType).min(1).optional(),
  /** Count the injected memories as hits; default false (a preview is not a use). */
  recordAccess: z.boolean().optional(),
});

/** A scope list in a query string, parsed as the CLI parses --scope (parseScopeList). */
const scopeList = z
  .string()
  .max(20_000)
  .transform((value) => parseScopeList(value));

const commaList = z
  .string()
  .max(20_000)
  .transform((value) =>
    value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part.length > 0),
  );
const booleanFlag = z.enum(['true', 'false']).transform((value) => value === 'true');
const filterMode = z.enum(['exclude', 'include', 'only']);
const wholeNumber = (max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'Expected a whole number.')
    .transform(Number)
    .pipe(z.number().max(max));

export const listQuery = z.strictObject({
  scope: scopeList.optional(),
  type: commaList.pipe(z.array(memoryType)).optional(),
  archived: filterMode.optional(),
  invalid: filterMode.optional(),
  stale: booleanFlag.optional(),
  limit: wholeNumber(1_000).pipe(z.number().min(1)).optional(),
  offset: wholeNumber(100_000_000).optional(),
  /**
   * The first page's count of every match: `true` (the default) with the page, `false` the page alone
   * (no count, `total` null), `only` the count alone (no memories): the viewer draws the list first.
   */
  total: z.enum(['true', 'false', 'only']).optional(),
  /** Only memories with importance below this (0..1]. */
  importanceBelow: z
    .string()
    .regex(/^(?:0(?:\.\d{1,6})?|1(?:\.0{1,6})?)$/, 'Expected a number from 0 to 1.')
    .transform(Number)
    .optional(),
  /** Only memories with importance of at least this [0..1]; with importanceBelow, a range. */
  importanceAtLeast: z
    .string()
    .regex(/^(?:0(?:\.\d{1,6})?|1(?:\.0{1,6})?)$/, 'Expected a number from 0 to 1.')
    .transform(Number)
    .optional(),
  /** The `nextCursor` of the previous page: keyset paging, as fast on the thousandth page as on the first. */
  cursor: z
    .string()
    .regex(/^\d{1,15}\.\d{1,9}$/, 'Expected the nextCursor of a previous page.')
    .optional(),
});

export const scopedQuery = z.strictObject({ scope: scopeList.optional() });

export const jobsQuery = z.strictObject({
  state: commaList.pipe(z.array(z.enum(['pending', 'running', 'done', 'failed'])).min(1)).optional(),
  limit: wholeNumber(1_000).pipe(z.number().min(1)).optional(),
});

export const changeSetsQuery = z.strictObject({
  scope: scopeList.optional(),
  limit: wholeNumber(100).pipe(z.number().min(1)).optional(),
});

export const deleteQuery = z.strictObject({
  scope: scopeList.optional(),
  hard: booleanFlag.optional(),
  purge: booleanFlag.optional(),
});

/** Validates input against a schema; a failure is INVALID_INPUT naming each bad field. */
export function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown, where: string): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String).join('.');
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  throw new EngramError('INVALID_INPUT', `Invalid ${where}: ${problems.join('; ')}`);
}

/** The query string as a plain object; a parameter given twice is refused rather than guessed at. */
export function queryObject(searchParams: URLSearchParams): Record<string, string> {
  // No prototype, so a parameter named __proto__ is just a (refused) unknown field.
  const out = Object.create(null) as Record<string, string>;
  for (const [key, value] of searchParams) {
    if (Object.hasOwn(out, key))
      throw new EngramError('INVALID_INPUT', `Query parameter ${JSON.stringify(key.slice(0, 40))} is given twice.`);
    out[key] = value;
  }
  return out;
}
