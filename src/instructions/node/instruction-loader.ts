import { constants } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { InstructionFile, InstructionScope } from '../instruction-format.js';
import { expandGlobs, matchAnyGlob } from '../instruction-globs.js';
import {
  findImports,
  normalizeInstructionText,
  parseRuleFrontmatter,
  stripBlockHtmlComments,
} from '../instruction-rules.js';
import type { Settings } from '../../kernel/settings.js';
import { isSecretPath } from '../../privacy/secret-files.js';

// Reading instruction files once their places are known (instruction-files.ts decides those): each
// file read safely within the limits, its @imports followed only into the folders they may reach,
// rules folders walked, and every problem kept as a warning.

/** How one file comes to be loaded: its scope, who imported it, and what it inherits down the import chain. */
export interface LoadContext {
  scope: InstructionScope;
  importedFrom?: string;
  /** Import depth: 0 for a file found by name, 1 for its imports, and so on. */
  depth: number;
  /** Real paths of the importers above this file, to refuse cycles. */
  chain: readonly string[];
  rule?: { baseDirectory: string };
  /** Inherited by imports of a path-scoped rule: they apply when the rule does. */
  paths?: { paths: string[]; patterns: string[]; baseDirectory: string };
  /** A file found by its well-known name may be absent; an import may not. */
  optional: boolean;
  /** The folders its @imports may reach (see `importRoots`), inherited down the chain. */
  importRoots: ImportRoots;
}

/** Folders an import may reach, and how a refusal names them. */
export interface ImportRoots {
  folders: readonly string[];
  described: string;
}

const SCOPE_NAMES: Record<InstructionScope, string> = {
  managed: 'Managed-policy',
  user: 'User',
  project: 'Project',
  local: 'Local project',
};

/** Loads files one by one, remembering what is loaded and what was refused. */
export class InstructionLoader {
  readonly files: InstructionFile[] = [];
  readonly warnings: string[] = [];
  private readonly loaded = new Set<string>();
  private totalBytes = 0;
  private fileLimitReported = false;
  private unlistedWarnings = 0;
  private readonly realFolders = new Map<string, Promise<string>>();

  constructor(
    private readonly limits: Settings['instructions'],
    private readonly home: string,
    private readonly excludes: readonly string[],
  ) {}

