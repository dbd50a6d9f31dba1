import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { CommitInput, RemoteBlob, RemoteChange, RemoteEntry, SyncRemote } from '../sync-remote.js';
import { git, gitFailed, runGit, type GitOptions } from './git-command.js';

/**
 * A sync remote reached through a local cache: a bare repository of engram's own (under
 * `<ENGRAM_HOME>/sync/`) that fetches the remote's branch, builds commits with `git fast-import`
 * (which loads only the trees a change touches) and pushes with `--force-with-lease`, so a push
 * lands only on the commit it was built on. Paths and file contents are read with `ls-tree`,
 * `diff-tree` and `cat-file`; nothing is ever checked out, so no file of the remote touches the disk
 * as a file.
 */

export interface GitSyncRemoteOptions {
  /** The cache: a bare repository, made on first use. */
  directory: string;
  url: string;
  branch: string;
  timeoutMs: number;
  /** A person is waiting at a terminal: git may ask for a passphrase or password there. */
  interactive?: boolean;
  /** Names this machine as the author of its commits. */
  machine: string;
  now: () => Date;
  signal?: AbortSignal;
}

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
const BRANCH = /^(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9][A-Za-z0-9._/-]{0,99}(?<![./])$/;
const REMOTE_REF = 'refs/engram/remote';
const STAGING_REF = 'refs/engram/staging';
const BASE_REF = 'refs/engram/base';
const OBJECTS_PER_READ = 5_000;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

export class GitSyncRemote implements SyncRemote {
  readonly #options: GitSyncRemoteOptions;

  constructor(options: GitSyncRemoteOptions) {
    if (!BRANCH.test(options.branch))
      throw new EngramError(
        'CONFIG_INVALID',
        `Invalid sync branch ${JSON.stringify(options.branch.slice(0, 60))} (setting sync.branch).`,
      );
    this.#options = options;
  }

