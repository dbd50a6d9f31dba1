import { EngramError } from '../../kernel/errors.js';
import { MEMORY_TYPES, assertMemoryType, type Memory, type MemoryType } from '../../memory/memory.js';
import { parseScopeList, type Scope } from '../../memory/scope.js';
import { existsSync } from 'node:fs';
import { openEngram, type OpenedEngram } from '../../node/open-engram.js';
import { parseStoreUrl } from '../../node/open-store.js';
import {
  globalSettingFlags,
  integerOption,
  numberOption,
  stringOptions,
  type CommandInvocation,
  type OptionValues,
} from './cli-command.js';
import type { CliIo } from './cli-io.js';

/** Recorded in history as the actor of changes made from the command line. */
export const CLI_ACTOR = 'cli';

// In cli-command.ts, which loads nothing else: `engram mcp` reads it before its first answer.
export { globalSettingFlags };

/** An invocation of a command that only reads: see `readOnly`. */
export type EngramInvocation = Pick<CommandInvocation, 'global' | 'io'> & { readOnly?: boolean };

/**
 * Marks a command as one that only reads: a SQLite file named by --store that does not exist is
 * NOT_FOUND instead of a new empty store, so a mistyped path says so rather than answering "no memories".
 */
export function readOnly<T extends Pick<CommandInvocation, 'global' | 'io'>>(invocation: T): T & { readOnly: true } {
  return { ...invocation, readOnly: true };
}

/** Opens settings and store for one command, runs `work`, and always closes the store. */
export async function withEngram<T>(
  invocation: EngramInvocation,
  work: (opened: OpenedEngram) => Promise<T>,
): Promise<T> {
  if (invocation.readOnly === true && invocation.global.store !== undefined) assertStoreExists(invocation.global.store);
  const opened = await openEngram({
    cwd: invocation.io.cwd,
    env: invocation.io.env,
    flags: globalSettingFlags(invocation.global),
    actor: CLI_ACTOR,
  });
  try {
    return await work(opened);
  } finally {
    await opened.close();
  }
}

function assertStoreExists(url: string): void {
  const location = parseStoreUrl(url);
  if (location.backend !== 'sqlite' || location.path === ':memory:' || existsSync(location.path)) return;
  throw new EngramError(
    'NOT_FOUND',
    `No store at ${location.path}: a read does not create one. Check --store, or write first (engram remember …) to make it.`,
  );
}

// A scope id may itself hold commas, so a list splits only where the next scope begins.

/** The scopes named by --scope (repeatable, or comma-separated), each validated; undefined when absent. */
export function scopeOption(values: OptionValues): Scope[] | undefined {
  const raw = stringOptions(values, 'scope');
  if (raw.length === 0) return undefined;
  return [...new Set(raw.flatMap((value) => parseScopeList(value)))];
}

/** The one scope a write goes to: --scope, else the current project. */
export function writeScope(values: OptionValues, opened: OpenedEngram): Scope {
  const scopes = scopeOption(values);
  if (scopes === undefined) return opened.loaded.project.scope;
  if (scopes.length !== 1)
    throw new EngramError('INVALID_INPUT', `A write goes to one scope; got ${scopes.length}: ${scopes.join(', ')}.`);
  return scopes[0]!;
}

/** The scopes a read sees: --scope, else the current project and global. */
export function readScopes(values: OptionValues, opened: OpenedEngram): Scope[] {
  return scopeOption(values) ?? [...new Set([opened.loaded.project.scope, 'global'])];
}

/** The types named by --type (repeatable, or comma-separated), validated. */
export function typeOption(values: OptionValues): MemoryType[] | undefined {
  const raw = stringOptions(values, 'type');
  if (raw.length === 0) return undefined;
  return [...new Set(raw.flatMap((value) => value.split(',')).map((type) => assertMemoryType(type.trim())))];
}

/** Help text for the --type flag. */
export const TYPE_NAMES = MEMORY_TYPES.join('|');

/** Reads all of stdin as UTF-8, refusing more than `maxBytes` without buffering the rest. */
export async function readStdin(io: Pick<CliIo, 'stdin'>, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of io.stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buffer.length;
    if (total > maxBytes) {
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `Input on stdin is over ${maxBytes} bytes; a memory holds at most ${maxBytes} bytes. Store one fact per memory.`,
      );
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads one memory the reader may see: NOT_FOUND (saying which scopes were searched) otherwise. */
export async function findMemory(opened: OpenedEngram, id: string, scopes: readonly Scope[]): Promise<Memory> {
  const memory = await opened.engram.find(id, scopes);
  if (!memory) {
    throw new EngramError(
      'NOT_FOUND',
      `No memory with id ${JSON.stringify(id.slice(0, 140))} in ${scopes.join(', ')}. Pass --scope to look in another scope.`,
    );
  }
  return memory;
}

/** The ranking flags recall and inject share: --top-k, --min-score and --type, checked. */
export function recallFlags(values: OptionValues): { topK?: number; minScore?: number; types?: MemoryType[] } {
  const topK = integerOption(values, 'top-k', { min: 1, max: 1000 });
  const minScore = numberOption(values, 'min-score');
  if (minScore !== undefined && (minScore < 0 || minScore > 1)) {
    throw new EngramError('INVALID_INPUT', `Invalid --min-score ${minScore}: a number from 0 to 1.`);
  }
  const types = typeOption(values);
  return { ...(topK !== undefined && { topK }), ...(minScore !== undefined && { minScore }), ...(types && { types }) };
}
