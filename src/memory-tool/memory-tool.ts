import { EngramError, errorKind, isEngramError, type EngramErrorCode } from '../kernel/errors.js';
import type { Memory, MemoryPatch, MemorySource } from '../memory/memory.js';
import { renderMemoryFile } from '../memory/memory-file.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import type { Engram } from '../engram.js';
import type { ToolDefinition } from '../contracts/language-model.js';
import { memoryToolDefinition, type MemoryToolCommand } from '../contracts/memory-tool-definition.js';
import { parseMemoryToolCommand } from './memory-tool-command.js';
import {
  editablePatch,
  editedFilePatch,
  findReplacement,
  newPlaceholderKinds,
  parseNewFile,
} from './memory-tool-edits.js';
import {
  findFile,
  folderIndexText,
  formatListing,
  listFolders,
  readFolder,
  type MemoryFile,
} from './memory-tool-folders.js';
import {
  nameForFile,
  planMemoryToolLayout,
  resolveMemoryPath,
  type MemoryToolLayout,
  type ResolvedMemoryPath,
} from './memory-tool-layout.js';
import { MEMORY_ROOT, memoryToolError, parseMemoryPath } from './memory-tool-paths.js';
import {
  fileLines,
  joinFileLines,
  memoryToolText as text,
  numberedLines,
  numberedView,
  SNIPPET_CONTEXT_LINES,
} from './memory-tool-text.js';

export interface MemoryToolOptions {
  engram: Engram;
  /** The scopes the tool may see and write; default the engram's read scopes. */
  scopes?: readonly Scope[];
  /** The scope at the root of `/memories`; default the engram's default scope (when visible), else the first scope. */
  defaultScope?: Scope;
  /** Folder name per non-default scope; default its kind (`global`, `user`, `project`, `session`). */
  directories?: Readonly<Record<Scope, string>>;
  /** Recorded in history for every change the tool makes; default `memory-tool`. */
  actor?: string;
  /**
   * Where the tool's new memories come from (e.g. the session and turn an extraction helper read):
   * given to every save it makes (origin aside). Edits and renames keep the memory's own source.
   */
  source?: MemorySource;
  /** `create` on an existing file: `overwrite` it (default; Claude treats create as create-or-overwrite) or answer the protocol's error. */
  onExistingFile?: 'overwrite' | 'error';
}

/** The answer to one call, ready for a `tool_result` block (`isError` → `is_error`). */
export interface MemoryToolResult {
  content: string;
  isError: boolean;
  /** The EngramError code of a refusal. */
  code?: EngramErrorCode;
}

/**
 * Anthropic's memory tool (`memory_20250818`) served over engram: each active memory is a Markdown
 * file with YAML frontmatter under `/memories`, the default scope at the root and every other
 * visible scope in a folder of its own. Every write goes through `Engram` (dedupe, history, scope
 * rules); delete archives, so nothing the model does is lost for good.
 * @example
 * const tool = new MemoryTool({ engram });
 * const result = await tool.run({ command: 'view', path: '/memories' });
 */
export class MemoryTool {
  readonly layout: MemoryToolLayout;
  readonly #engram: Engram;
  readonly #settings: Settings;
  readonly #actor: string;
  readonly #source: MemorySource | undefined;
  readonly #onExistingFile: 'overwrite' | 'error';

  constructor(options: MemoryToolOptions) {
    const { engram } = options;
    const scopes = options.scopes ?? engram.readScopes;
    const defaultScope =
      options.defaultScope ?? (scopes.includes(engram.defaultScope) ? engram.defaultScope : scopes[0]);
    if (defaultScope === undefined) throw new EngramError('INVALID_SCOPE', 'The memory tool needs at least one scope.');
    this.layout = planMemoryToolLayout({
      scopes,
      defaultScope,
      ...(options.directories && { directories: options.directories }),
    });
    this.#engram = engram;
    this.#settings = engram.settings;
    this.#actor = options.actor ?? 'memory-tool';
    this.#source = options.source;
    this.#onExistingFile = options.onExistingFile ?? 'overwrite';
  }

