import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/node/load-settings.js';
import { storeFingerprint } from '../../../src/surfaces/claude-code/hook-queue.js';
import {
  appendSpoolEntry,
  claimSpool,
  spoolFolder,
  spoolPath,
  type SpoolEntry,
} from '../../../src/surfaces/claude-code/hook-spool.js';
import {
  isWorkerRunning,
  takeWorkerLock,
  WORKER_LOCK_STALE_MS,
} from '../../../src/surfaces/claude-code/hook-worker-lock.js';
import { drainSpool, retryDelayMs } from '../../../src/surfaces/claude-code/spool-drain.js';

// The spool's edges: hooks appending while drainers claim (in separate processes, as they run),
// a worker lock a killed worker left, and a store that stays unavailable.
const SPOOL_MODULE = pathToFileURL(
  resolve(
    dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    '..',
    'dist',
    'surfaces',
    'claude-code',
    'hook-spool.js',
  ),
).href;

function runNode(script: string, env: Record<string, string>): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? done(out) : fail(new Error(`exit ${code}`))));
  });
}

function entry(sessionId: string, cwd: string, store = 'abc'): SpoolEntry {
  return { v: 1, event: 'Stop', sessionId, cwd, store, at: new Date().toISOString() };
}

function spoolLines(home: string): SpoolEntry[] {
  return readFileSync(spoolPath(home), 'utf8')
    .split('\n')
    .filter((text) => text !== '')
    .map((text) => JSON.parse(text) as SpoolEntry);
}

describe('the spool under races and failures', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'engram-spool-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('loses no line that hooks append while drainers claim: two writers and a claimer, each its own process', async () => {
    const home = join(root, 'home');
    const perWriter = 1_500;
    const writer = (name: string): string => `
      const { appendSpoolEntry } = await import(${JSON.stringify(SPOOL_MODULE)});
      for (let i = 0; i < ${perWriter}; i += 1)
        appendSpoolEntry(process.env.SPOOL_HOME, { v: 1, event: 'Stop', sessionId: '${name}-' + i, cwd: '/', store: 'abc', at: new Date().toISOString() });`;
    const claimer = `
      const { claimSpool, finishClaim } = await import(${JSON.stringify(SPOOL_MODULE)});
      const { existsSync } = await import('node:fs');
      const seen = [];
      const stop = Date.now() + 60_000;
      while (!existsSync(process.env.SPOOL_HOME + '/writers-done') && Date.now() < stop) {
        for (const claim of claimSpool(process.env.SPOOL_HOME)) {
          for (const entry of claim.entries) seen.push(entry.sessionId);
          finishClaim(claim);
        }
      }
      for (const claim of claimSpool(process.env.SPOOL_HOME)) {
        for (const entry of claim.entries) seen.push(entry.sessionId);
        finishClaim(claim);
      }
      process.stdout.write(JSON.stringify(seen));`;
    mkdirSync(spoolFolder(home), { recursive: true });
    const env = { SPOOL_HOME: home };
    const claimed = runNode(claimer, env);
    await Promise.all([runNode(writer('a'), env), runNode(writer('b'), env)]);
    writeFileSync(join(home, 'writers-done'), '');
    const seen = new Set(JSON.parse(await claimed) as string[]);
    const missing: string[] = [];
    for (const name of ['a', 'b'])
      for (let i = 0; i < perWriter; i += 1) if (!seen.has(`${name}-${i}`)) missing.push(`${name}-${i}`);
    // A line may be claimed twice (queued twice adds nothing); none may be missing.
    expect(missing).toEqual([]);
  }, 120_000);

  it('a worker lock left untouched by a killed worker does not stop later hooks from starting one', () => {
    const home = join(root, 'home');
    mkdirSync(spoolFolder(home), { recursive: true });
    // A lock naming a live process that is not a worker (the pid reused): pid 1 is always alive.
    const lock = join(spoolFolder(home), 'worker-abc.pid');
    writeFileSync(lock, '1');
    expect(isWorkerRunning(home, 'abc')).toBe(true); // Just touched: a worker that runs.
    const old = new Date(Date.now() - WORKER_LOCK_STALE_MS - 5_000);
    utimesSync(lock, old, old);
    expect(isWorkerRunning(home, 'abc')).toBe(false);
    expect(takeWorkerLock(home, 'abc')).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(String(process.pid));
  });

  it('an event the store cannot take waits longer after each try instead of being given up within seconds', async () => {
    const home = join(root, 'home');
    const project = join(root, 'project');
    mkdirSync(project);
    const env = { ...process.env, ENGRAM_HOME: home, HOME: root };
    const loaded = loadSettings({ cwd: project, env });
    // The store's path is a folder: the store cannot open (as when it is locked or unreachable).
    mkdirSync(loaded.settings.store.url, { recursive: true });
    appendSpoolEntry(home, entry('s1', project, storeFingerprint(loaded.settings.store.url)));

    const first = await drainSpool({ home, env });
    expect(first).toMatchObject({ claimed: 1, queued: 0, putBack: 1, dropped: 0 });
    const [after] = spoolLines(home);
    expect(after!.attempts).toBe(1);
    expect(Date.parse(after!.after!) - Date.now()).toBeGreaterThan(retryDelayMs(1) - 2_000);

    // Drains every second (serve) within the wait do not try it again, and do not give it up.
    for (let round = 0; round < 12; round += 1)
      expect(await drainSpool({ home, env })).toMatchObject({ putBack: 1, dropped: 0 });
    expect(spoolLines(home).map((line) => line.attempts)).toEqual([1]);
    expect(retryDelayMs(2)).toBe(2 * retryDelayMs(1));
    expect(retryDelayMs(50)).toBe(10 * 60_000);

    // Seven days on, it is given up, and said so.
    const [waiting] = spoolLines(home);
    writeFileSync(
      spoolPath(home),
      `${JSON.stringify({ ...waiting, at: new Date(Date.now() - 8 * 24 * 3_600_000).toISOString() })}\n`,
    );
    expect(await drainSpool({ home, env })).toMatchObject({ dropped: 1, putBack: 0 });
    expect(claimSpool(home).flatMap((claim) => claim.entries)).toEqual([]);
  });
});
