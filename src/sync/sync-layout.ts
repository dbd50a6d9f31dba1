import { createHash } from 'node:crypto';
import { EngramError } from '../kernel/errors.js';
import { assertMemoryId, assertTimestamp, type Memory, type MemoryLimits } from '../memory/memory.js';
import { parseMemoryFileWithMetadata, renderMemoryFile } from '../memory/memory-file.js';
import { assertScope, parseScope, type Scope } from '../memory/scope.js';
import { FIELD_GROUPS, type FieldGroup, type FieldTimes, type SyncedMemory } from './sync-fields.js';

/**
 * The layout of a sync remote: plain files a person can read and review in any git host.
 *
 *   engram-sync.json                              the format, so an older engram refuses a newer one
 *   README.md                                     what this repository is
 *   memories/<scope folder>/<shard>/<id>.md       one topic file per memory (engram's Markdown form)
 *   tombstones/<scope folder>/<shard>/<id>.json   a deleted or purged memory: id, scope, when; no text
 *   change-sets/<change set id>.json              a dream's change set: which memories, when; no text
 *
 * A scope folder is `global`, `user/<id>` or `project/<id>` (the id percent-encoded into one path
 * segment); the shard is two hex digits of the id's SHA-256, so no folder holds more than a few
 * hundred files and a one-memory commit rewrites three small trees, whatever the store's size.
 * Every path read back is parsed strictly: the remote is untrusted input.
 */

export const SYNC_FORMAT = 1;
export const FORMAT_FILE = 'engram-sync.json';
export const README_FILE = 'README.md';

/** What a path of the remote holds. */
export type LayoutPath =
  | { kind: 'memory'; scope: Scope; id: string }
  | { kind: 'tombstone'; scope: Scope; id: string }
  | { kind: 'change-set'; id: string }
  | { kind: 'format' }
  | { kind: 'readme' };

/** A deleted or purged memory as the remote keeps it: never any of its text. */
export interface Tombstone {
  id: string;
  scope: Scope;
  kind: 'delete' | 'purge';
  at: string;
}

/** A dream's change set as the remote keeps it: its memories' ids and the time their new states carry. */
export interface RemoteChangeSet {
  id: string;
  actor: string;
  stampedAt: string;
  memories: string[];
}

// Kept as they are in a path segment: what is safe in a file name on every system git runs on.
const SAFE_SEGMENT = /[A-Za-z0-9._~@+=!,$&;-]/;
const CHANGE_SET_ID = /^cs_[0-9a-z]{22}$/;
const SHARD = /^[0-9a-f]{2}$/;
/** Largest tombstone, change set or format file read back. */
export const MAX_SMALL_FILE_BYTES = 64 * 1024;
const MAX_CHANGE_SET_MEMORIES = 100_000;

/** A scope id as one path segment: percent-encoded, never `.`-led, decoded back to itself only. */
export function encodeSegment(value: string): string {
  let out = '';
  for (const character of value)
    out += SAFE_SEGMENT.test(character)
      ? character
      : [...Buffer.from(character, 'utf8')]
          .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
          .join('');
  return out.startsWith('.') ? `%2E${out.slice(1)}` : out;
}

function decodeSegment(segment: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return undefined;
  }
  // One spelling per value, so two paths never name the same memory.
  return encodeSegment(decoded) === segment ? decoded : undefined;
}

/** The folder of a scope on the remote; sessions never reach it. */
export function scopeFolder(scope: Scope): string {
  const parsed = parseScope(scope);
  if (parsed.kind === 'global') return 'global';
  if (parsed.kind === 'session') throw new EngramError('INTERNAL', 'Session scopes are never synced.');
  return `${parsed.kind}/${encodeSegment(parsed.id!)}`;
}

/** Two hex digits of the id's SHA-256. */
export function shardOf(id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 2);
}

export function memoryPath(scope: Scope, id: string): string {
  return `memories/${scopeFolder(scope)}/${shardOf(id)}/${encodeSegment(id)}.md`;
}

export function tombstonePath(scope: Scope, id: string): string {
  return `tombstones/${scopeFolder(scope)}/${shardOf(id)}/${encodeSegment(id)}.json`;
}

export function changeSetPath(id: string): string {
  return `change-sets/${id}.json`;
}

