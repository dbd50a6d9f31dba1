import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { readMemoryDirectory } from '../../../memory/node/memory-directory.js';
import { createSortableId } from '../../../kernel/ids.js';
import { EngramError } from '../../../kernel/errors.js';
import { parseJsonl } from '../../../memory/jsonl-format.js';
import { EXPORT_SEAL_FILE, EXPORT_SEAL_KIND, sealedEntries, sealedKey } from '../../../memory/export-seal.js';
import { readExportKey } from '../../../memory/node/export-key.js';
import type { Memory, NewMemory } from '../../../memory/memory.js';
import { planDirectoryImport, type DirectoryImportFile } from '../../../memory/memory-directory-import.js';
import { sanitizeMemoryFields } from '../../../privacy/memory-privacy.js';
import type { Engram } from '../../../engram.js';
import { resolveProjectIdentity } from '../../../node/project-identity.js';
import { findClaudeCodeMemoryDirectory } from '../../claude-code/claude-code-memory-directory.js';
import { singlePositional, stringOption, type CommandDefinition, type CommandInvocation } from '../cli-command.js';
import { scopeOption, withEngram, writeScope } from '../cli-engram.js';
import { oneLine } from '../table-format.js';

const ON_EXISTING = ['skip', 'replace', 'fail'] as const;
type OnExisting = (typeof ON_EXISTING)[number];
const IMPORT_ACTOR = 'import';
const MAX_LISTED_PROBLEMS = 20;
const EXISTING_PAGE = 1_000;
/** The largest JSON Lines file import reads (it is read whole, then validated whole). */
const MAX_IMPORT_BYTES = 256 * 1024 * 1024;

