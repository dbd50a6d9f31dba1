import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { loadSettings } from '../../../src/node/load-settings.js';
import { spoolPath } from '../../../src/surfaces/claude-code/hook-spool.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { ENGRAM_BINARY, createWorkspace, type Workspace, useWorkspace } from '../../support/cli-harness.js';
import { eventually, HOOK_LAUNCHER } from '../../support/claude-code-harness.js';
import { line, logLines, runHook, writeTranscript } from '../../support/claude-code-hook-run.js';
import { answer } from '../../support/extraction-support.js';

// Issue 26 item 10: what the queueing hooks lose or leave waiting when things go wrong. A full disk
// (a real tmpfs, mounted in a private mount namespace), transcripts that can never be read, and
// retries that must run without another hook coming along.

const NO_WORKER = { ENGRAM_HOOK_WORKER: 'false' };
/** The hook's extraction model: the Messages API at `url`, no retries. */
const anthropicModelEnv = (url: string): Record<string, string> => ({
  ENGRAM_MODEL_PROVIDER: 'anthropic',
  ENGRAM_MODEL_BASE_URL: url,
  ENGRAM_MODEL_API_KEY: 'test-key',
  ENGRAM_MODEL_MAX_RETRIES: '0',
});

async function contents(workspace: Workspace): Promise<string> {
  return JSON.stringify(await workspace.json(['list']));
}

/** Whether this machine lets a test mount a tmpfs in a mount namespace of its own (unshare -rm). */
function canMountTmpfs(): boolean {
  const probe = spawnSync(
    'unshare',
    ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || mount -t tmpfs -o size=64k tmpfs /tmp'],
    {
      encoding: 'utf8',
    },
  );
  return probe.status === 0;
}