  /** Makes the cache when missing and clears locks a killed git left (the caller holds the sync lock). */
  async open(): Promise<void> {
    const { directory } = this.#options;
    if (!existsSync(join(directory, 'HEAD'))) {
      await mkdir(dirname(directory), { recursive: true, mode: 0o700 });
      await git(['init', '--bare', '--quiet', directory], { timeoutMs: this.#options.timeoutMs });
    }
    await removeStaleLocks(directory);
  }

  async fetch(): Promise<string | undefined> {
    const { url, branch } = this.#options;
    const listed = await runGit(['ls-remote', '--', url, `refs/heads/${branch}`], this.#network());
    if (listed.code !== 0) throw gitFailed(['ls-remote'], listed, 'REMOTE_UNAVAILABLE');
    const line = listed.stdout.toString('utf8').split('\n')[0] ?? '';
    const tip = /^([0-9a-f]{40,64})\t/.exec(line)?.[1];
    if (tip === undefined) {
      await runGit(['update-ref', '-d', REMOTE_REF], this.#local());
      return undefined;
    }
    if (await this.has(tip)) {
      await git(['update-ref', REMOTE_REF, tip], this.#local());
      return tip;
    }
    const fetched = await runGit(
      ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--', url, `+refs/heads/${branch}:${REMOTE_REF}`],
      this.#network(),
    );
    if (fetched.code !== 0) throw gitFailed(['fetch'], fetched, 'REMOTE_UNAVAILABLE');
    // The branch may have moved since ls-remote: the fetched commit is the tip.
    return (await git(['rev-parse', '--verify', `${REMOTE_REF}^{commit}`], this.#local())).toString('utf8').trim();
  }

  async has(commit: string): Promise<boolean> {
    if (!OBJECT_ID.test(commit)) return false;
    return (await runGit(['cat-file', '-e', `${commit}^{commit}`], this.#local())).code === 0;
  }

  async list(commit: string): Promise<RemoteEntry[]> {
    return parseTreeListing(await git(['ls-tree', '-r', '-z', '--full-tree', checkId(commit)], this.#local()));
  }

  async diff(from: string, to: string): Promise<RemoteChange[]> {
    const output = await git(
      ['diff-tree', '-r', '-z', '--no-renames', '--no-commit-id', '--raw', checkId(from), checkId(to)],
      this.#local(),
    );
    const changes: RemoteChange[] = [];
    const parts = splitNul(output);
    for (let index = 0; index + 1 < parts.length; index += 2) {
      const header = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*$/.exec(parts[index]!.toString('latin1'));
      if (!header) throw new EngramError('STORE_ERROR', 'git diff-tree printed a line engram cannot read.');
      const { path, unreadable } = decodePath(parts[index + 1]!);
      const removed = header[5] === 'D';
      changes.push({
        path,
        ...(unreadable && { unreadableName: true }),
        ...(!removed && {
          entry: { path, mode: header[2]!, object: header[4]!, ...(unreadable && { unreadableName: true }) },
        }),
      });
    }
    return changes;
  }

  async entries(commit: string, paths: readonly string[]): Promise<Map<string, RemoteEntry>> {
    const found = new Map<string, RemoteEntry>();
    if (paths.length === 0) return found;
    const output = await git(['ls-tree', '-z', '--full-tree', checkId(commit), '--', ...paths], this.#local());
    for (const entry of parseTreeListing(output)) if (!entry.unreadableName) found.set(entry.path, entry);
    return found;
  }

  async read(objects: readonly string[], maxBytes: number): Promise<Map<string, RemoteBlob>> {
    const blobs = new Map<string, RemoteBlob>();
    for (let start = 0; start < objects.length; start += OBJECTS_PER_READ) {
      const chunk = objects.slice(start, start + OBJECTS_PER_READ).map(checkId);
      const checked = (await git(['cat-file', '--batch-check'], { ...this.#local(), input: `${chunk.join('\n')}\n` }))
        .toString('utf8')
        .split('\n');
      const readable: string[] = [];
      for (const line of checked) {
        const match = /^([0-9a-f]+) (\w+) (\d+)$/.exec(line);
        if (!match) continue;
        const [, object, type, size] = match;
        if (type !== 'blob') blobs.set(object!, { problem: `a ${type}, not a file` });
        else if (Number(size) > maxBytes)
          blobs.set(object!, { problem: `${size} bytes, over the ${maxBytes} a memory file may have` });
        else readable.push(object!);
      }
      if (readable.length === 0) continue;
      const output = await git(['cat-file', '--batch'], { ...this.#local(), input: `${readable.join('\n')}\n` });
      let offset = 0;
      while (offset < output.length) {
        const headerEnd = output.indexOf(10, offset);
        if (headerEnd < 0) break;
        const header = /^([0-9a-f]+) blob (\d+)$/.exec(output.subarray(offset, headerEnd).toString('latin1'));
        if (!header) throw new EngramError('STORE_ERROR', 'git cat-file printed a header engram cannot read.');
        const size = Number(header[2]);
        const body = output.subarray(headerEnd + 1, headerEnd + 1 + size);
        try {
          blobs.set(header[1]!, { text: UTF8.decode(body) });
        } catch {
          blobs.set(header[1]!, { problem: 'not UTF-8 text' });
        }
        offset = headerEnd + 1 + size + 1;
      }
    }
    return blobs;
  }

  async commit(input: CommitInput): Promise<string> {
    const { name, email, seconds } = this.#author();
    if (input.parent === undefined) await runGit(['update-ref', '-d', STAGING_REF], this.#local());
    const parts: Buffer[] = [];
    const text = (value: string): void => void parts.push(Buffer.from(value, 'utf8'));
    const data = (value: string): void => {
      const bytes = Buffer.from(value, 'utf8');
      text(`data ${bytes.length}\n`);
      parts.push(bytes);
      text('\n');
    };
    text(`commit ${STAGING_REF}\n`);
    text(`author ${name} <${email}> ${seconds} +0000\n`);
    text(`committer ${name} <${email}> ${seconds} +0000\n`);
    data(input.message);
    if (input.parent !== undefined) text(`from ${checkId(input.parent)}\n`);
    for (const path of input.deletes) text(`D ${checkPath(path)}\n`);
    for (const [path, content] of input.writes) {
      text(`M 100644 inline ${checkPath(path)}\n`);
      data(content);
    }
    text('\ndone\n');
    await git(['fast-import', '--quiet', '--force', '--done'], { ...this.#local(), input: Buffer.concat(parts) });
    const commit = (await git(['rev-parse', '--verify', `${STAGING_REF}^{commit}`], this.#local()))
      .toString('utf8')
      .trim();
    if (!input.root) return commit;
    // The same tree with no parent: nothing before it stays reachable from the branch.
    const tree = (await git(['rev-parse', '--verify', `${commit}^{tree}`], this.#local())).toString('utf8').trim();
    const date = `${seconds} +0000`;
    const root = (
      await git(['commit-tree', '--no-gpg-sign', '-F', '-', checkId(tree)], {
        ...this.#local(),
        input: input.message,
        env: {
          GIT_AUTHOR_NAME: name,
          GIT_AUTHOR_EMAIL: email,
          GIT_AUTHOR_DATE: date,
          GIT_COMMITTER_NAME: name,
          GIT_COMMITTER_EMAIL: email,
          GIT_COMMITTER_DATE: date,
        },
      })
    )
      .toString('utf8')
      .trim();
    await git(['update-ref', STAGING_REF, checkId(root)], this.#local());
    return root;
  }

  async push(commit: string, expected: string | undefined): Promise<'pushed' | 'rejected'> {
    const { url, branch } = this.#options;
    const ref = `refs/heads/${branch}`;
    const run = await runGit(
      ['push', '--porcelain', `--force-with-lease=${ref}:${expected ?? ''}`, '--', url, `${checkId(commit)}:${ref}`],
      this.#network(),
    );
    if (run.code === 0) return 'pushed';
    const said = `${run.stdout.toString('utf8')}\n${run.stderr}`;
    if (
      /stale info|fetch first|non-fast-forward|\[rejected\]|cannot lock ref|failed to update ref|reference already exists/i.test(
        said,
      )
    )
      return 'rejected';
    throw gitFailed(['push'], run, 'REMOTE_UNAVAILABLE');
  }

  async keep(commit: string): Promise<void> {
    await git(['update-ref', BASE_REF, checkId(commit)], this.#local());
  }

  async scrub(): Promise<void> {
    const refs = (await git(['for-each-ref', '--format=%(refname)'], this.#local())).toString('utf8').split('\n');
    for (const ref of refs) if (ref !== '' && ref !== BASE_REF) await git(['update-ref', '-d', ref], this.#local());
    for (const file of ['FETCH_HEAD', 'ORIG_HEAD']) await rm(join(this.#options.directory, file), { force: true });
    await git(['reflog', 'expire', '--expire=now', '--all'], this.#local());
    await git(['gc', '--prune=now', '--quiet'], this.#local());
  }

  /** Packs the cache when fetches and commits have left many small packs or loose objects. */
  async maintain(): Promise<void> {
    const counts = (await git(['count-objects', '-v'], this.#local())).toString('utf8');
    const loose = Number(/^count: (\d+)/m.exec(counts)?.[1] ?? 0);
    const packs = Number(/^packs: (\d+)/m.exec(counts)?.[1] ?? 0);
    if (loose > 4_000 || packs > 25) await git(['gc', '--quiet'], this.#local());
  }

  #author(): { name: string; email: string; seconds: number } {
    const machine = this.#options.machine.replace(/[<>\n\r\u0000]/g, '').slice(0, 80) || 'unknown';
    return {
      name: `engram (${machine})`,
      email: 'engram@localhost',
      seconds: Math.floor(this.#options.now().getTime() / 1000),
    };
  }

  #local(): GitOptions {
    return {
      gitDir: this.#options.directory,
      timeoutMs: this.#options.timeoutMs,
      ...(this.#options.signal && { signal: this.#options.signal }),
    };
  }

  #network(): GitOptions {
    return { ...this.#local(), ...(this.#options.interactive && { interactive: true }) };
  }
}

function checkId(id: string): string {
  if (!OBJECT_ID.test(id))
    throw new EngramError('STORE_ERROR', `Not a git object id: ${JSON.stringify(id.slice(0, 80))}.`);
  return id;
}

// fast-import reads a path up to the end of its line; a path engram writes never holds a newline or starts with a quote.
function checkPath(path: string): string {
  if (/[\n\r\u0000]/.test(path) || path.startsWith('"') || path.startsWith('/') || path.split('/').includes('..'))
    throw new EngramError('INTERNAL', `A sync path engram would not write: ${JSON.stringify(path.slice(0, 120))}.`);
  return path;
}

function splitNul(output: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let index = output.indexOf(0, start); index >= 0; index = output.indexOf(0, start)) {
    parts.push(output.subarray(start, index));
    start = index + 1;
  }
  return parts;
}

function decodePath(bytes: Buffer): { path: string; unreadable: boolean } {
  try {
    return { path: UTF8.decode(bytes), unreadable: false };
  } catch {
    return { path: `<not UTF-8: ${bytes.toString('hex').slice(0, 200)}>`, unreadable: true };
  }
}

function parseTreeListing(output: Buffer): RemoteEntry[] {
  const entries: RemoteEntry[] = [];
  for (const record of splitNul(output)) {
    const tab = record.indexOf(9);
    const header = /^(\d{6}) (\w+) ([0-9a-f]+)$/.exec(record.subarray(0, tab).toString('latin1'));
    if (tab < 0 || !header) throw new EngramError('STORE_ERROR', 'git ls-tree printed a line engram cannot read.');
    const { path, unreadable } = decodePath(record.subarray(tab + 1));
    entries.push({ path, mode: header[1]!, object: header[3]!, ...(unreadable && { unreadableName: true }) });
  }
  return entries;
}

/** Lock files a git process killed mid-write left behind; only engram uses this repository, and it holds the sync lock. */
async function removeStaleLocks(directory: string): Promise<void> {
  const visit = async (folder: string, depth: number): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(folder);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(folder, name);
      if (name.endsWith('.lock')) await rm(path, { force: true });
      else if (depth > 0 && (await stat(path).catch(() => undefined))?.isDirectory()) await visit(path, depth - 1);
    }
  };
  await visit(directory, 0);
  await visit(join(directory, 'refs'), 6);
}
