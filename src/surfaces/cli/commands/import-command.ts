import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { readMemoryDirectory } from '../../../memory/node/memory-directory.js';
import { createSortableId } from '../../../kernel/ids.js';
import { EngramError } from '../../../kernel/errors.js';
import { parseJsonl } from '../../../memory/jsonl-format.js';
import type { NewMemory } from '../../../memory/memory.js';
import { singlePositional, stringOption, type CommandDefinition } from '../cli-command.js';
import { scopeOption, withEngram, writeScope } from '../cli-engram.js';
import { oneLine } from '../table-format.js';

const ON_EXISTING = ['skip', 'replace', 'fail'] as const;
type OnExisting = (typeof ON_EXISTING)[number];
const IMPORT_ACTOR = 'import';
const MAX_LISTED_PROBLEMS = 20;
/** The largest JSON Lines file import reads (it is read whole, then validated whole). */
const MAX_IMPORT_BYTES = 256 * 1024 * 1024;

/** `engram import`: load memories from a JSON Lines file or a Claude Code memory directory. */
export const importCommand: CommandDefinition = {
  name: 'import',
  summary: 'Load memories from a JSON Lines file or a Claude Code memory directory',
  usage: 'import <file.jsonl | memory-dir> [--on-existing skip|replace|fail] [--scope <scope>] [options]',
  options: {
    'on-existing': {
      type: 'string',
      valueName: ON_EXISTING.join('|'),
      description: 'What to do with ids already in the store (default skip)',
    },
    scope: { type: 'string', valueName: 'scope', description: 'Put every imported memory into this scope' },
    'keep-scopes': { type: 'boolean', description: 'Keep the scopes the file names, even other projects or global' },
    strict: {
      type: 'boolean',
      description:
        'JSON Lines: import nothing when any line is invalid (default: import the valid lines, list the rest)',
    },
  },
  details:
    'Without --scope or --keep-scopes, every memory must belong to the current project, so a file cannot plant memories in global or in another project. A JSON Lines file: invalid lines (not JSON, an empty or missing field…) are listed with their numbers and the valid ones are imported; control characters in text are replaced with a warning; --strict imports nothing when any line is invalid. A memory directory is all or nothing: if any topic file is invalid, nothing is imported and the files are listed. Each imported memory gets one "create" history entry with actor "import".',
  async run(invocation) {
    const { values } = invocation;
    const path = resolve(invocation.io.cwd, singlePositional(invocation, 'path'));
    const onExisting = (stringOption(values, 'on-existing') ?? 'skip') as OnExisting;
    if (!ON_EXISTING.includes(onExisting)) {
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid --on-existing ${JSON.stringify(String(onExisting).slice(0, 40))}: use ${ON_EXISTING.join(', ')}.`,
      );
    }
    // The path is the user's own: a symlink to a file or directory is followed like any path.
    const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
      throw new EngramError(
        error.code === 'ENOENT' ? 'NOT_FOUND' : 'INVALID_INPUT',
        `Cannot import ${path} (${error.code ?? 'error'}).`,
        { cause: error },
      );
    });
    if (!info.isDirectory() && !info.isFile()) {
      throw new EngramError('INVALID_INPUT', `Cannot import ${path}: not a regular file or a directory.`);
    }
    if (info.isFile() && info.size > MAX_IMPORT_BYTES) {
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `${path} is ${info.size} bytes; import reads at most ${MAX_IMPORT_BYTES} bytes. Split the file.`,
      );
    }
    return withEngram(invocation, async (opened) => {
      const limits = opened.loaded.settings.memory;
      let inputs: NewMemory[];
      let warnings: string[];
      let invalidLines: Array<{ line: number; message: string }> = [];
      const kind = info.isDirectory() ? 'claude' : 'jsonl';
      if (kind === 'claude') {
        const read = await readMemoryDirectory(path, {
          scope: writeScope(values, opened),
          now: new Date().toISOString(),
          generateId: () => createSortableId('mem'),
        });
        if (read.errors.length > 0) {
          throw problems(
            `${read.errors.length} topic file(s) in ${path} are invalid`,
            read.errors.map((error) => `${error.file}: ${error.message}`),
          );
        }
        inputs = read.memories;
        warnings = read.warnings;
      } else {
        const text = await readText(path);
        const explicitScope = scopeOption(values);
        const parsed = parseJsonl(explicitScope ? withDefaultScope(text, writeScope(values, opened)) : text, {
          limits,
        });
        if (parsed.errors.length > 0 && (values.strict === true || parsed.memories.length === 0)) {
          throw problems(
            `${parsed.errors.length} invalid line(s) in ${path} (line${parsed.errors.length === 1 ? '' : 's'} ${parsed.errors
              .map((error) => error.line)
              .slice(0, MAX_LISTED_PROBLEMS)
              .join(', ')})`,
            parsed.errors.map((error) => `line ${error.line}: ${error.message}`),
          );
        }
        invalidLines = parsed.errors.map(({ line, message }) => ({ line, message }));
        inputs = parsed.memories.map((entry) => entry.input);
        warnings = [
          ...parsed.warnings,
          ...(parsed.others.length > 0
            ? [`Ignored ${parsed.others.length} line(s) of other kinds than "memory".`]
            : []),
        ];
      }
      inputs = applyScopePolicy(
        inputs,
        scopeOption(values) === undefined ? undefined : writeScope(values, opened),
        opened.loaded.project.scope,
        values['keep-scopes'] === true,
      );
      const { written: _written, ...report } = await opened.engram.importMemories(inputs, {
        onExisting,
        actor: IMPORT_ACTOR,
      });
      const data = { path, format: kind, ...report, invalidLines, warnings };
      const text = [
        `Imported from ${path}: ${report.created} created, ${report.replaced} replaced, ${report.skipped} skipped (already present)${invalidLines.length > 0 ? `, ${invalidLines.length} invalid line(s) left out` : ''}.`,
        ...invalidLines.slice(0, MAX_LISTED_PROBLEMS).map((entry) => `  line ${entry.line}: ${oneLine(entry.message)}`),
        ...(invalidLines.length > MAX_LISTED_PROBLEMS
          ? [`  … and ${invalidLines.length - MAX_LISTED_PROBLEMS} more (all in --json)`]
          : []),
        ...warnings.map((warning) => `warning: ${warning}`),
      ].join('\n');
      return { data, text };
    });
  },
};

async function readText(path: string): Promise<string> {
  let buffer: Buffer;
  try {
    buffer = await readFile(path);
  } catch (error) {
    throw new EngramError(
      'INVALID_INPUT',
      `Cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      { cause: error },
    );
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw new EngramError('INVALID_INPUT', `${path} is not UTF-8 text; nothing was imported.`);
  }
}

