import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import { isPrivacyChecked, markPrivacyChecked, sanitizeMemoryFields } from '../privacy/memory-privacy.js';
import { assertScope, type Scope } from './scope.js';

/** The five memory types of SPEC §3. */
export const MEMORY_TYPES = ['user', 'feedback', 'project', 'reference', 'procedure'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

/** Where a memory came from: the session and turn that produced it, and the surface that wrote it. */
export interface MemorySource {
  sessionId?: string;
  turnId?: string;
  origin?: string;
}

/** One self-contained fact that changes future behaviour (SPEC §3). Times are ISO-8601 strings. */
export interface Memory {
  id: string;
  scope: Scope;
  type: MemoryType;
  name: string;
  description: string;
  content: string;
  importance: number;
  source: MemorySource | null;
  createdAt: string;
  updatedAt: string;
  lastAccessedAt: string | null;
  hitCount: number;
  validFrom: string;
  invalidAt: string | null;
  supersededBy: string | null;
  archived: boolean;
}

/** Every field of a memory, in the order written out: identity, what a reader scans for, bookkeeping. */
export const MEMORY_FIELD_ORDER = [
  'id',
  'scope',
  'type',
  'name',
  'description',
  'content',
  'importance',
  'source',
  'createdAt',
  'updatedAt',
  'lastAccessedAt',
  'hitCount',
  'validFrom',
  'invalidAt',
  'supersededBy',
  'archived',
] as const satisfies ReadonlyArray<keyof Memory>;

/** What a caller gives to create a memory; everything but scope and content has a default. */
export interface NewMemory {
  id?: string;
  scope: Scope;
  type?: MemoryType;
  name?: string;
  description?: string;
  content: string;
  importance?: number;
  source?: MemorySource | null;
  createdAt?: string;
  updatedAt?: string;
  lastAccessedAt?: string | null;
  hitCount?: number;
  validFrom?: string;
  invalidAt?: string | null;
  supersededBy?: string | null;
  archived?: boolean;
}

/** The fields an update may change. Identity (id, scope) and bookkeeping are not among them. */
export interface MemoryPatch {
  type?: MemoryType;
  name?: string;
  description?: string;
  content?: string;
  importance?: number;
  source?: MemorySource | null;
}

export interface MemoryLimits {
  maxContentBytes: number;
  maxNameLength: number;
  maxDescriptionLength: number;
}

/** The `memory.*` settings' defaults, for callers that pass no limits. */
export const DEFAULT_MEMORY_LIMITS: MemoryLimits = {
  maxContentBytes: DEFAULT_SETTINGS.memory.maxContentBytes,
  maxNameLength: DEFAULT_SETTINGS.memory.maxNameLength,
  maxDescriptionLength: DEFAULT_SETTINGS.memory.maxDescriptionLength,
};

export const DEFAULT_MEMORY_TYPE: MemoryType = 'project';
export const DEFAULT_IMPORTANCE = 0.5;

const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
// C0 controls other than tab, newline and carriage return; DEL; C1 controls.
const CONTENT_CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
const LINE_CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
// A UTF-16 surrogate not paired with its other half (with the u flag, a pair is one code point and
// does not match). It has no UTF-8 form, so each backend would store something else: refused.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function refuseLoneSurrogate(value: string, field: string): void {
  if (LONE_SURROGATE.test(value))
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid ${field}: it holds a lone UTF-16 surrogate (half of a character, often from text cut in the middle of an emoji). Send well-formed Unicode.`,
    );
}

export function isMemoryType(value: unknown): value is MemoryType {
  return typeof value === 'string' && (MEMORY_TYPES as readonly string[]).includes(value);
}

export function assertMemoryType(value: unknown): MemoryType {
  if (!isMemoryType(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid type ${JSON.stringify(value)}: use one of ${MEMORY_TYPES.join(', ')}.`,
    );
  }
  return value;
}

export function assertImportance(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new EngramError('INVALID_INPUT', `Invalid importance ${JSON.stringify(value)}: use a number from 0 to 1.`);
  }
  return value;
}

export function assertMemoryId(value: unknown): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid memory id ${JSON.stringify(typeof value === 'string' ? value.slice(0, 80) : value)}: 1-128 characters of letters, digits, ".", "_", ":" or "-".`,
    );
  }
  return value;
}

export function assertName(value: unknown, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS): string {
  if (typeof value !== 'string' || value.length > limits.maxNameLength || !NAME_PATTERN.test(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid name ${JSON.stringify(typeof value === 'string' ? value.slice(0, 80) : value)}: a slug of lowercase letters, digits, ".", "_" or "-", at most ${limits.maxNameLength} characters.`,
    );
  }
  return value;
}

