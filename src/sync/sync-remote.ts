/**
 * What sync needs from a git remote, through a local cache of it: fetch its branch, read files of a
 * commit, commit changes on top and push them only if nobody pushed meanwhile. `node/git-sync-remote.ts`
 * does it with the user's own `git`; the engine (sync-run.ts) never runs a process itself.
 */

/** One file of a commit's tree. */
export interface RemoteEntry {
  path: string;
  /** git's mode: 100644/100755 a file, 120000 a symlink, 160000 a submodule, 040000 a folder. */
  mode: string;
  object: string;
  /** Set when the path's bytes are not UTF-8 (`path` then shows them escaped): never a layout path. */
  unreadableName?: boolean;
}

/** A path that differs between two commits: its entry in the newer one, none when it was removed. */
export interface RemoteChange {
  path: string;
  entry?: RemoteEntry;
  unreadableName?: boolean;
}

/** A file read back: its text, or why it was not read. */
export type RemoteBlob = { text: string } | { problem: string };

export interface CommitInput {
  /** The commit whose tree the changes apply to, and the new commit's parent (none: an empty tree). */
  parent?: string;
  /** Path → new text. */
  writes: ReadonlyMap<string, string>;
  deletes: readonly string[];
  message: string;
  /** Make the commit a root: the same tree, no parent, so no earlier commit stays reachable from it. */
  root: boolean;
}

export interface SyncRemote {
  /** Fetches the remote's branch into the cache: the commit it points at, undefined when it has none. */
  fetch(): Promise<string | undefined>;
  /** Whether the cache holds a commit (the base of an earlier sync). */
  has(commit: string): Promise<boolean>;
  /** Every file of a commit (folders walked). */
  list(commit: string): Promise<RemoteEntry[]>;
  /** The paths that differ between two commits of the cache. */
  diff(from: string, to: string): Promise<RemoteChange[]>;
  /** The entries of some paths in a commit (paths that are not there are left out). */
  entries(commit: string, paths: readonly string[]): Promise<Map<string, RemoteEntry>>;
  /** Reads files by object id; one over `maxBytes`, not a file or not UTF-8 comes back as its problem. */
  read(objects: readonly string[], maxBytes: number): Promise<Map<string, RemoteBlob>>;
  /** Writes a commit into the cache; returns its id. */
  commit(input: CommitInput): Promise<string>;
  /** Sets the remote's branch to `commit` only if it still points at `expected` (undefined: has none). */
  push(commit: string, expected: string | undefined): Promise<'pushed' | 'rejected'>;
  /** Keeps `commit` as the base of the next sync. */
  keep(commit: string): Promise<void>;
  /** Removes from the cache every object the kept base does not reach (after a purge: old copies go). */
  scrub(): Promise<void>;
}
