import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The seal an export carries: which memories (id and scope) this user's engram wrote, signed with a
 * key only their ENGRAM_HOME holds. An import trusts the scopes of the sealed memories (the round
 * trip `export --all` → `import` needs no --keep-scopes); a file from anyone else, or a memory
 * added to the folder since, has no valid seal, and its scopes must be the current project's
 * unless the user says otherwise. Pure: the key is read by memory/node/export-key.ts.
 */

/** The seal's file beside the topic files of a memory directory (a dotfile: Claude Code and the reader skip it). */
export const EXPORT_SEAL_FILE = '.engram-export.json';
/** The kind of the JSON Lines line that holds the seal (import skips it as a line of another kind). */
export const EXPORT_SEAL_KIND = 'export-seal';

export interface ExportSeal {
  kind: typeof EXPORT_SEAL_KIND;
  version: 1;
  /** [id, scope] of every memory exported, in id order. */
  entries: Array<[string, string]>;
  /** HMAC-SHA256 of the entries, hex. */
  seal: string;
}

/** Seals the (id, scope) pairs of an export with the home's key. */
export function sealExport(memories: ReadonlyArray<{ id: string; scope: string }>, key: Uint8Array): ExportSeal {
  const entries = memories
    .map((memory): [string, string] => [memory.id, memory.scope])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { kind: EXPORT_SEAL_KIND, version: 1, entries, seal: sign(entries, key) };
}

/**
 * The (id, scope) pairs a seal vouches for, as `id\nscope` strings; empty when there is no key, the
 * value is not a seal, or it was not made with this key (edited, or another user's).
 */
export function sealedEntries(value: unknown, key: Uint8Array | undefined): Set<string> {
  if (!key || value === null || typeof value !== 'object') return new Set();
  const candidate = value as Partial<ExportSeal>;
  if (candidate.kind !== EXPORT_SEAL_KIND || candidate.version !== 1 || typeof candidate.seal !== 'string')
    return new Set();
  const entries = candidate.entries;
  if (
    !Array.isArray(entries) ||
    !entries.every(
      (entry) =>
        Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && typeof entry[1] === 'string',
    )
  )
    return new Set();
  const expected = Buffer.from(sign(entries, key), 'hex');
  const given = Buffer.from(candidate.seal, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return new Set();
  return new Set(entries.map(([id, scope]) => sealedKey(id, scope)));
}

/** The key `sealedEntries` answers for one memory. */
export function sealedKey(id: string, scope: string): string {
  return `${id}\n${scope}`;
}

function sign(entries: ReadonlyArray<readonly [string, string]>, key: Uint8Array): string {
  return createHmac('sha256', key)
    .update(`engram-export-v1\n${JSON.stringify(entries)}`)
    .digest('hex');
}