  /** Loads one file and, depth first, what it imports. Problems become warnings, never throws. */
  async load(path: string, context: LoadContext): Promise<void> {
    if (
      context.scope !== 'managed' &&
      this.excludes.length > 0 &&
      matchAnyGlob(this.excludes, path.split(sep).join('/'))
    )
      return;
    const where = context.importedFrom === undefined ? path : `${path} (imported by ${context.importedFrom})`;
    if (this.files.length >= this.limits.maxFiles) {
      if (!this.fileLimitReported)
        this.warn(
          `${where}: more than ${this.limits.maxFiles} instruction files (instructions.maxFiles); this and later files skipped`,
        );
      this.fileLimitReported = true;
      return;
    }
    let info;
    try {
      info = await stat(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (context.optional && (code === 'ENOENT' || code === 'ENOTDIR')) return;
      this.warn(`${where}: ${code === 'ENOENT' ? 'not found' : `unreadable (${describeError(error)})`}; skipped`);
      return;
    }
    if (!info.isFile()) {
      this.warn(`${where}: not a regular file (${kindOf(info)}); skipped`);
      return;
    }
    const real = await realpath(path).catch(() => path);
    if (context.chain.includes(real)) {
      this.warn(`${where}: import cycle (${[...context.chain, real].join(' -> ')}); not loaded again`);
      return;
    }
    if (this.loaded.has(real)) return;
    if (info.size > this.limits.maxFileBytes) {
      this.warn(
        `${where}: ${info.size} bytes, over the ${this.limits.maxFileBytes}-byte limit (instructions.maxFileBytes); skipped`,
      );
      return;
    }
    if (this.totalBytes + info.size > this.limits.maxTotalBytes) {
      this.warn(
        `${where}: instruction files would pass ${this.limits.maxTotalBytes} bytes in all (instructions.maxTotalBytes); skipped`,
      );
      return;
    }
    const read = await readRegularFile(path, this.limits.maxFileBytes);
    if ('problem' in read) {
      this.warn(`${where}: ${read.problem}; skipped`);
      return;
    }
    this.loaded.add(real);
    this.totalBytes += read.bytes.length;
    let text = normalizeInstructionText(read.bytes.toString('utf8'));
    let paths = context.paths;
    if (context.rule) {
      const frontmatter = parseRuleFrontmatter(text);
      for (const warning of frontmatter.warnings) this.warn(`${where}: ${warning}`);
      text = frontmatter.body;
      if (frontmatter.paths) {
        const expanded = expandGlobs(frontmatter.paths, this.limits.maxPathPatterns);
        if (expanded.tooLong > 0)
          this.warn(`${where}: ${expanded.tooLong} paths: pattern(s) longer than any path; ignored`);
        if (expanded.truncated) {
          this.warn(
            `${where}: paths: expands to more than ${this.limits.maxPathPatterns} patterns (instructions.maxPathPatterns); the rest are ignored`,
          );
        }
        paths = { paths: frontmatter.paths, patterns: expanded.patterns, baseDirectory: context.rule.baseDirectory };
      }
    }
    const content = stripBlockHtmlComments(text);
    this.files.push({
      path,
      scope: context.scope,
      content,
      ...(paths && { paths: paths.paths, patterns: paths.patterns, baseDirectory: paths.baseDirectory }),
      ...(context.importedFrom !== undefined && { importedFrom: context.importedFrom }),
    });
    const imports = findImports(content);
    // No file can usefully import more files than may load in all; the rest is not even looked up.
    if (imports.length > this.limits.maxFiles) {
      this.warn(
        `${where}: ${imports.length} @imports, more than ${this.limits.maxFiles} (instructions.maxFiles); only the first ${this.limits.maxFiles} are followed`,
      );
    }
    for (const found of imports.slice(0, this.limits.maxFiles)) {
      const target = this.resolveImport(found.path, path);
      const named = `${target} (imported by ${path}, line ${found.line})`;
      if (context.depth + 1 > this.limits.maxImportDepth) {
        this.warn(
          `${named}: past the import depth limit of ${this.limits.maxImportDepth} (instructions.maxImportDepth); not loaded`,
        );
        continue;
      }
      const refusal = await this.importRefusal(target, context);
      if (refusal !== undefined) {
        this.warn(`${named}: ${refusal}`);
        continue;
      }
      await this.load(target, {
        scope: context.scope,
        importedFrom: path,
        depth: context.depth + 1,
        chain: [...context.chain, real],
        ...(paths && { paths }),
        optional: false,
        importRoots: context.importRoots,
      });
    }
  }

  /**
   * Why an import may not load, or undefined: it must lie (as written and once symlinks are
   * resolved) inside a folder its chain may reach, and not be a file that usually holds secrets.
   * A missing target passes here; `load` reports it.
   */
  private async importRefusal(target: string, context: LoadContext): Promise<string | undefined> {
    const { folders, described } = context.importRoots;
    const outside =
      `outside ${described}; not loaded. ${SCOPE_NAMES[context.scope]} instructions may import only files there; ` +
      'to allow another folder, add it to the setting instructions.allowImportsFrom (folders separated by ":")';
    const secret = 'a file that usually holds secrets (keys, tokens, passwords); instruction imports never load one';
    const lexical = folders.map((folder) => insideOf(folder, target)).filter((inside) => inside !== undefined);
    if (lexical.length === 0) return outside;
    if (lexical.some(isSecretImport)) return secret;
    const real = await realpath(target).catch(() => undefined);
    if (real === undefined) return undefined;
    const realFolders = await Promise.all(folders.map((folder) => this.realFolder(folder)));
    const resolved = realFolders.map((folder) => insideOf(folder, real)).filter((inside) => inside !== undefined);
    if (resolved.length === 0) return `leads through a symbolic link to ${real}, ${outside}`;
    if (resolved.some(isSecretImport)) return `leads through a symbolic link to ${real}, ${secret}`;
    return undefined;
  }

  /** The folders of `instructions.allowImportsFrom`: absolute or ~/ paths; others are reported and ignored. */
  allowedImportFolders(): string[] {
    const folders: string[] = [];
    for (const entry of this.limits.allowImportsFrom.split(delimiter)) {
      const folder = entry.trim();
      if (folder === '') continue;
      if (folder === '~' || folder.startsWith('~/')) folders.push(this.resolveImport(folder, this.home));
      else if (isAbsolute(folder) && !folder.includes('\0')) folders.push(resolve(folder));
      else this.warn(`instructions.allowImportsFrom: ${JSON.stringify(folder)} is not an absolute or ~/ path; ignored`);
    }
    return folders;
  }

  private realFolder(folder: string): Promise<string> {
    let real = this.realFolders.get(folder);
    if (real === undefined) {
      real = realpath(folder).catch(() => folder);
      this.realFolders.set(folder, real);
    }
    return real;
  }

  /** Loads every `*.md` under a rules folder (symlinks followed, each folder once), sorted by path. */
  async loadRules(
    folder: string,
    scope: InstructionScope,
    baseDirectory: string,
    importRoots: ImportRoots,
  ): Promise<void> {
    const files: string[] = [];
    const visited = new Set<string>();
    let entries = 0;
    let stopped = false;
    const walk = async (directory: string): Promise<void> => {
      const real = await realpath(directory).catch(() => undefined);
      if (real === undefined || visited.has(real)) return;
      visited.add(real);
      let names: string[];
      try {
        names = (await readdir(directory)).sort();
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR')
          this.warn(`${directory}: unreadable rules folder (${describeError(error)}); skipped`);
        return;
      }
      for (const name of names) {
        if (stopped) return;
        entries += 1;
        if (entries > this.limits.maxRuleEntries) {
          this.warn(
            `${folder}: more than ${this.limits.maxRuleEntries} entries (instructions.maxRuleEntries); the rest are not read`,
          );
          stopped = true;
          return;
        }
        const path = join(directory, name);
        const info = await stat(path).catch(() => undefined);
        if (info?.isDirectory()) await walk(path);
        else if (name.endsWith('.md')) files.push(path);
      }
    };
    await walk(folder);
    for (const path of files)
      await this.load(path, { scope, depth: 0, chain: [], rule: { baseDirectory }, optional: false, importRoots });
  }

  /** Records a problem; past maxFiles of them (a file importing thousands of missing paths) they are only counted. */
  warn(warning: string): void {
    if (this.warnings.length < this.limits.maxFiles) this.warnings.push(warning);
    else this.unlistedWarnings += 1;
  }

  /** The warnings, with one line counting those not listed. */
  allWarnings(): string[] {
    if (this.unlistedWarnings === 0) return this.warnings;
    return [...this.warnings, `${this.unlistedWarnings} more problems not listed (over instructions.maxFiles)`];
  }

  private resolveImport(written: string, importer: string): string {
    if (written === '~') return this.home;
    if (written.startsWith('~/')) return join(this.home, written.slice(2));
    return isAbsolute(written) ? resolve(written) : resolve(dirname(importer), written);
  }
}

/**
 * Reads a regular file without ever blocking: opened non-blocking (a FIFO swapped in answers at
 * once), checked again on the open descriptor, and read no further than the limit.
 */
async function readRegularFile(path: string, maxBytes: number): Promise<{ bytes: Buffer } | { problem: string }> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { problem: `unreadable (${describeError(error)})` };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { problem: `not a regular file (${kindOf(info)})` };
    const buffer = Buffer.alloc(Math.min(maxBytes, info.size) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) return { problem: `grew past the ${maxBytes}-byte limit while being read` };
    const bytes = buffer.subarray(0, length);
    if (bytes.includes(0)) return { problem: 'binary content (a NUL byte), not text' };
    return { bytes };
  } catch (error) {
    return { problem: `unreadable (${describeError(error)})` };
  } finally {
    await handle.close();
  }
}

/** The folders an import may reach, each once, and how a refusal names them. */
export function importRoots(folders: readonly string[], described: string): ImportRoots {
  return { folders: [...new Set(folders.map((folder) => resolve(folder)))], described };
}

/** The path of `target` relative to `folder` when it lies there, else undefined. */
function insideOf(folder: string, target: string): string | undefined {
  return isInside(folder, target) ? relative(folder, target) : undefined;
}

/** A secret by the sandbox's list (names, secret folders like .ssh), judged relative to the folder it lies in. */
function isSecretImport(relativePath: string): boolean {
  return isSecretPath(relativePath);
}

/** Whether `child` is `parent` or lies under it (lexically). */
export function isInside(parent: string, child: string): boolean {
  const path = relative(parent, child);
  return path === '' || (path !== '..' && !path.startsWith(`..${sep}`) && !isAbsolute(path));
}

function kindOf(info: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSocket(): boolean;
}): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSocket()) return 'a socket';
  return 'not a file';
}

function describeError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ?? (error as Error).message;
}