describe('a full disk', () => {
  const workspace = useWorkspace();

  it.skipIf(!canMountTmpfs())(
    "keeps one event with the spool's reserve and logs it; the next is lost and said so (log, stderr, the user's screen), naming the session",
    async () => {
      // ENGRAM_HOME on a 128 KiB tmpfs, the store and transcripts beside it on the real disk: the
      // whole scenario runs inside the namespace that sees the mount, and prints what it saw.
      const tiny = join(workspace.root, 'tiny');
      mkdirSync(tiny);
      const home = join(tiny, 'home');
      const store = join(workspace.root, 'engram.db');
      const transcripts = join(workspace.root, 'transcripts');
      mkdirSync(transcripts);
      const sessions = ['s-before', 's-reserve', 's-lost'].map((session) => ({
        session,
        path: writeTranscript(transcripts, session, `Remember that ${session} shipped build ${session.length}.`),
      }));
      const driver = join(workspace.root, 'driver.mjs');
      writeFileSync(
        driver,
        `import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
// The spool padded with blank lines (which it skips) to the end of its last page: the next line
// needs a new page, as on a real disk once a file's last block is used up.
const pad = () => { const path = ${JSON.stringify(join(home, 'spool', 'claude-code-hooks.jsonl'))}; let size = 0; try { size = statSync(path).size; } catch {} if (size % 4096) appendFileSync(path, '\\n'.repeat(4096 - (size % 4096))); };
const env = { PATH: process.env.PATH, HOME: ${JSON.stringify(home)}, ENGRAM_HOME: ${JSON.stringify(home)}, ENGRAM_STORE: ${JSON.stringify(store)}, ENGRAM_MODEL_PROVIDER: 'none', ENGRAM_HOOK_WORKER: 'false' };
const sessions = ${JSON.stringify(sessions)};
const hook = (index) => {
  const { session, path } = sessions[index];
  const run = spawnSync(process.execPath, [${JSON.stringify(HOOK_LAUNCHER)}, 'hook', 'stop'], { cwd: ${JSON.stringify(workspace.cwd)}, env, encoding: 'utf8',
    input: JSON.stringify({ session_id: session, cwd: ${JSON.stringify(workspace.cwd)}, transcript_path: path }) });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
};
const engram = (...args) => spawnSync(process.execPath, [${JSON.stringify(ENGRAM_BINARY)}, ...args], { cwd: ${JSON.stringify(workspace.cwd)}, env, encoding: 'utf8' });
const result = {};
result.before = hook(0);
result.drain = engram('queue', 'run', '--json').status; // The drainer makes the reserve.
pad();
try { writeFileSync(${JSON.stringify(join(home, 'fill'))}, Buffer.alloc(1024 * 1024)); } catch (error) { result.filled = error.code; }
result.reserve = hook(1);
// The room the reserve made is taken again (the disk stays full): the next event has none.
pad();
try { writeFileSync(${JSON.stringify(join(home, 'fill-again'))}, Buffer.alloc(1024 * 1024)); } catch (error) { result.filledAgain = error.code; }
result.lost = hook(2);
const read = (path) => { try { return readFileSync(path, 'utf8'); } catch { return ''; } };
result.spool = read(${JSON.stringify(join(home, 'spool', 'claude-code-hooks.jsonl'))});
result.log = read(${JSON.stringify(join(home, 'logs', 'claude-code-hooks.log'))});
rmSync(${JSON.stringify(join(home, 'fill'))});
rmSync(${JSON.stringify(join(home, 'fill-again'))}, { force: true });
result.after = engram('queue', 'run', '--json').status;
process.stdout.write(JSON.stringify(result));
`,
      );
      const ran = spawnSync(
        'unshare',
        ['-rm', 'sh', '-c', `mount -t tmpfs -o size=128k tmpfs '${tiny}' && exec '${process.execPath}' '${driver}'`],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(ran.status, ran.stderr).toBe(0);
      const result = JSON.parse(ran.stdout);
      expect([result.filled, result.filledAgain]).toEqual(['ENOSPC', 'ENOSPC']);
      expect(result.drain).toBe(0);
      for (const run of [result.before, result.reserve, result.lost]) expect(run.code).toBe(0);
      // Kept by spending the reserve, and the log says the disk is full.
      expect(result.before.stdout).toBe('');
      expect(result.reserve.stdout).toBe('');
      expect(result.spool).toContain('"s-reserve"');
      expect(result.log).toMatch(/"status":"disk-full"/);
      // Lost: the user sees what was lost and how to get it back; so does Claude Code's debug log.
      const shown = JSON.parse(result.lost.stdout) as { systemMessage: string };
      expect(shown.systemMessage).toContain('session s-lost');
      expect(shown.systemMessage).toContain('is full (ENOSPC)');
      expect(shown.systemMessage).toContain(`engram extract ${sessions[2]!.path}`);
      expect(result.lost.stderr).toContain('session s-lost');
      expect(result.spool).not.toContain('"s-lost"');
      // With room again, what was kept is queued and stored; the lost one is not (it was said so).
      expect(result.after).toBe(0);
      const stored = await workspace.json(['list'], 0, { env: { ENGRAM_STORE: store } });
      const texts = JSON.stringify(stored);
      expect(texts).toContain('s-before');
      expect(texts).toContain('s-reserve');
      expect(texts).not.toContain('s-lost');
    },
    150_000,
  );
});

describe('a transcript that can never be read', () => {
  const workspace = useWorkspace();

  it('is given up at the first drain with a log line naming it: deleted, a folder, a symlink loop, a file where a folder was', async () => {
    const folder = join(workspace.root, 'transcripts');
    mkdirSync(folder);
    const breakers: Record<string, (path: string) => void> = {
      deleted: (path) => unlinkSync(path),
      folder: (path) => {
        unlinkSync(path);
        mkdirSync(path);
      },
      loop: (path) => {
        unlinkSync(path);
        symlinkSync(path, path);
      },
      'not-a-folder': (path) => {
        // The session's folder replaced by a file: the path goes through a file (ENOTDIR).
        const sessionFolder = join(folder, 'nested');
        rmSync(sessionFolder, { recursive: true });
        writeFileSync(sessionFolder, 'a file');
        void path;
      },
    };
    mkdirSync(join(folder, 'nested'));
    const paths: Record<string, string> = {};
    for (const name of Object.keys(breakers)) {
      const where = name === 'not-a-folder' ? join(folder, 'nested') : folder;
      paths[name] = writeTranscript(where, `s-${name}`, `Remember that ${name} is fine.`);
      await runHook(
        workspace,
        'stop',
        line({ session_id: `s-${name}`, cwd: workspace.cwd, transcript_path: paths[name] }),
        NO_WORKER,
      );
    }
    for (const [name, breakIt] of Object.entries(breakers)) breakIt(paths[name]!);
    const run = await workspace.json(['queue', 'run']);
    expect(run.spool).toMatchObject({ claimed: 4, queued: 0, putBack: 0, dropped: 4 });
    // Nothing waits for a retry: the spool is empty after one drain.
    expect(existsSync(spoolPath(workspace.home)) ? readFileSync(spoolPath(workspace.home), 'utf8').trim() : '').toBe(
      '',
    );
    const givenUp = logLines(workspace).filter((entry) => /given up/.test(entry.message));
    for (const name of Object.keys(breakers))
      expect(
        givenUp.some((entry) => entry.message.includes(`s-${name}.jsonl`)),
        name,
      ).toBe(true);
    expect(givenUp.map((entry) => entry.message).join('\n')).toMatch(/ENOENT|not a file/);
    expect(givenUp.map((entry) => entry.message).join('\n')).toMatch(/ELOOP/);
    expect(givenUp.map((entry) => entry.message).join('\n')).toMatch(/ENOTDIR/);
  }, 90_000);

  it.skipIf(process.getuid?.() !== 0 || spawnSync('runuser', ['--help']).status !== 0)(
    'one this user may not read (EACCES) is given up too',
    async () => {
      // The drain runs as nobody; the transcript is root's, 0600.
      const shared = join(workspace.root, 'shared');
      mkdirSync(shared);
      const home = join(shared, 'home');
      mkdirSync(home);
      const transcript = writeTranscript(workspace.root, 's-private', 'Remember that private is private.');
      chmodSync(transcript, 0o600);
      const env = { ...NO_WORKER, HOME: home, ENGRAM_HOME: home, ENGRAM_STORE: join(shared, 'engram.db') };
      const input = line({ session_id: 's-private', cwd: workspace.cwd, transcript_path: transcript });
      const hook = await runHook({ ...workspace, home }, 'stop', input, env);
      expect(hook.code).toBe(0);
      chmodSync(workspace.root, 0o755);
      chmodSync(workspace.cwd, 0o755);
      chmodSync(shared, 0o777);
      spawnSync('chown', ['-R', 'nobody', shared]);
      const drained = spawnSync(
        'runuser',
        ['-u', 'nobody', '--', process.execPath, ENGRAM_BINARY, 'queue', 'run', '--json'],
        {
          cwd: workspace.cwd,
          env: { PATH: process.env.PATH, ...env, ENGRAM_MODEL_PROVIDER: 'none' },
          encoding: 'utf8',
        },
      );
      expect(drained.status, drained.stderr).toBe(0);
      expect(JSON.parse(drained.stdout).spool).toMatchObject({ claimed: 1, putBack: 0, dropped: 1 });
      const log = readFileSync(join(home, 'logs', 'claude-code-hooks.log'), 'utf8');
      expect(log).toMatch(/given up: the transcript .*s-private\.jsonl.* can never be read \(.*EACCES/);
    },
    90_000,
  );
});

describe("what waits for a retry is run by the hooks' worker, with no other hook", () => {
  let workspace: Workspace;
  let server: LanguageModelServer;
  beforeAll(async () => {
    server = await startAnthropicMessagesServer();
  });
  afterAll(async () => server.close());
  beforeEach(() => {
    workspace = createWorkspace();
  });
  afterEach(() => workspace.cleanup());

  it('an extraction the model failed is retried when its wait is over, and stored', async () => {
    // The model is down for the first try, then answers.
    server.script(
      { error: { kind: 'unavailable' } },
      { message: { text: answer({ content: 'Releases are cut on Tuesdays.' }) } },
    );
    const transcript = writeTranscript(workspace.root, 's-retry', 'Releases are cut on Tuesdays, by the way.');
    const env = anthropicModelEnv(server.url);
    const before = server.requests.length;
    await runHook(
      workspace,
      'stop',
      line({ session_id: 's-retry', cwd: workspace.cwd, transcript_path: transcript }),
      env,
    );
    const stored = await eventually(
      async () => ((await contents(workspace)).includes('Tuesdays') ? true : undefined),
      120,
      250,
    );
    expect(stored).toBe(true);
    expect(server.requests.length - before).toBe(2);
    expect(
      logLines(workspace).some((entry) => entry.status === 'worker-failed' && /retrying/.test(entry.message)),
    ).toBe(true);
  }, 90_000);

  it('a job whose worker was killed mid-run is taken back by the next worker at once, not after its lease', async () => {
    // The first extraction call hangs (the worker is killed during it); the next ones answer.
    server.script(
      { message: { text: answer({ content: 'Invoices are archived after 90 days.' }) }, delayMs: 120_000 },
      { message: { text: answer({ content: 'Invoices are archived after 90 days.' }) } },
      { message: { text: answer({ content: 'The billing service is written in Go.' }) } },
    );
    const env = anthropicModelEnv(server.url);
    const before = server.requests.length;
    const first = writeTranscript(workspace.root, 's-killed', 'Invoices are archived after 90 days.');
    await runHook(workspace, 'stop', line({ session_id: 's-killed', cwd: workspace.cwd, transcript_path: first }), env);
    await eventually(async () => (server.requests.length > before ? true : undefined));
    const workers = readdirSync('/proc').filter((name) => {
      try {
        const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8');
        return /^\d+$/.test(name) && argv.includes('hook-worker.js') && argv.includes(workspace.root);
      } catch {
        return false;
      }
    });
    expect(workers).toHaveLength(1);
    process.kill(Number(workers[0]), 'SIGKILL');
    await eventually(async () => (existsSync(`/proc/${workers[0]}`) ? undefined : true));
    const [held] = (await workspace.json(['queue', '--state', 'running'])).jobs as Array<{ id: string }>;
    expect(held).toBeDefined();
    // Another session ends: its worker runs the killed worker's job too, its lease (60 s) not waited out.
    const started = Date.now();
    const second = writeTranscript(workspace.root, 's-next', 'The billing service is written in Go.');
    await runHook(workspace, 'stop', line({ session_id: 's-next', cwd: workspace.cwd, transcript_path: second }), env);
    // The killed worker's job itself is done (not only the new one), on its second attempt.
    const done = await eventually(
      async () => {
        const jobs = (await workspace.json(['queue', '--state', 'done'])).jobs as Array<{
          id: string;
          attempts: number;
        }>;
        return jobs.find((job) => job.id === held!.id);
      },
      120,
      250,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(done.attempts).toBe(2);
    const stored = await contents(workspace);
    expect(stored).toContain('90 days');
    expect(stored).toContain('written in Go');
  }, 120_000);

  it.each([
    ['let go right after the first try', 0],
    // The round's later steps (extraction, the dream's gate and lock) fail on the lock too: the worker
    // must try the round again, not exit and leave the event to another hook (it did before).
    ['held 3 s longer, past the rest of the round', 3_000],
  ])(
    'an event the store could not take (another process holds its write lock) is put back and queued when its wait is over: %s',
    async (_name, holdMs) => {
      const seeded = await workspace.run(['remember', 'The store exists already.']);
      expect(seeded.code, seeded.stderr).toBe(0);
      const loaded = loadSettings({
        cwd: workspace.cwd,
        env: { ...process.env, ENGRAM_HOME: workspace.home, HOME: workspace.home },
      });
      const holder = openSqlite(loaded.settings.store.url);
      holder.exec('BEGIN EXCLUSIVE');
      let held = true;
      try {
        const transcript = writeTranscript(workspace.root, 's-later', 'Remember that the later event got in.');
        await runHook(
          workspace,
          'stop',
          line({ session_id: 's-later', cwd: workspace.cwd, transcript_path: transcript }),
          { ENGRAM_BUSY_TIMEOUT_MS: '200' },
        );
        // The worker cannot open the store or queue the event into it: it says so and waits.
        await eventually(
          async () =>
            logLines(workspace).some((entry) => /(cannot open the store|not queued yet) \(try 1/.test(entry.message))
              ? true
              : undefined,
          240,
          250,
        );
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        holder.exec('ROLLBACK');
        held = false;
      } finally {
        if (held) holder.exec('ROLLBACK');
        closeSqlite(holder);
      }
      // The retry after the lock is let go is due within 5 s doubling (10 s, 20 s): a minute covers a loaded machine.
      const stored = await eventually(
        async () => ((await contents(workspace)).includes('later event') ? true : undefined),
        240,
        250,
      );
      expect(stored).toBe(true);
    },
    150_000,
  );
});

describe('any append to the spool that fails', () => {
  const workspace = useWorkspace();

  /** One Stop hook as Claude Code runs it, with `prefix` (a namespace, another user) in front; its stderr too. */
  function stopHook(home: string, session: string, transcript: string, prefix: string[] = []) {
    const command = [process.execPath, HOOK_LAUNCHER, 'hook', 'stop', '--from', 'engram-plugin'];
    const [file, ...args] = [...prefix, ...command];
    return spawnSync(file!, args, {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH, HOME: home, ENGRAM_HOME: home, ENGRAM_MODEL_PROVIDER: 'none', ...NO_WORKER },
      input: line({ session_id: session, cwd: workspace.cwd, transcript_path: transcript }),
      encoding: 'utf8',
      timeout: 60_000,
    });
  }

  function expectSaidLost(run: ReturnType<typeof stopHook>, session: string, transcript: string, why: RegExp): void {
    expect(run.status, run.stderr).toBe(0);
    const shown = JSON.parse(run.stdout) as { systemMessage: string };
    expect(shown.systemMessage).toContain(`the Stop of session ${session}`);
    expect(shown.systemMessage).toMatch(why);
    expect(shown.systemMessage).toContain(`engram extract ${transcript}`);
    expect(run.stderr).toContain(`session ${session}`);
  }

  it('where the spool file should be there is a folder (EISDIR): lost, and said so in the log too', () => {
    mkdirSync(spoolPath(workspace.home), { recursive: true });
    const transcript = writeTranscript(workspace.root, 's-isdir', 'Remember that folders are not files.');
    const run = stopHook(workspace.home, 's-isdir', transcript);
    expectSaidLost(run, 's-isdir', transcript, /cannot be written.*EISDIR/);
    const lost = logLines(workspace).filter((entry) => entry.status === 'lost');
    expect(lost).toHaveLength(1);
    expect(lost[0]!.message).toContain('s-isdir');
  });

  it.skipIf(!canMountTmpfs())(
    'ENGRAM_HOME on a read-only file system (EROFS): lost, said on stderr and to the user',
    () => {
      const home = join(workspace.root, 'readonly-home');
      mkdirSync(home);
      const transcript = writeTranscript(workspace.root, 's-erofs', 'Remember that nothing is written here.');
      const run = stopHook(home, 's-erofs', transcript, [
        'unshare',
        '-rm',
        'sh',
        '-c',
        `mount -t tmpfs -o size=64k tmpfs '${home}' && mkdir -m 700 '${home}/spool' && mount -o remount,ro '${home}' && exec "$@"`,
        'sh',
      ]);
      expectSaidLost(run, 's-erofs', transcript, /cannot be written.*EROFS/);
    },
  );

  it.skipIf(process.getuid?.() !== 0 || spawnSync('runuser', ['--help']).status !== 0)(
    'ENGRAM_HOME this user may not write (EACCES): lost, said on stderr and to the user',
    () => {
      const home = join(workspace.root, 'roots-home');
      mkdirSync(home, { mode: 0o700 });
      chmodSync(workspace.root, 0o755);
      chmodSync(workspace.cwd, 0o755);
      const transcript = writeTranscript(workspace.root, 's-eacces', 'Remember that this home is not mine.');
      const run = stopHook(home, 's-eacces', transcript, ['runuser', '-u', 'nobody', '--']);
      expectSaidLost(run, 's-eacces', transcript, /cannot be written.*EACCES/);
    },
  );
});

describe('a transcript that cannot be read now', () => {
  const workspace = useWorkspace();

  it('(an I/O error) is tried again, then given up after hooks.transcriptReadTries drains with a log line, not kept for 7 days', async () => {
    // /proc/self/mem is a regular file whose read fails with EIO in whoever reads it: a real I/O error.
    const env = { ...NO_WORKER, ENGRAM_HOOK_TRANSCRIPT_READ_TRIES: '2' };
    const input = line({ session_id: 's-eio', cwd: workspace.cwd, transcript_path: '/proc/self/mem' });
    expect((await runHook(workspace, 'stop', input, env)).code).toBe(0);
    const first = await workspace.json(['queue', 'run'], 0, { env });
    expect(first.spool).toMatchObject({ claimed: 1, putBack: 1, dropped: 0 });
    expect(logLines(workspace).some((entry) => /cannot be read now \(try 1 of 2.*EIO/.test(entry.message))).toBe(true);
    // Its wait (5 s) over, the second drain gives it up.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    const second = await workspace.json(['queue', 'run'], 0, { env });
    expect(second.spool).toMatchObject({ claimed: 1, putBack: 0, dropped: 1 });
    expect(
      logLines(workspace).some((entry) =>
        /given up after 2 tries: the transcript "\/proc\/self\/mem" cannot be read \(.*EIO/.test(entry.message),
      ),
    ).toBe(true);
    expect(existsSync(spoolPath(workspace.home)) ? readFileSync(spoolPath(workspace.home), 'utf8').trim() : '').toBe(
      '',
    );
  }, 60_000);
});
