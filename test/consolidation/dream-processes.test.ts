import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import { readDreamState } from '../../src/consolidation/dream-state.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { buildDreamCorpus } from '../fixtures/dream-corpus.js';
import { snapshot } from './dream-support.js';

const WORKER = fileURLToPath(new URL('../fixtures/dream-worker.mjs', import.meta.url));
let directory: string | undefined;
afterEach(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
  directory = undefined;
});

async function seededPath(): Promise<string> {
  directory = await mkdtemp(join(tmpdir(), 'engram-dream-processes-'));
  const path = join(directory, 'memory.db');
  const store = new SqliteMemoryStore({ path });
  await store.open();
  // Created "now" so the corpus's sessions count as new sessions since the (never) last run.
  const corpus = buildDreamCorpus().memories.map(
    ({ createdAt: _createdAt, lastAccessedAt: _accessed, ...memory }) => memory,
  );
  await store.importMany(corpus, { onExisting: 'fail' }, { actor: 'seed' });
  await store.close();
  return path;
}

function start(
  path: string,
  mode: 'automatic' | 'hang',
): { child: ChildProcess; output: Promise<string>; line: (text: string) => Promise<void> } {
  const child = spawn(process.execPath, [WORKER, path, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const waiter of waiters) if (stdout.includes(waiter.text)) waiter.resolve();
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const output = new Promise<string>((resolve, reject) =>
    child.on('exit', (code, signal) =>
      code === 0 || signal === 'SIGKILL' ? resolve(stdout) : reject(new Error(`worker exited ${code}: ${stderr}`)),
    ),
  );
  const line = (text: string): Promise<void> =>
    new Promise((resolve) => (stdout.includes(text) ? resolve() : waiters.push({ text, resolve })));
  return { child, output, line };
}

describe('dreams across processes', () => {
  it('two processes starting a dream at once: one runs, one skips', async () => {
    const path = await seededPath();
    const [a, b] = [start(path, 'automatic'), start(path, 'automatic')];
    const results = (await Promise.all([a.output, b.output])).map((text) =>
      JSON.parse(text.trim().split('\n').at(-1)!),
    );
    expect(results.map((result) => result.status).sort()).toEqual(['applied', 'skipped']);
    // The loser skips on the lock, or on a time gate the winner already moved: its scan mark
    // (scanned-recently) or its finished run (too-soon), depending on when it looked.
    expect(['locked', 'scanned-recently', 'too-soon']).toContain(
      results.find((result) => result.status === 'skipped').skipped,
    );
  }, 60_000);

  it('SIGKILL mid-run leaves the store as it was and the lock is taken over by the next dream', async () => {
    const path = await seededPath();
    const store = new SqliteMemoryStore({ path });
    await store.open();
    try {
      const before = await snapshot(store);
      const worker = start(path, 'hang');
      await worker.line('holding');
      expect((await readDreamState(store)).status).toBe('running');
      worker.child.kill('SIGKILL');
      await worker.output;
      expect(await snapshot(store)).toEqual(before);
      const report = await runDream(
        { store, settings: DEFAULT_SETTINGS, now: () => new Date() },
        { trigger: 'manual', scopes: ['project:acme'] },
      );
      expect(report.status).toBe('applied');
      expect((await store.stats()).total).toBe(before.size);
      expect((await readDreamState(store)).status).toBe('done');
    } finally {
      await store.close();
    }
  }, 60_000);
});