export function assertDescription(value: unknown, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new EngramError('INVALID_INPUT', 'Invalid description: one non-empty line of text.');
  }
  if (value.length > limits.maxDescriptionLength) {
    throw new EngramError(
      'INVALID_INPUT',
      `Description too long: at most ${limits.maxDescriptionLength} characters on one line.`,
    );
  }
  if (LINE_CONTROL.test(value)) {
    throw new EngramError('INVALID_INPUT', 'Invalid description: one line, without control characters.');
  }
  refuseLoneSurrogate(value, 'description');
  return value;
}

export function assertContent(value: unknown, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new EngramError('INVALID_INPUT', 'Invalid content: a non-empty string of text.');
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > limits.maxContentBytes) {
    throw new EngramError(
      'PAYLOAD_TOO_LARGE',
      `Content is ${bytes} bytes; a memory holds at most ${limits.maxContentBytes} bytes. Store one fact per memory.`,
    );
  }
  if (CONTENT_CONTROL.test(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      'Invalid content: control characters other than tab and newline are not allowed.',
    );
  }
  refuseLoneSurrogate(value, 'content');
  return value;
}

export function assertTimestamp(value: unknown, field: string): string {
  if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) {
    throw new EngramError('INVALID_INPUT', `Invalid ${field} ${JSON.stringify(value)}: use an ISO-8601 date-time.`);
  }
  return new Date(value).toISOString();
}

