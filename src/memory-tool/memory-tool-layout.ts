import { EngramError } from '../kernel/errors.js';
import { assertName, DEFAULT_MEMORY_LIMITS, type MemoryLimits } from '../memory/memory.js';
import { assignFileNames, MEMORY_INDEX_FILE } from '../memory/memory-index.js';
import { assertScope, parseScope, type Scope } from '../memory/scope.js';
import { MEMORY_ROOT, memoryToolError, type MemoryPath } from './memory-tool-paths.js';

/**
 * Where each visible scope lives under `/memories`: the write scope at the root, every other
 * visible scope in a folder of its own (by default named after its kind: `global`, `user`, …).
 */
export interface MemoryFolder {
  scope: Scope;
  /** The folder's name under the root; empty for the root itself. */
  name: string;
  /** Its canonical path: `/memories` or `/memories/<name>`. */
  path: string;
}

export interface MemoryToolLayout {
  root: MemoryFolder;
  /** The subfolders, sorted by name. */
  folders: MemoryFolder[];
}

export interface MemoryToolLayoutOptions {
  /** Every scope the tool may see and write; the default scope among them. */
  scopes: readonly Scope[];
  /** The scope shown at the root, where `/memories/<name>.md` lives. */
  defaultScope: Scope;
  /** Folder name per scope, overriding the default (the scope's kind). */
  directories?: Readonly<Record<Scope, string>>;
}

/** What a checked path points at. */
export type ResolvedMemoryPath =
  | { kind: 'root'; folder: MemoryFolder }
  | { kind: 'folder'; folder: MemoryFolder }
  | { kind: 'index'; folder: MemoryFolder }
  | { kind: 'file'; folder: MemoryFolder; baseName: string; key: string }
  /** Nothing can be there: a folder that is not a scope's, or a path too deep. */
  | { kind: 'nowhere'; reason: string };

const FOLDER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Places the visible scopes: the default scope at the root, one folder per other scope. */
export function planMemoryToolLayout(options: MemoryToolLayoutOptions): MemoryToolLayout {
  const scopes = [...new Set(options.scopes.map((scope) => assertScope(scope)))];
  const defaultScope = assertScope(options.defaultScope);
  if (!scopes.includes(defaultScope)) {
    throw new EngramError(
      'INVALID_SCOPE',
      `The memory tool's default scope ${JSON.stringify(defaultScope)} must be one of its scopes (${scopes.join(', ')}).`,
    );
  }
  const others = scopes.filter((scope) => scope !== defaultScope);
  const taken = new Map<string, Scope>();
  // Named folders first, so a default name never takes a name the caller chose.
  for (const scope of others) {
    const name = options.directories?.[scope];
    if (name === undefined) continue;
    if (typeof name !== 'string' || !FOLDER_NAME.test(name)) {
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid memory-tool folder name ${JSON.stringify(name)} for ${scope}: lowercase letters, digits, "_" or "-".`,
      );
    }
    const other = taken.get(name);
    if (other !== undefined) {
      throw new EngramError(
        'INVALID_INPUT',
        `Scopes ${other} and ${scope} would share the memory-tool folder "${name}"; give each its own name.`,
      );
    }
    taken.set(name, scope);
  }
  for (const scope of others) {
    if (options.directories?.[scope] !== undefined) continue;
    taken.set(defaultFolderName(scope, taken), scope);
  }
  const folders = [...taken].map(([name, scope]) => ({ scope, name, path: `${MEMORY_ROOT}/${name}` }));
  folders.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { root: { scope: defaultScope, name: '', path: MEMORY_ROOT }, folders };
}

// The scope's kind (`global`, `user`, …); when two visible scopes share a kind, the later ones add a slug of their id.
function defaultFolderName(scope: Scope, taken: ReadonlyMap<string, Scope>): string {
  const { kind, id } = parseScope(scope);
  if (!taken.has(kind)) return kind;
  const slug = (id ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
  const base = `${kind}-${slug}`.slice(0, 56).replace(/[-_]+$/, '');
  let name = base;
  for (let suffix = 2; taken.has(name); suffix += 1) name = `${base}-${suffix}`;
  return name;
}

/** Resolves a checked path against the layout. File names match case-insensitively, with or without `.md`. */
export function resolveMemoryPath(layout: MemoryToolLayout, path: MemoryPath): ResolvedMemoryPath {
  const [first, second, ...rest] = path.segments;
  if (first === undefined) return { kind: 'root', folder: layout.root };
  const folder = layout.folders.find((candidate) => candidate.name === first);
  if (second === undefined) return folder ? { kind: 'folder', folder } : inFolder(layout.root, first);
  if (!folder) return { kind: 'nowhere', reason: `${MEMORY_ROOT}/${first} is not a folder` };
  if (rest.length > 0) return { kind: 'nowhere', reason: `folders inside ${folder.path} do not exist` };
  return inFolder(folder, second);
}

function inFolder(folder: MemoryFolder, baseName: string): ResolvedMemoryPath {
  if (baseName.toLowerCase() === MEMORY_INDEX_FILE.toLowerCase()) return { kind: 'index', folder };
  return { kind: 'file', folder, baseName, key: fileKey(baseName) };
}

/** The key a file name is matched by: lowercase, without a final `.md` (`Notes.MD` and `notes` are one file). */
export function fileKey(baseName: string): string {
  const lower = baseName.toLowerCase();
  return lower.endsWith('.md') ? lower.slice(0, -3) : lower;
}

/**
 * The memory name a new file name stands for: its key, which must be a slug that is shown back
 * under the same file name (so `/memories/<name>.md` finds the memory again). Refuses anything else.
 */
export function nameForFile(baseName: string, shownPath: string, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS): string {
  const key = fileKey(baseName);
  let valid = false;
  try {
    assertName(key, limits);
    // assignFileNames renames what would clash with MEMORY.md or a reserved device name.
    valid = assignFileNames([{ id: 'candidate', name: key, createdAt: '' }]).get('candidate') === `${key}.md`;
  } catch {
    valid = false;
  }
  if (!valid) {
    throw memoryToolError(
      'INVALID_INPUT',
      `Error: Invalid file name in ${shownPath}: the name before .md must be 1-${limits.maxNameLength} lowercase letters, digits, ".", "_" or "-", ` +
        `starting with a letter or digit (not "memory" or a device name such as "con"), e.g. ${MEMORY_ROOT}/user-preferences.md.`,
    );
  }
  return key;
}