/** `engram import`: load memories from a JSON Lines file or a Claude Code memory directory. */
export const importCommand: CommandDefinition = {
  name: 'import',
  summary: 'Load memories from a JSON Lines file or a Claude Code memory directory',
  usage:
    'import <file.jsonl | memory-dir> [--on-existing skip|replace|fail] [--scope <scope>] [options]   |   import --claude-code',
  options: {
    'on-existing': {
      type: 'string',
      valueName: ON_EXISTING.join('|'),
      description: 'What to do with ids already in the store (default skip)',
    },
    scope: { type: 'string', valueName: 'scope', description: 'Put every imported memory into this scope' },
    'keep-scopes': { type: 'boolean', description: 'Keep the scopes the file names, even other projects or global' },
    'claude-code': {
      type: 'boolean',
      description: "Import this project's Claude Code auto memory (~/.claude/projects/<slug>/memory), read only",
    },
    strict: {
      type: 'boolean',
      description:
        'JSON Lines: import nothing when any line is invalid (default: import the valid lines, list the rest)',
    },
  },
  details:
    'Without --scope or --keep-scopes, every memory must belong to the current project, so a file cannot plant memories in global or in another project. A JSON Lines file: invalid lines (not JSON, an empty or missing field…) are listed with their numbers and the valid ones are imported; control characters in text are replaced with a warning; --strict imports nothing when any line is invalid. A memory directory is all or nothing: if any topic file is invalid, nothing is imported and the files are listed. Each imported memory gets one "create" history entry with actor "import".',
  async run(invocation) {
    const { path, isDirectory, onExisting } = await importTarget(invocation);
    return withEngram(invocation, async (opened) => {
      const source = isDirectory
        ? await readDirectorySource(path, invocation.values, opened)
        : await readJsonlSource(path, invocation.values, opened);
      const report = await importSource(source, invocation.values, onExisting, opened);
      const { invalidLines, warnings } = source;
      const data = { path, format: source.kind, ...report, invalidLines, warnings };
      const text = [
        `Imported from ${path}: ${report.created} created, ${report.replaced} replaced, ${report.updated} updated, ${report.skipped} skipped (already present)${invalidLines.length > 0 ? `, ${invalidLines.length} invalid line(s) left out` : ''}.`,
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

type Opened = Parameters<Parameters<typeof withEngram>[1]>[0];
type Values = CommandInvocation['values'];

/** The command's words checked before the store opens: what to read, and what to do with ids already there. */
async function importTarget(
  invocation: CommandInvocation,
): Promise<{ path: string; isDirectory: boolean; onExisting: OnExisting }> {
  const { values } = invocation;
  const path =
    values['claude-code'] === true && invocation.positionals.length === 0
      ? await claudeCodeDirectory(invocation.io.cwd, invocation.io.env)
      : resolve(invocation.io.cwd, singlePositional(invocation, 'path'));
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
  return { path, isDirectory: info.isDirectory(), onExisting };
}

/** What a file or a memory directory holds, read and checked, before any write. */
interface ImportSource {
  kind: 'claude' | 'jsonl';
  inputs: NewMemory[];
  /** A directory's topic file of each input, in order. */
  files: string[];
  /** The ids this import made up (a topic file carries none). */
  generated: Set<string>;
  warnings: string[];
  invalidLines: Array<{ line: number; message: string }>;
  seal: unknown;
}

/** A Claude Code memory directory: all or nothing (any invalid topic file refuses the whole). */
async function readDirectorySource(path: string, values: Values, opened: Opened): Promise<ImportSource> {
  const generated = new Set<string>();
  const read = await readMemoryDirectory(path, {
    scope: writeScope(values, opened),
    now: new Date().toISOString(),
    generateId: () => {
      const id = createSortableId('mem');
      generated.add(id);
      return id;
    },
  });
  if (read.errors.length > 0) {
    throw problems(
      `${read.errors.length} topic file(s) in ${path} are invalid`,
      read.errors.map((error) => `${error.file}: ${error.message}`),
    );
  }
  return {
    kind: 'claude',
    inputs: read.memories,
    files: read.files,
    generated,
    warnings: read.warnings,
    invalidLines: [],
    seal: await readSealFile(join(path, EXPORT_SEAL_FILE)),
  };
}

/** A JSON Lines file: the valid lines, the invalid ones listed (none at all, or --strict, refuses the whole). */
async function readJsonlSource(path: string, values: Values, opened: Opened): Promise<ImportSource> {
  const text = await readText(path);
  const explicitScope = scopeOption(values);
  const parsed = parseJsonl(explicitScope ? withDefaultScope(text, writeScope(values, opened)) : text, {
    limits: opened.loaded.settings.memory,
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
  const others = parsed.others.filter((other) => other.value.kind !== EXPORT_SEAL_KIND);
  return {
    kind: 'jsonl',
    inputs: parsed.memories.map((entry) => entry.input),
    files: [],
    generated: new Set(),
    warnings: [
      ...parsed.warnings,
      ...(others.length > 0 ? [`Ignored ${others.length} line(s) of other kinds than "memory".`] : []),
    ],
    invalidLines: parsed.errors.map(({ line, message }) => ({ line, message })),
    seal: parsed.others.find((other) => other.value.kind === EXPORT_SEAL_KIND)?.value,
  };
}

/** The writes: scopes checked, a directory matched against what is stored, then one import (and a directory's updates). */
async function importSource(source: ImportSource, values: Values, onExisting: OnExisting, opened: Opened) {
  const { kind, files, generated } = source;
  const inputs = applyScopePolicy(
    source.inputs,
    scopeOption(values) === undefined ? undefined : writeScope(values, opened),
    opened.loaded.project.scope,
    values['keep-scopes'] === true,
    sealedEntries(source.seal, readExportKey(opened.loaded.home, { create: false })),
  );
  // A directory's topic files carry no engram id: they are matched by content and name, so importing it again adds nothing.
  const plan =
    kind === 'claude'
      ? planDirectoryImport(
          inputs.map((memory, index) => ({
            file: files[index] ?? `file ${index + 1}`,
            memory: comparable(memory, opened.engram),
            hasOwnId: memory.id === undefined || !generated.has(memory.id),
          })),
          await existingIn(opened.engram, inputs),
        )
      : undefined;
  const { written: _written, ...imported } = await opened.engram.importMemories(plan ? plan.create : inputs, {
    onExisting,
    actor: IMPORT_ACTOR,
  });
  for (const change of plan?.update ?? []) {
    const scope = inputs[files.indexOf(change.file)]?.scope;
    await opened.engram.update(change.id, change.patch, {
      actor: IMPORT_ACTOR,
      ...(scope !== undefined && { scopes: [scope] }),
    });
  }
  source.warnings.push(...(plan?.notes ?? []));
  return {
    ...imported,
    skipped: imported.skipped + (plan?.unchanged.length ?? 0),
    updated: plan?.update.length ?? 0,
  };
}

/** A memory as the store would keep it (secrets redacted, private blocks removed), so it compares with stored ones; as it is when it cannot be stored (the import then says why). */
function comparable(memory: NewMemory, engram: Engram): NewMemory {
  try {
    return sanitizeMemoryFields(memory, { maxContentChars: engram.settings.memory.maxContentBytes }).value;
  } catch {
    return memory;
  }
}

/** The memories already in the scopes an import writes to, archived ones included (they are still there). */
async function existingIn(engram: Engram, inputs: readonly NewMemory[]): Promise<Memory[]> {
  const found: Memory[] = [];
  for (const scope of new Set(inputs.map((input) => input.scope))) {
    for (let offset = 0; ; offset += EXISTING_PAGE) {
      const page = await engram.list({ scopes: [scope], archived: 'include', limit: EXISTING_PAGE, offset });
      found.push(...page);
      if (page.length < EXISTING_PAGE) break;
    }
  }
  return found;
}

/** This project's Claude Code auto-memory folder (by the git root, as Claude Code names it), or NOT_FOUND saying where it was looked for. */
async function claudeCodeDirectory(cwd: string, env: Record<string, string | undefined>): Promise<string> {
  const found = await findClaudeCodeMemoryDirectory({ projectRoot: resolveProjectIdentity(cwd).root, env });
  if (found.directory) return found.directory;
  throw new EngramError(
    'NOT_FOUND',
    `This project has no Claude Code auto memory at ${found.expected}; pass the memory folder's path instead.`,
  );
}

/** The seal file of an exported folder, parsed; undefined when there is none or it is not JSON (then nothing is sealed). */
async function readSealFile(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

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
 * What this home's own export sealed (memory/export-seal.ts) keeps its scopes: the round trip.
 */
function applyScopePolicy(
  inputs: NewMemory[],
  explicitScope: string | undefined,
  projectScope: string,
  keepScopes: boolean,
  sealed: ReadonlySet<string>,
): NewMemory[] {
  if (explicitScope !== undefined) return inputs.map((input) => ({ ...input, scope: explicitScope }));
  if (keepScopes) return inputs;
  const foreign = [
    ...new Set(
      inputs
        .filter((input) => input.id === undefined || !sealed.has(sealedKey(input.id, input.scope)))
        .map((input) => input.scope)
        .filter((scope) => scope !== projectScope),
    ),
  ];
  if (foreign.length > 0) {
    throw new EngramError(
      'INVALID_INPUT',
      `The import holds memories of other scopes than ${projectScope} (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', …' : ''}); pass --keep-scopes to import them there, or --scope to put everything into one scope (an export this ENGRAM_HOME wrote and sealed needs neither). Nothing was imported.`,
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