function assertSource(value: unknown): MemorySource | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      'Invalid source: an object with optional sessionId, turnId and origin strings.',
    );
  }
  const source: MemorySource = {};
  for (const key of Object.keys(value)) {
    if (key !== 'sessionId' && key !== 'turnId' && key !== 'origin') {
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid source field ${JSON.stringify(key)}: use sessionId, turnId or origin.`,
      );
    }
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined || field === null) continue;
    if (typeof field !== 'string' || field.length > 200 || LINE_CONTROL.test(field) || LONE_SURROGATE.test(field)) {
      throw new EngramError('INVALID_INPUT', `Invalid source.${key}: a string of at most 200 characters.`);
    }
    source[key] = field;
  }
  return Object.keys(source).length === 0 ? null : source;
}

/** Derives a slug name from free text: the first few words, lowercase, joined by dashes. */
export function deriveName(text: string, maxLength = DEFAULT_MEMORY_LIMITS.maxNameLength): string {
  const words = text
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9\s-]/g, ' ')
    .split(/\s+/)
    .filter((word) => word.length > 0)
    .slice(0, 6);
  let name = words.join('-').replace(/-+/g, '-').replace(/^-|-$/g, '');
  if (name.length > maxLength) name = name.slice(0, maxLength).replace(/-[^-]*$/, '') || name.slice(0, maxLength);
  return name.length > 0 ? name : 'memory';
}

/** Derives a one-line description: the first line of the content, cut at about 150 characters. */
export function deriveDescription(content: string, maxLength = 150): string {
  const firstLine =
    content
      .split('\n')
      .map((line) => line.replace(/^#+\s*/, '').trim())
      .find((line) => line.length > 0) ?? content.trim();
  const clean = firstLine.replace(/[\u0000-\u001F\u007F-\u009F]/g, ' ');
  return clean.length <= maxLength ? clean : `${clean.slice(0, maxLength - 1).trimEnd()}…`;
}

/**
 * Validates a new memory and fills its defaults, refusing invalid values with a clear error.
 * `now` and `id` come from the caller so this module never reads a clock or a random source.
 */
export function normalizeNewMemory(
  input: NewMemory,
  context: { now: string; id: string; limits?: MemoryLimits },
): Memory {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new EngramError('INVALID_INPUT', 'A memory is an object with at least scope and content.');
  }
  const limits = context.limits ?? DEFAULT_MEMORY_LIMITS;
  // Privacy before anything else (SPEC §3): no private text or secret is validated, derived from or
  // stored, whichever surface or backend wrote it (see src/privacy/memory-privacy.ts). A value the
  // write path's pass already checked (Engram.save) is not scanned again.
  if (!isPrivacyChecked(input)) input = sanitizeMemoryFields(input, { maxContentChars: limits.maxContentBytes }).value;
  const content = assertContent(input.content, limits);
  const createdAt = input.createdAt === undefined ? context.now : assertTimestamp(input.createdAt, 'createdAt');
  const memory: Memory = {
    id: input.id === undefined ? context.id : assertMemoryId(input.id),
    scope: assertScope(input.scope),
    type: input.type === undefined ? DEFAULT_MEMORY_TYPE : assertMemoryType(input.type),
    name: input.name === undefined ? deriveName(content, limits.maxNameLength) : assertName(input.name, limits),
    description:
      input.description === undefined ? deriveDescription(content) : assertDescription(input.description, limits),
    content,
    importance: input.importance === undefined ? DEFAULT_IMPORTANCE : assertImportance(input.importance),
    source: assertSource(input.source),
    createdAt,
    updatedAt: input.updatedAt === undefined ? createdAt : assertTimestamp(input.updatedAt, 'updatedAt'),
    lastAccessedAt:
      input.lastAccessedAt === undefined || input.lastAccessedAt === null
        ? null
        : assertTimestamp(input.lastAccessedAt, 'lastAccessedAt'),
    hitCount: input.hitCount === undefined ? 0 : assertCount(input.hitCount),
    validFrom: input.validFrom === undefined ? createdAt : assertTimestamp(input.validFrom, 'validFrom'),
    invalidAt:
      input.invalidAt === undefined || input.invalidAt === null ? null : assertTimestamp(input.invalidAt, 'invalidAt'),
    supersededBy:
      input.supersededBy === undefined || input.supersededBy === null ? null : assertMemoryId(input.supersededBy),
    archived: input.archived === undefined ? false : assertBoolean(input.archived, 'archived'),
  };
  return memory;
}

/** Validates a patch; returns only the fields it sets. Unknown fields are refused. */
export function normalizePatch(patch: MemoryPatch, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS): MemoryPatch {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    throw new EngramError('INVALID_INPUT', 'An update is an object of fields to change.');
  }
  const allowed = new Set(['type', 'name', 'description', 'content', 'importance', 'source']);
  for (const key of Object.keys(patch)) {
    if (!allowed.has(key)) {
      throw new EngramError(
        'INVALID_INPUT',
        `Field ${JSON.stringify(key)} cannot be updated; updatable fields: ${[...allowed].join(', ')}.`,
      );
    }
  }
  const out: MemoryPatch = {};
  if (!isPrivacyChecked(patch)) patch = sanitizeMemoryFields(patch, { maxContentChars: limits.maxContentBytes }).value;
  if (patch.type !== undefined) out.type = assertMemoryType(patch.type);
  if (patch.name !== undefined) out.name = assertName(patch.name, limits);
  if (patch.description !== undefined) out.description = assertDescription(patch.description, limits);
  if (patch.content !== undefined) out.content = assertContent(patch.content, limits);
  if (patch.importance !== undefined) out.importance = assertImportance(patch.importance);
  if (patch.source !== undefined) out.source = assertSource(patch.source);
  return out;
}

/**
 * A merge's patch (dedupe on write) as the store receives it: when the new memory came out of the
 * write path's privacy pass and every text field of the patch is that memory's own, or the name or
 * description derived from its content (as `normalizeNewMemory` derives them, without another
 * pass), the patch is marked checked too, so the store does not scan the same text again. Any
 * other patch is returned as it is, for the store to check.
 */
export function patchOfCheckedMemory(patch: MemoryPatch, checked: NewMemory, limits: MemoryLimits): MemoryPatch {
  if (!isPrivacyChecked(checked) || typeof checked.content !== 'string') return patch;
  const content = checked.content;
  const drawn = (value: unknown, ...allowed: Array<() => unknown>): boolean =>
    value === undefined || allowed.some((candidate) => candidate() === value);
  const own =
    drawn(patch.content, () => content) &&
    drawn(
      patch.name,
      () => checked.name,
      () => deriveName(content, limits.maxNameLength),
    ) &&
    drawn(
      patch.description,
      () => checked.description,
      () => deriveDescription(typeof patch.content === 'string' ? patch.content : content),
    );
  return own ? markPrivacyChecked(patch) : patch;
}

function assertCount(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new EngramError('INVALID_INPUT', `Invalid hitCount ${JSON.stringify(value)}: a whole number from 0.`);
  }
  return value;
}

function assertBoolean(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new EngramError('INVALID_INPUT', `Invalid ${field}: true or false.`);
  return value;
}

/** Days since the memory's fact was last written (updatedAt): the age shown in age notes and used for staleness. */
export function memoryAgeDays(memory: Pick<Memory, 'updatedAt'>, now: string): number {
  return Math.max(0, (Date.parse(now) - Date.parse(memory.updatedAt)) / 86_400_000);
}