/**
 * An imported file names its own scopes. Unless the user says so, they must all be the current
 * project: a shared or downloaded file must not reach global (every project's prompts) or others.
 */
function applyScopePolicy(
  inputs: NewMemory[],
  explicitScope: string | undefined,
  projectScope: string,
  keepScopes: boolean,
): NewMemory[] {
  if (explicitScope !== undefined) return inputs.map((input) => ({ ...input, scope: explicitScope }));
  if (keepScopes) return inputs;
  const foreign = [...new Set(inputs.map((input) => input.scope).filter((scope) => scope !== projectScope))];
  if (foreign.length > 0) {
    throw new EngramError(
      'INVALID_INPUT',
      `The import holds memories of other scopes than ${projectScope} (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', …' : ''}); pass --keep-scopes to import them there, or --scope to put everything into one scope. Nothing was imported.`,
    );
  }
  return inputs;
}

function problems(headline: string, details: readonly string[]): EngramError {
  const listed = details
    .slice(0, MAX_LISTED_PROBLEMS)
    .map((detail) => `  ${detail.replace(/[\u0000-\u001F\u007F-\u009F]+/g, ' ')}`);
  const more = details.length > MAX_LISTED_PROBLEMS ? [`  … and ${details.length - MAX_LISTED_PROBLEMS} more`] : [];
  return new EngramError('INVALID_INPUT', [`${headline}; nothing was imported:`, ...listed, ...more].join('\n'), {
    details: { problems: details },
  });
}

/** Gives memory lines that name no scope the one from --scope; line numbers stay as they were. */
function withDefaultScope(text: string, scope: string): string {
  return text
    .split('\n')
    .map((line) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        return line;
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return line;
      const record = value as Record<string, unknown>;
      if (
        (record.kind !== undefined && record.kind !== 'memory') ||
        (record.scope !== undefined && record.scope !== null)
      )
        return line;
      return JSON.stringify({ ...record, scope });
    })
    .join('\n');
}
