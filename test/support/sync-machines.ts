import { afterEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Memory } from '../../src/memory/memory.js';
import { openEngram, type OpenedEngram } from '../../src/node/open-engram.js';
import { syncStore, type SyncReport } from '../../src/sync/node/sync-store.js';

/** One "machine": its own ENGRAM_HOME, SQLite store and working directory, all sharing one project id. */
export interface Machine {
  name: string;
  home: string;
  cwd: string;
  env: Record<string, string>;
  open(extra?: Record<string, string>): Promise<OpenedEngram>;
  /** Opens, runs `work`, closes. */
  with<T>(work: (opened: OpenedEngram) => Promise<T>, extra?: Record<string, string>): Promise<T>;
  sync(options?: { accept?: boolean; env?: Record<string, string> }): Promise<SyncReport>;
}

export interface SyncWorld {
  root: string;
  /** A bare repository on disk: the machines' personal remote unless `remote` was given. */
  remote: string;
  machines: Machine[];
  cleanup(): void;
}

/** Makes a bare repository on disk. */
export function bareRepository(path: string): string {
  execFileSync('git', ['init', '--bare', '--quiet', path]);
  return path;
}

/** A bare repository and `count` machines whose personal remote it is (or `remote`). */
export function makeSyncWorld(
  count: number,
  options: { remote?: string; env?: Record<string, string>; now?: () => Date } = {},
): SyncWorld {
  const root = mkdtempSync(join(tmpdir(), 'engram-sync-'));
  const remote = bareRepository(join(root, 'remote.git'));
  const machines: Machine[] = [];
  for (let index = 0; index < count; index += 1) {
    const name = `m${index + 1}`;
    const home = join(root, name, 'home');
    const cwd = join(root, name, 'work');
    mkdirSync(home, { recursive: true });
    mkdirSync(cwd, { recursive: true });
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: join(root, name),
      ENGRAM_HOME: home,
      ENGRAM_PROJECT: 'demo',
      ENGRAM_SYNC_REMOTE: options.remote ?? remote,
      ENGRAM_SYNC_MACHINE: name,
      ENGRAM_MODEL_PROVIDER: 'none',
      ...options.env,
    };
    const open = (extra: Record<string, string> = {}): Promise<OpenedEngram> =>
      openEngram({ cwd, env: { ...env, ...extra }, actor: `cli-${name}`, ...(options.now && { now: options.now }) });
    const machine: Machine = {
      name,
      home,
      cwd,
      env,
      open,
      async with(work, extra) {
        const opened = await open(extra);
        try {
          return await work(opened);
        } finally {
          await opened.close();
        }
      },
      sync: (syncOptions = {}) =>
        machine.with(
          (opened) =>
            syncStore({
              opened,
              cwd,
              acceptProjectRemote: syncOptions.accept ?? true,
              onWarning: () => undefined,
              ...(options.now && { now: options.now }),
            }),
          syncOptions.env,
        ),
    };
    machines.push(machine);
  }
  return { root, remote, machines, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** How long a test that runs several machines' syncs may take. */
export const SYNC_TEST_TIMEOUT = 120_000;

/** The sync world of the current test, cleaned up after it. */
export interface SyncWorlds {
  /** Makes the test's world ({@link makeSyncWorld}). */
  make(count: number, options?: Parameters<typeof makeSyncWorld>[1]): SyncWorld;
  /** Makes the test's world of three machines and gives them. */
  three(): [Machine, Machine, Machine];
  /** The world the current test made. */
  readonly current: SyncWorld;
}

/** Registers the `afterEach` that cleans up the world each test makes with {@link SyncWorlds.make}. */
export function useSyncWorlds(): SyncWorlds {
  let world: SyncWorld | undefined;
  afterEach(() => {
    world?.cleanup();
    world = undefined;
  });
  return {
    make(count, options) {
      world = makeSyncWorld(count, options);
      return world;
    },
    three() {
      return this.make(3).machines as [Machine, Machine, Machine];
    },
    get current() {
      if (world === undefined) throw new Error('no sync world: the test has not made one');
      return world;
    },
  };
}

/** Object ids of a repository whose content holds `text`: every object reachable from a ref, or (`all`) every object stored. */
export function objectsHolding(gitDir: string, text: string, options: { all?: boolean } = {}): string[] {
  const ids = options.all
    ? execFileSync('git', ['--git-dir', gitDir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], {
        maxBuffer: 1 << 30,
      })
        .toString()
        .split('\n')
        .filter(Boolean)
    : execFileSync('git', ['--git-dir', gitDir, 'rev-list', '--all', '--objects'], { maxBuffer: 1 << 30 })
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ')[0]!);
  if (ids.length === 0) return [];
  const output = execFileSync('git', ['--git-dir', gitDir, 'cat-file', '--batch'], {
    input: `${ids.join('\n')}\n`,
    maxBuffer: 1 << 30,
  });
  const found: string[] = [];
  let offset = 0;
  while (offset < output.length) {
    const end = output.indexOf(10, offset);
    const [id, , size] = output.subarray(offset, end).toString().split(' ');
    const body = output.subarray(end + 1, end + 1 + Number(size));
    if (body.includes(text)) found.push(id!);
    offset = end + 1 + Number(size) + 1;
  }
  return found;
}

/** The commits of the remote's branch, newest first. */
export function remoteLog(gitDir: string, branch = 'engram'): string[] {
  try {
    return execFileSync('git', ['--git-dir', gitDir, 'rev-list', branch], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

/** The caches (bare repositories) a machine keeps under its home. */
export function cachesOf(home: string): string[] {
  const folder = join(home, 'sync');
  try {
    return execFileSync('ls', [folder])
      .toString()
      .split('\n')
      .filter((name) => name.endsWith('.git'))
      .map((name) => join(folder, name));
  } catch {
    return [];
  }
}

/** Remembers a memory on a machine (opened and closed around it). */
export async function rememberOn(machine: Machine, content: string, extra: Partial<Memory> = {}): Promise<Memory> {
  return machine.with((opened) => opened.engram.remember({ content, ...extra }));
}

/** A memory as a machine's store holds it. */
export async function memoryOn(machine: Machine, id: string): Promise<Memory | undefined> {
  return machine.with((opened) => opened.engram.store.get(id));
}

/** The report of a sync with one remote, which must have synced. */
export function syncedReport(report: SyncReport) {
  const outcome = report.remotes[0]!;
  if (outcome.status !== 'synced') throw new Error(`not synced: ${JSON.stringify(outcome)}`);
  return outcome.report;
}
