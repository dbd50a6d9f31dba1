import { EngramError } from '../kernel/errors.js';

/** The four scope kinds of SPEC §3. */
export const SCOPE_KINDS = ['global', 'user', 'project', 'session'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

/** A scope string: `global`, `user:<id>`, `project:<id>` or `session:<id>`. */
export type Scope = string;

export const MAX_SCOPE_ID_LENGTH = 300;

// Printable ASCII without whitespace, quotes, backslash or control characters: enough for
// slugs, git remotes (`github.com/acme/app`) and percent-encoded absolute paths.
const SCOPE_ID_PATTERN = /^[A-Za-z0-9._~:/@+%=!,$&*;-]+$/;

export interface ParsedScope {
  kind: ScopeKind;
  id?: string;
}

/** Parses and validates a scope string; throws INVALID_SCOPE with the accepted forms. */
export function parseScope(value: unknown): ParsedScope {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalidScope(value);
  }
  if (value === 'global') return { kind: 'global' };
  const colon = value.indexOf(':');
  if (colon <= 0) throw invalidScope(value);
  const kind = value.slice(0, colon);
  const id = value.slice(colon + 1);
  if (kind !== 'user' && kind !== 'project' && kind !== 'session') throw invalidScope(value);
  if (id.length === 0 || id.length > MAX_SCOPE_ID_LENGTH || !SCOPE_ID_PATTERN.test(id)) {
    throw invalidScope(value);
  }
  return { kind, id };
}

/** Returns the scope unchanged if valid; throws INVALID_SCOPE otherwise. */
export function assertScope(value: unknown): Scope {
  parseScope(value);
  return value as Scope;
}

// A comma splits a list only where the next scope starts, so an id that holds a comma (a folder
// named "a,b") stays whole. The one parser of scope lists: CLI flags and REST query strings alike.
const SCOPE_LIST_SEPARATOR = /,(?=\s*(?:global\s*(?:,|$)|user:|project:|session:))/;

/**
 * Parses a comma-separated list of scopes ("project:x,global"), each validated, repeats dropped,
 * in order. An empty list or an empty item is INVALID_SCOPE: a list that names nothing is a mistake.
 */
export function parseScopeList(text: string): Scope[] {
  if (typeof text !== 'string' || text.trim() === '')
    throw new EngramError('INVALID_SCOPE', 'Name at least one scope, or leave the scope out.');
  const scopes = text.split(SCOPE_LIST_SEPARATOR).map((part) => part.trim());
  if (scopes.some((scope) => scope === ''))
    throw new EngramError('INVALID_SCOPE', `The scope list ${JSON.stringify(text.slice(0, 200))} has an empty item.`);
  return [...new Set(scopes.map((scope) => assertScope(scope)))];
}

export function isScope(value: unknown): value is Scope {
  try {
    parseScope(value);
    return true;
  } catch {
    return false;
  }
}

/** Builds a scope of a kind from any id, percent-encoding characters a scope id may not hold. */
export function makeScope(kind: Exclude<ScopeKind, 'global'>, rawId: string): Scope {
  const id = encodeScopeId(rawId);
  return assertScope(`${kind}:${id}`);
}

export function encodeScopeId(rawId: string): string {
  let out = '';
  for (const character of rawId) {
    out += /[A-Za-z0-9._~:/@+=!,$&*;-]/.test(character)
      ? character
      : encodeURIComponent(character).replace(/'/g, '%27');
  }
  return out.slice(0, MAX_SCOPE_ID_LENGTH);
}

function invalidScope(value: unknown): EngramError {
  const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 80)) : String(value);
  return new EngramError(
    'INVALID_SCOPE',
    `Invalid scope ${shown}: use "global", "user:<id>", "project:<id>" or "session:<id>" (id: 1-${MAX_SCOPE_ID_LENGTH} printable characters, no spaces or quotes).`,
  );
}