  /** Where each scope's files are: a sentence for the system prompt (the native Anthropic tool has no room for it). */
  get instructions(): string {
    const folders = this.layout.folders.map(
      (folder) => `${folder.path}/<name>.md holds memories of scope ${folder.scope}`,
    );
    return (
      [
        `In the memory tool, ${MEMORY_ROOT}/<name>.md holds memories of scope ${this.layout.root.scope}`,
        ...folders,
      ].join('; ') +
      ". Each folder's MEMORY.md is a generated, read-only index; delete forgets a memory (it stays in history); rename keeps a memory in its folder."
    );
  }

  /** The tool for models without a native memory tool; `anthropicNativeTool(definition)` maps it to Anthropic's entry. */
  definition(): ToolDefinition {
    return memoryToolDefinition(this.instructions);
  }

  /**
   * Runs one call. Refusals (bad path, missing file, invalid edit) come back as `isError` results
   * with the protocol's text; a failing store is thrown, since the model cannot fix it.
   */
  async run(input: unknown): Promise<MemoryToolResult> {
    try {
      const command = parseMemoryToolCommand(input, this.#settings.memoryTool.maxFileBytes);
      return { content: await this.#execute(command), isError: false };
    } catch (error) {
      if (isEngramError(error) && ['bad-input', 'not-found', 'conflict'].includes(errorKind(error))) {
        return { content: refusalText(error), isError: true, code: error.code };
      }
      throw error;
    }
  }

  async #execute(command: MemoryToolCommand): Promise<string> {
    switch (command.command) {
      case 'view':
        return this.#view(command.path, command.view_range);
      case 'create':
        return this.#create(command.path, command.file_text);
      case 'str_replace':
        return this.#replace(command.path, command.old_str, command.new_str ?? '');
      case 'insert':
        return this.#insert(command.path, command.insert_line, command.insert_text);
      case 'delete':
        return this.#delete(command.path);
      case 'rename':
        return this.#rename(command.old_path, command.new_path);
    }
  }

  async #view(given: string, range: [number, number] | undefined): Promise<string> {
    const target = this.#resolve(given, 'path');
    if (target.kind === 'root' || target.kind === 'folder') {
      if (range) throw memoryToolError('INVALID_INPUT', `Error: view_range applies to files; ${given} is a directory.`);
      const root = await readFolder(this.#engram, target.folder);
      const subfolders =
        target.kind === 'root'
          ? await Promise.all(this.layout.folders.map((folder) => readFolder(this.#engram, folder)))
          : [];
      return formatListing(
        text.listingHeader(given),
        listFolders(root, subfolders, this.#settings),
        this.#settings.memoryTool.viewMaxChars,
      );
    }
    if (target.kind === 'nowhere') throw memoryToolError('NOT_FOUND', text.viewMissing(given));
    const contents = await readFolder(this.#engram, target.folder);
    if (target.kind === 'index') return this.#viewText(given, folderIndexText(contents, this.#settings), range);
    const file = findFile(contents, target.key);
    if (!file) throw memoryToolError('NOT_FOUND', text.viewMissing(given));
    return this.#viewText(given, renderMemoryFile(file.memory), range);
  }

  #viewText(given: string, fileText: string, range: [number, number] | undefined): string {
    const lines = fileLines(fileText);
    const { maxLines, viewMaxChars } = this.#settings.memoryTool;
    if (lines.length > maxLines) throw memoryToolError('INVALID_INPUT', text.tooManyLines(given, maxLines));
    let [first, last] = range ?? [1, lines.length];
    if (range) {
      const invalid = `Error: Invalid \`view_range\` parameter: [${first}, ${last}].`;
      if (first < 1 || first > lines.length) {
        throw memoryToolError(
          'INVALID_INPUT',
          `${invalid} Its first element \`${first}\` should be within the range of lines of the file: [1, ${lines.length}]`,
        );
      }
      if (last === -1) last = lines.length;
      if (last < first)
        throw memoryToolError(
          'INVALID_INPUT',
          `${invalid} Its second element \`${last}\` should be -1 or larger or equal than its first \`${first}\``,
        );
      last = Math.min(last, lines.length);
    }
    return numberedView(text.fileHeader(given), lines, first, last, viewMaxChars);
  }

  async #create(given: string, fileText: string): Promise<string> {
    const target = this.#resolve(given, 'path');
    if (target.kind === 'root' || target.kind === 'folder') {
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: ${given} is a directory; create a file inside it, e.g. ${target.folder.path}/notes.md.`,
      );
    }
    if (target.kind === 'index') throw readOnly(given);
    if (target.kind === 'nowhere') {
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: Cannot create ${given}: ${target.reason}; memory files live directly in ${this.#folderList()}.`,
      );
    }
    const contents = await readFolder(this.#engram, target.folder);
    const existing = findFile(contents, target.key);
    const parsed = parseNewFile(fileText, given, target.folder.scope, target.baseName, this.#settings);
    if (existing) {
      if (this.#onExistingFile === 'error') throw memoryToolError('CONFLICT', text.createExists(given));
      // Overwriting replaces the file: what the new text leaves out is derived afresh or kept (type, importance).
      await this.#applyPatch(
        existing.memory,
        editablePatch(existing.memory, parsed, { describeAnew: parsed.description === undefined }),
      );
      return text.created(given);
    }
    const name = nameForFile(target.baseName, given, this.#settings.memory);
    const result = await this.#engram.save(
      { ...parsed, scope: target.folder.scope, name, source: { origin: this.#actor } },
      this.#writeOptions(),
    );
    // Secrets were replaced by placeholders on the way in: say so, so the model does not try again.
    const kinds = newPlaceholderKinds(fileText, result.memory.content);
    const redacted =
      kinds.length > 0
        ? `\n(Secrets were replaced by placeholders before storing: ${kinds.join(', ')}. Memory never keeps secrets.)`
        : '';
    if (result.action === 'merged') {
      const before = contents.fileNames.get(result.memory.id);
      const where = before === undefined ? 'an existing memory' : `${target.folder.path}/${before}`;
      return `${text.created(given)}\n(It nearly repeated ${where}, so that memory was updated and now lives at ${given} instead of a duplicate being added.)${redacted}`;
    }
    return `${text.created(given)}${redacted}`;
  }

  async #replace(given: string, oldString: string, newString: string): Promise<string> {
    const file = await this.#existingFile(given, text.editMissing(given));
    const before = renderMemoryFile(file.memory);
    const { at, line } = findReplacement(before, oldString, file.memory, given);
    const updated = await this.#writeBack(
      file,
      given,
      before.slice(0, at) + newString + before.slice(at + oldString.length),
    );
    const lines = fileLines(renderMemoryFile(updated));
    const last = line + newString.split('\n').length - 1 + SNIPPET_CONTEXT_LINES;
    return `${text.edited} ${text.snippetHeader}\n${numberedLines(lines, line - SNIPPET_CONTEXT_LINES, last).join('\n')}`;
  }

  async #insert(given: string, insertLine: unknown, insertText: string): Promise<string> {
    const file = await this.#existingFile(given, text.missing(given));
    const lines = fileLines(renderMemoryFile(file.memory));
    if (
      typeof insertLine !== 'number' ||
      !Number.isSafeInteger(insertLine) ||
      insertLine < 0 ||
      insertLine > lines.length
    ) {
      throw memoryToolError('INVALID_INPUT', text.insertLineInvalid(shortValue(insertLine), lines.length));
    }
    const added = (insertText.endsWith('\n') ? insertText.slice(0, -1) : insertText).split('\n');
    await this.#writeBack(
      file,
      given,
      joinFileLines([...lines.slice(0, insertLine), ...added, ...lines.slice(insertLine)]),
    );
    return text.inserted(given);
  }

  async #delete(given: string): Promise<string> {
    const target = this.#resolve(given, 'path');
    if (target.kind === 'root') throw memoryToolError('INVALID_INPUT', text.deleteRoot);
    if (target.kind === 'folder') {
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: Cannot delete ${given}: it is the folder of scope ${target.folder.scope}, not a file; delete the files in it one by one.`,
      );
    }
    if (target.kind === 'index') throw readOnly(given);
    const file =
      target.kind === 'file' ? findFile(await readFolder(this.#engram, target.folder), target.key) : undefined;
    if (!file || target.kind !== 'file') throw memoryToolError('NOT_FOUND', text.missing(given));
    await this.#engram.forget(file.memory.id, { actor: this.#actor, scopes: [target.folder.scope] });
    return text.deleted(given);
  }

  async #rename(oldGiven: string, newGiven: string): Promise<string> {
    const source = this.#resolve(oldGiven, 'old_path');
    const destination = this.#resolve(newGiven, 'new_path');
    if (source.kind === 'root') throw memoryToolError('INVALID_INPUT', text.renameRoot);
    if (source.kind === 'folder') {
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: Cannot rename ${oldGiven}: it is the folder of scope ${source.folder.scope}, and folders keep their names.`,
      );
    }
    if (source.kind === 'index') throw readOnly(oldGiven);
    if (source.kind === 'nowhere') throw memoryToolError('NOT_FOUND', text.missing(oldGiven));
    const contents = await readFolder(this.#engram, source.folder);
    const file = findFile(contents, source.key);
    if (!file) throw memoryToolError('NOT_FOUND', text.missing(oldGiven));
    if (destination.kind === 'root' || destination.kind === 'folder' || destination.kind === 'index') {
      throw memoryToolError('CONFLICT', text.destinationExists(newGiven));
    }
    if (destination.kind === 'nowhere')
      throw memoryToolError('INVALID_INPUT', `Error: Cannot rename to ${newGiven}: ${destination.reason}.`);
    if (destination.folder.scope !== source.folder.scope) {
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: Cannot move ${oldGiven} to ${destination.folder.path === MEMORY_ROOT ? MEMORY_ROOT : destination.folder.path}: each folder is a scope, and rename keeps a memory in its scope. ` +
          `To move it, view it, create it at ${newGiven} and delete ${oldGiven}.`,
      );
    }
    const taken = findFile(contents, destination.key);
    if (taken && taken.memory.id !== file.memory.id)
      throw memoryToolError('CONFLICT', text.destinationExists(newGiven));
    const name = nameForFile(destination.baseName, newGiven, this.#settings.memory);
    if (name !== file.memory.name)
      await this.#engram.update(file.memory.id, { name }, { actor: this.#actor, scopes: [source.folder.scope] });
    return text.renamed(oldGiven, newGiven);
  }

  /** The file a path names, or the given protocol error: folders and missing files alike "do not exist" for edits. */
  async #existingFile(given: string, missing: string): Promise<MemoryFile> {
    const target = this.#resolve(given, 'path');
    if (target.kind === 'index') throw readOnly(given);
    if (target.kind !== 'file') throw memoryToolError('NOT_FOUND', missing);
    const file = findFile(await readFolder(this.#engram, target.folder), target.key);
    if (!file) throw memoryToolError('NOT_FOUND', missing);
    return file;
  }

  /** Parses an edited file and writes what changed back as an update; fields engram keeps must stay as shown. */
  async #writeBack(file: MemoryFile, given: string, edited: string): Promise<Memory> {
    return this.#applyPatch(file.memory, editedFilePatch(file.memory, given, edited, this.#settings));
  }

  async #applyPatch(memory: Memory, patch: MemoryPatch): Promise<Memory> {
    if (Object.keys(patch).length === 0) return memory;
    return this.#engram.update(memory.id, patch, { actor: this.#actor, scopes: [memory.scope] });
  }

  /** The options of every save: the tool's actor, and its source when it has one (edits keep the memory's own source). */
  #writeOptions(): { actor: string; source?: MemorySource } {
    return { actor: this.#actor, ...(this.#source && { source: this.#source }) };
  }

  #resolve(given: string, field: string): ResolvedMemoryPath {
    return resolveMemoryPath(this.layout, parseMemoryPath(given, field, this.#settings.memoryTool.maxPathLength));
  }

  #folderList(): string {
    return [MEMORY_ROOT, ...this.layout.folders.map((folder) => folder.path)].join(' or ');
  }
}

function readOnly(given: string): EngramError {
  return memoryToolError(
    'INVALID_INPUT',
    `Error: ${given} is an index generated from the memories and cannot be changed; create, edit, rename or delete the topic files instead.`,
  );
}

function refusalText(error: EngramError): string {
  return error.details?.memoryToolText ? error.message : `Error: ${error.message}`;
}

function shortValue(value: unknown): string {
  const shown = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return shown.length > 40 ? `${shown.slice(0, 40)}…` : shown;
}
