import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SPOOL_MAX_BYTES, spoolFolder, spoolPath } from '../../../src/surfaces/claude-code/hook-spool.js';
import { ENGRAM_BINARY, useWorkspace, type Workspace } from '../../support/cli-harness.js';
import { eventually } from '../../support/claude-code-harness.js';
import {
  expectValidOutput,
  line,
  logLines,
  runHook,
  writeTranscript,
  hugeTranscript,
} from '../../support/claude-code-hook-run.js';

// Stop, PreCompact and SessionEnd only append one line to the spool (no store opened, no
// transcript read); the worker, `engram serve` or `engram queue run` move it into the queue.
const DIST = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist');
const NO_WORKER = { ENGRAM_HOOK_WORKER: 'false' };

function spoolLines(workspace: Workspace): Array<Record<string, unknown>> {
  if (!existsSync(spoolPath(workspace.home))) return [];
  return readFileSync(spoolPath(workspace.home), 'utf8')
    .split('\n')
    .filter((text) => text !== '')
    .map((text) => JSON.parse(text));
}

async function contents(workspace: Workspace): Promise<string[]> {
  const list = await workspace.json(['list']);
  return ((list.memories ?? list) as Array<{ content: string }>).map((memory) => memory.content.toLowerCase());
}

describe('the queueing hooks spool', () => {
  const workspace = useWorkspace();

  it('Stop appends one line (file 0600, folder 0700) without opening the store; queue run drains it exactly once', async () => {
    const transcript = writeTranscript(
      workspace.root,
      'sess-a',
      'Remember that the deploy key lives in vault path ops/deploy.',
    );
    const input = line({ session_id: 'sess-a', cwd: workspace.cwd, transcript_path: transcript });
    expect(await runHook(workspace, 'stop', input, NO_WORKER)).toEqual({ code: 0, stdout: '' });
    // Widened by someone else: the next append tightens it first.
    chmodSync(spoolPath(workspace.home), 0o644);
    chmodSync(spoolFolder(workspace.home), 0o755);
    expect(await runHook(workspace, 'pre-compact', input, NO_WORKER)).toEqual({ code: 0, stdout: '' });
    const lines = spoolLines(workspace);
    expect(lines.map((entry) => [entry.event, entry.sessionId, entry.transcriptPath])).toEqual([
      ['Stop', 'sess-a', transcript],
      ['PreCompact', 'sess-a', transcript],
    ]);
    expect(statSync(spoolPath(workspace.home)).mode & 0o777).toBe(0o600);
    expect(statSync(spoolFolder(workspace.home)).mode & 0o777).toBe(0o700);
    // The hook opened no store: none was created in ENGRAM_HOME.
    expect(readdirSync(workspace.home).filter((name) => name.startsWith('engram.db'))).toEqual([]);
    const status = await workspace.json(['status']);
    expect(status.spooled).toBe(2);
    expect((await workspace.run(['status'])).stdout).toMatch(/hook spool\s+2 event/);

    const run = await workspace.json(['queue', 'run']);
    expect(run.spool).toMatchObject({ claimed: 2, queued: 2, putBack: 0, jobs: 1 });
    expect(spoolLines(workspace)).toEqual([]);
    expect((await workspace.json(['queue', 'run'])).spool.claimed).toBe(0);
    const queue = await workspace.json(['queue', '--state', 'pending,running,failed,done']);
    expect(queue.jobs).toHaveLength(1);
    expect((await contents(workspace)).filter((text) => text.includes('ops/deploy'))).toHaveLength(1);
    expect((await workspace.json(['status'])).spooled).toBe(0);
  }, 60_000);

  it('hostile input never spools a partial line: malformed JSON, a missing, relative or huge transcript, a cwd that is gone', async () => {
    const huge = hugeTranscript(workspace);
    const base = { session_id: 'sess-h', cwd: workspace.cwd };
    const cases: Array<[string, string]> = [
      ['stop', '{"session_id": "x", "transcript_path": '],
      ['stop', '"just a string"'],
      ['stop', line({ cwd: workspace.cwd, transcript_path: huge })],
      ['stop', line({ ...base, transcript_path: join(workspace.root, 'missing.jsonl') })],
      ['stop', line({ ...base, transcript_path: 'relative/path.jsonl' })],
      ['stop', line({ ...base, transcript_path: huge })],
      ['pre-compact', line({ ...base, transcript_path: workspace.root })],
      // A session whose first hook names a folder that is gone (a session seen before keeps its folder).
      ['stop', line({ ...base, session_id: 'sess-gone', cwd: join(workspace.root, 'gone'), transcript_path: huge })],
      ['stop', line({ ...base, transcript_path: `/${'p'.repeat(5_000)}` })],
    ];
    for (const [event, input] of cases) expectValidOutput(await runHook(workspace, event, input, NO_WORKER));
    expect(spoolLines(workspace)).toEqual([]);
    // SessionEnd with a huge transcript still counts the session, without the transcript.
    await runHook(workspace, 'session-end', line({ ...base, transcript_path: huge, reason: 'other' }), NO_WORKER);
    expect(spoolLines(workspace).map((entry) => [entry.event, entry.transcriptPath])).toEqual([
      ['SessionEnd', undefined],
    ]);
    const log = logLines(workspace);
    expect(log.some((entry) => /not JSON/.test(entry.message))).toBe(true);
    expect(log.some((entry) => /not a folder/.test(entry.message))).toBe(true);
    expect(log.filter((entry) => /over the/.test(entry.message)).length).toBeGreaterThanOrEqual(2);
    // A turn not queued leaves a trace: a transcript not there (yet), or a folder where the file should be.
    expect(log.some((entry) => /missing\.jsonl is not there \(yet\)/.test(entry.message))).toBe(true);
    expect(log.some((entry) => entry.message.includes(`${workspace.root} is not a file`))).toBe(true);
    // A full spool takes no more: the hook says so and the file does not grow.
    writeFileSync(spoolPath(workspace.home), `${' '.repeat(SPOOL_MAX_BYTES - 10)}\n`);
    const transcript = writeTranscript(workspace.root, 'sess-f', 'Remember that nothing fits.');
    const full = line({ session_id: 'sess-f', cwd: workspace.cwd, transcript_path: transcript });
    // Lost, and said so to the user too (Claude Code shows a Stop hook's systemMessage).
    const lost = await runHook(workspace, 'stop', full, NO_WORKER);
    expect(lost.code).toBe(0);
    expect(JSON.parse(lost.stdout).systemMessage).toMatch(/did not queue the Stop of session sess-f.*spool is full/);
    expect(statSync(spoolPath(workspace.home)).size).toBe(SPOOL_MAX_BYTES - 9);
    expect(logLines(workspace).some((entry) => /spool is full/.test(entry.message))).toBe(true);
    expect(await contents(workspace)).toEqual([]);
  }, 60_000);

  it('a worker killed (SIGKILL) mid-drain loses no event and doubles none: the next drainer takes its claim over', async () => {
    const sessions = ['sess-k1', 'sess-k2', 'sess-k3'];
    for (const session of sessions) {
      const transcript = writeTranscript(
        workspace.root,
        session,
        `Remember that ${session} uses port ${session.slice(-1)}000.`,
      );
      const input = line({ session_id: session, cwd: workspace.cwd, transcript_path: transcript });
      expect((await runHook(workspace, 'stop', input, NO_WORKER)).code).toBe(0);
    }
    // A drainer that dies by SIGKILL right after queueing the first event, before it removes its claim.
    const script = `
      const { drainSpool } = await import(${JSON.stringify(join(DIST, 'surfaces/claude-code/spool-drain.js'))});
      await drainSpool({ home: process.env.ENGRAM_HOME, env: process.env, afterEach: () => process.kill(process.pid, 'SIGKILL') });
    `;
    const killed = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: workspace.home, ENGRAM_HOME: workspace.home },
      encoding: 'utf8',
    });
    expect(killed.signal).toBe('SIGKILL');
    expect(spoolLines(workspace)).toEqual([]);
    const claims = readdirSync(spoolFolder(workspace.home)).filter((name) => name.startsWith('claimed-'));
    expect(claims).toHaveLength(1);
    const partial = await workspace.json(['queue', '--state', 'pending,running,failed,done']);
    expect(partial.jobs).toHaveLength(1);
    expect(partial.spooled).toBe(3);

    const run = await workspace.json(['queue', 'run']);
    expect(run.spool).toMatchObject({ claimed: 3, queued: 3, jobs: 2 });
    // Nothing but the reserve the drainer keeps for a full disk.
    expect(readdirSync(spoolFolder(workspace.home))).toEqual(['reserve']);
    const queue = await workspace.json(['queue', '--state', 'pending,running,failed,done']);
    expect(queue.jobs.map((job: { sessionId: string }) => job.sessionId).sort()).toEqual(sessions);
    const stored = await contents(workspace);
    for (const session of sessions) expect(stored.filter((text) => text.includes(session))).toHaveLength(1);
  }, 60_000);

  it('the worker the hook starts drains the spool; with the worker off, engram serve does', async () => {
    const first = writeTranscript(workspace.root, 'sess-w', 'Remember that the worker drains the spool.');
    await runHook(workspace, 'stop', line({ session_id: 'sess-w', cwd: workspace.cwd, transcript_path: first }));
    await eventually(async () =>
      (await contents(workspace)).some((text) => text.includes('worker drains')) ? true : undefined,
    );
    expect(spoolLines(workspace)).toEqual([]);

    const server = spawn(process.execPath, [ENGRAM_BINARY, 'serve', '--port', '0', '--json'], {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH, HOME: workspace.home, ENGRAM_HOME: workspace.home, ENGRAM_MODEL_PROVIDER: 'none' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise((resolveListening) => server.stdout.once('data', resolveListening));
      const second = writeTranscript(workspace.root, 'sess-s', 'Remember that serve drains the spool too.');
      const input = line({ session_id: 'sess-s', cwd: workspace.cwd, transcript_path: second });
      await runHook(workspace, 'stop', input, NO_WORKER);
      await eventually(async () =>
        (await contents(workspace)).some((text) => text.includes('serve drains')) ? true : undefined,
      );
      expect(spoolLines(workspace)).toEqual([]);
    } finally {
      server.kill('SIGTERM');
      await new Promise((resolveExit) => server.once('exit', resolveExit));
    }
  }, 60_000);

  it('one worker per store: a hook that finds a live one starts none, a dead one is taken over', async () => {
    const transcript = writeTranscript(workspace.root, 'sess-l', 'Remember that one worker runs per store.');
    const input = line({ session_id: 'sess-l', cwd: workspace.cwd, transcript_path: transcript });
    await runHook(workspace, 'stop', input, NO_WORKER);
    const store = String(spoolLines(workspace)[0]!.store);
    const lock = join(spoolFolder(workspace.home), `worker-${store}.pid`);
    // Held by a live process (this test's): the hook spools and starts no worker.
    writeFileSync(lock, String(process.pid));
    await runHook(workspace, 'stop', input);
    await new Promise((resolvePause) => setTimeout(resolvePause, 1_500));
    expect(spoolLines(workspace)).toHaveLength(2);
    // Held by a process that is gone: the next hook's worker takes the lock over and drains both.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(lock, gone.stdout);
    await runHook(workspace, 'stop', input);
    await eventually(async () => (spoolLines(workspace).length === 0 && !existsSync(lock) ? true : undefined));
    expect((await contents(workspace)).filter((text) => text.includes('one worker runs'))).toHaveLength(1);
  }, 60_000);

  it('the queueing path loads no store, recall or extraction module (the bundle and the plain modules)', () => {
    const walk = (entry: string, pattern: RegExp): Set<string> => {
      const seen = new Set<string>();
      const visit = (file: string): void => {
        if (seen.has(file)) return;
        seen.add(file);
        for (const match of readFileSync(file, 'utf8').matchAll(pattern)) {
          const specifier = match[1] ?? match[2]!;
          if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
        }
      };
      visit(entry);
      return seen;
    };
    const folder = join(DIST, 'surfaces', 'claude-code');
    const plain = /^(?:import|export)\s[^;]*?from\s+'([^']+)';|^import\s+'([^']+)';/gm;
    // What every hook loads, and the spool's side that Stop, PreCompact and SessionEnd load on demand (hook-main.ts).
    const modules = [...walk(join(folder, 'hook-main.js'), plain), ...walk(join(folder, 'hook-queue.js'), plain)];
    expect(modules.some((file) => file.endsWith('hook-spool.js'))).toBe(true);
    const forbidden =
      /\/(adapters|recall|extraction|agent|consolidation)\/|open-engram\.js|open-store\.js|claude-code-hooks\.js/;
    expect(modules.filter((file) => forbidden.test(file))).toEqual([]);
    const bundle = join(folder, 'hook-main.bundle.js');
    if (existsSync(bundle)) {
      const bundledPattern = /^(?:import|export)\s[^;]*?from\s*"([^"]+)";|^import\s*"([^"]+)";/gm;
      // The chunk that holds hook-queue.js is the one the queueing hooks import on demand.
      const queueChunk = readdirSync(folder)
        .map((name) => join(folder, name))
        .find(
          (file) =>
            /hook-bundle-[A-Za-z0-9]+\.js$/.test(file) &&
            readFileSync(file, 'utf8').includes('// dist/surfaces/claude-code/hook-queue.js'),
        );
      expect(queueChunk).toBeDefined();
      const chunks = new Set([...walk(bundle, bundledPattern), ...walk(queueChunk!, bundledPattern)]);
      const bundled = [...chunks].flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/^\/\/ (dist\/\S+)/gm)].map((match) => match[1]!),
      );
      expect(bundled).toContain('dist/surfaces/claude-code/hook-spool.js');
      expect(bundled.filter((file) => forbidden.test(file))).toEqual([]);
    }
  });
});
