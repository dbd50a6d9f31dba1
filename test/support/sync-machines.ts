import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram, type OpenedEngram } from '../../src/node/open-engram.js';
import { syncStore, type SyncReport } from '../../src/sync/node/sync-store.js';

/** One "machine": its own ENGRAM_HOME, store and working directory, all sharing one project id. */
export interface Machine {
  name: string;
  home: string;
  cwd: string;
  env: Record<string, string>;
  open(extra?: Record<string, string>): Promise<OpenedEngram>;
  /** Opens, runs `work`, closes. */
  with<T>(work: (opened: OpenedEngram) => Promise<T>): Promise<T>;
  sync(options?: { accept?: boolean }): Promise<SyncReport>;
}

export interface SyncWorld {
  root: string;
  /** A bare repository on disk. */
  remote: string;
  machines: Machine[];
  cleanup(): void;
}

/** A bare repository and `count` machines whose personal remote it is. */
export function makeSyncWorld(
  count: number,
  options: { remote?: string; env?: Record<string, string> } = {},
): SyncWorld {
  const root = mkdtempSync(join(tmpdir(), 'engram-sync-'));
  const remote = join(root, 'remote.git');
  execFileSync('git', ['init', '--bare', '--quiet', remote]);
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
      openEngram({ cwd, env: { ...env, ...extra }, actor: `cli-${name}` });
    const machine: Machine = {
      name,
      home,
      cwd,
      env,
      open,
      async with(work) {
        const opened = await open();
        try {
          return await work(opened);
        } finally {
          await opened.close();
        }
      },
      sync: (syncOptions = {}) =>
        machine.with((opened) =>
          syncStore({ opened, cwd, acceptProjectRemote: syncOptions.accept ?? true, onWarning: () => undefined }),
        ),
    };
    machines.push(machine);
  }
  return { root, remote, machines, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