/** What a path of the remote holds, or why it is not part of the layout. */
export function parseLayoutPath(path: string): LayoutPath | { rejected: string } {
  if (path === FORMAT_FILE) return { kind: 'format' };
  if (path === README_FILE) return { kind: 'readme' };
  const parts = path.split('/');
  if (parts[0] === 'change-sets') {
    const match = parts.length === 2 ? /^(.*)\.json$/.exec(parts[1]!) : null;
    if (!match || !CHANGE_SET_ID.test(match[1]!)) return { rejected: 'not a change set file name' };
    return { kind: 'change-set', id: match[1]! };
  }
  if (parts[0] !== 'memories' && parts[0] !== 'tombstones') return { rejected: 'outside the sync layout' };
  const extension = parts[0] === 'memories' ? '.md' : '.json';
  let scope: Scope;
  let rest: string[];
  if (parts[1] === 'global') {
    scope = 'global';
    rest = parts.slice(2);
  } else if (parts[1] === 'user' || parts[1] === 'project') {
    const id = parts[2] === undefined ? undefined : decodeSegment(parts[2]);
    if (id === undefined) return { rejected: 'the scope folder is not a scope' };
    try {
      scope = assertScope(`${parts[1]}:${id}`);
    } catch {
      return { rejected: 'the scope folder is not a scope' };
    }
    rest = parts.slice(3);
  } else return { rejected: 'not a scope folder (global, user or project)' };
  if (rest.length !== 2 || !SHARD.test(rest[0]!) || !rest[1]!.endsWith(extension))
    return { rejected: `not <shard>/<id>${extension}` };
  const id = decodeSegment(rest[1]!.slice(0, -extension.length));
  if (id === undefined) return { rejected: 'the file name is not a memory id' };
  try {
    assertMemoryId(id);
  } catch {
    return { rejected: 'the file name is not a memory id' };
  }
  if (shardOf(id) !== rest[0]) return { rejected: 'the shard folder does not match the id' };
  return { kind: parts[0] === 'memories' ? 'memory' : 'tombstone', scope, id };
}

/** The topic file of a synced memory: engram's Markdown form, without recall counts, with when each field was last edited. */
export function renderSyncedMemory(synced: SyncedMemory): string {
  const edited: Record<string, string> = {};
  for (const group of FIELD_GROUPS)
    if (synced.fieldTimes[group] !== synced.memory.createdAt) edited[group] = synced.fieldTimes[group];
  return renderMemoryFile(synced.memory, {
    accessCounts: false,
    ...(Object.keys(edited).length > 0 && { extraMetadata: { edited } }),
  });
}

/**
 * Reads a synced topic file, checking it names the memory its path names. Every field is validated
 * (and cleaned by the privacy rules) as any write is; INVALID_INPUT says what is wrong.
 */
export function parseSyncedMemory(
  text: string,
  expected: { scope: Scope; id: string },
  limits?: MemoryLimits,
): SyncedMemory {
  const { memory: parsed, metadata } = parseMemoryFileWithMetadata(text, {
    scope: expected.scope,
    now: '1970-01-01T00:00:00.000Z',
    ...(limits && { limits }),
  });
  for (const field of ['id', 'scope', 'createdAt', 'updatedAt'] as const)
    if (metadata[field] === undefined || metadata[field] === null)
      throw new EngramError('INVALID_INPUT', `The file has no metadata.${field}.`);
  if (parsed.id !== expected.id || parsed.scope !== expected.scope)
    throw new EngramError('INVALID_INPUT', 'The file names another memory or scope than its path does.');
  if (parsed.name === undefined || parsed.description === undefined)
    throw new EngramError('INVALID_INPUT', 'The file has no name or description.');
  const memory: Memory = {
    id: parsed.id,
    scope: parsed.scope,
    type: parsed.type ?? 'project',
    name: parsed.name,
    description: parsed.description,
    content: parsed.content,
    importance: parsed.importance ?? 0.5,
    source: parsed.source ?? null,
    createdAt: parsed.createdAt!,
    updatedAt: parsed.updatedAt!,
    lastAccessedAt: null,
    hitCount: 0,
    validFrom: parsed.validFrom ?? parsed.createdAt!,
    invalidAt: parsed.invalidAt ?? null,
    supersededBy: parsed.supersededBy ?? null,
    archived: parsed.archived ?? false,
  };
  if (Date.parse(memory.updatedAt) < Date.parse(memory.createdAt))
    throw new EngramError('INVALID_INPUT', 'The file was updated before it was created.');
  return { memory, fieldTimes: readFieldTimes(metadata.edited, memory) };
}

function readFieldTimes(value: unknown, memory: Memory): FieldTimes {
  const times = Object.fromEntries(FIELD_GROUPS.map((group) => [group, memory.createdAt])) as FieldTimes;
  if (value === undefined || value === null) return times;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new EngramError('INVALID_INPUT', 'metadata.edited is a mapping of field to time.');
  const created = Date.parse(memory.createdAt);
  const updated = Date.parse(memory.updatedAt);
  for (const [key, raw] of Object.entries(value)) {
    if (!(FIELD_GROUPS as readonly string[]).includes(key))
      throw new EngramError(
        'INVALID_INPUT',
        `metadata.edited names an unknown field ${JSON.stringify(key.slice(0, 40))}.`,
      );
    const at = Date.parse(assertTimestamp(raw, `metadata.edited.${key}`));
    // A field is edited between the memory's creation and its last update: a time outside is clamped.
    times[key as FieldGroup] = new Date(Math.min(updated, Math.max(created, at))).toISOString();
  }
  return times;
}

export function renderTombstone(tombstone: Tombstone): string {
  return `${JSON.stringify({ id: tombstone.id, scope: tombstone.scope, kind: tombstone.kind, at: tombstone.at }, null, 2)}\n`;
}

/** Reads a tombstone, checking it names the memory its path names and holds nothing else. */
export function parseTombstone(text: string, expected: { scope: Scope; id: string }): Tombstone {
  const value = parseSmallJson(text, 'tombstone');
  const keys = Object.keys(value).sort().join(',');
  if (keys !== 'at,id,kind,scope')
    throw new EngramError('INVALID_INPUT', 'A tombstone holds id, scope, kind and at only.');
  if (value.id !== expected.id || value.scope !== expected.scope)
    throw new EngramError('INVALID_INPUT', 'The tombstone names another memory or scope than its path does.');
  if (value.kind !== 'delete' && value.kind !== 'purge')
    throw new EngramError('INVALID_INPUT', 'A tombstone is of kind delete or purge.');
  return { id: expected.id, scope: expected.scope, kind: value.kind, at: assertTimestamp(value.at, 'at') };
}

export function renderChangeSet(changeSet: RemoteChangeSet): string {
  return `${JSON.stringify(
    { id: changeSet.id, actor: changeSet.actor, stampedAt: changeSet.stampedAt, memories: changeSet.memories },
    null,
    2,
  )}\n`;
}

export function parseChangeSet(text: string, expectedId: string): RemoteChangeSet {
  const value = parseSmallJson(text, 'change set');
  if (value.id !== expectedId) throw new EngramError('INVALID_INPUT', 'The change set names another id than its path.');
  if (typeof value.actor !== 'string' || !/^[a-z][a-z0-9-]{0,39}$/.test(value.actor))
    throw new EngramError('INVALID_INPUT', 'A change set names its actor.');
  if (
    !Array.isArray(value.memories) ||
    value.memories.length > MAX_CHANGE_SET_MEMORIES ||
    value.memories.some((id) => typeof id !== 'string')
  )
    throw new EngramError('INVALID_INPUT', 'A change set lists its memory ids.');
  for (const id of value.memories as string[]) assertMemoryId(id);
  return {
    id: expectedId,
    actor: value.actor,
    stampedAt: assertTimestamp(value.stampedAt, 'stampedAt'),
    memories: [...new Set(value.memories as string[])],
  };
}

export function renderFormat(): string {
  return `${JSON.stringify({ format: 'engram-sync', version: SYNC_FORMAT }, null, 2)}\n`;
}

/** The format file's version; REMOTE_INVALID for a file that is not engram's or a newer version. */
export function checkFormat(text: string | undefined): void {
  if (text === undefined) return;
  let value: Record<string, unknown>;
  try {
    value = parseSmallJson(text, 'format file');
  } catch (error) {
    throw new EngramError('REMOTE_INVALID', `The remote's ${FORMAT_FILE} is unreadable: ${(error as Error).message}`);
  }
  if (value.format !== 'engram-sync' || typeof value.version !== 'number')
    throw new EngramError('REMOTE_INVALID', `The remote's ${FORMAT_FILE} is not an engram sync format file.`);
  if (value.version > SYNC_FORMAT)
    throw new EngramError(
      'REMOTE_INVALID',
      `The remote holds sync format ${value.version}; this engram knows ${SYNC_FORMAT}. Upgrade engram on this machine.`,
    );
}

export const README_TEXT = [
  '# engram memories',
  '',
  'This repository is where engram keeps memories in step between machines (`engram sync`). Each',
  'memory is one Markdown file under `memories/` (frontmatter, then the memory itself);',
  '`tombstones/` records deleted and purged memories without their text; `change-sets/` lists what',
  "a consolidation changed together. engram writes every file: change memories with engram's own",
  'commands (`engram edit`, `engram forget`, `engram purge`), then `engram sync`.',
  '',
].join('\n');

function parseSmallJson(text: string, what: string): Record<string, unknown> {
  if (Buffer.byteLength(text, 'utf8') > MAX_SMALL_FILE_BYTES)
    throw new EngramError('INVALID_INPUT', `The ${what} is larger than ${MAX_SMALL_FILE_BYTES} bytes.`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EngramError('INVALID_INPUT', `The ${what} is not JSON.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new EngramError('INVALID_INPUT', `The ${what} is not a JSON object.`);
  return value as Record<string, unknown>;
}
