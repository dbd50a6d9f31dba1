import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { countSpooled } from '../../../src/surfaces/claude-code/hook-spool.js';
import {
  type ClaudeRun,
  eventually,
  PLUGIN_DIR,
  requestsOf,
  useClaudeWorld,
} from '../../support/claude-code-harness.js';

interface LogEntry {
  event: string;
  status: string;
  message: string;
}

// The plugin loaded for one run (--plugin-dir), with engram's store or model broken: Claude Code
// must answer as if engram were not there, and engram must say why in one log line per hook.
describe('the engram plugin fails open in the real Claude Code', () => {
  const { server, world } = useClaudeWorld();
  let project: string;
  const log = (): LogEntry[] => {
    try {
      return readFileSync(join(world.engramHome, 'logs', 'claude-code-hooks.log'), 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as LogEntry);
    } catch {
      return [];
    }
  };
  const transcriptOf = (run: ClaudeRun): string => {
    const projects = join(world.home, '.claude', 'projects');
    for (const folder of readdirSync(projects)) {
      const file = join(projects, folder, `${run.result?.session_id}.jsonl`);
      try {
        return readFileSync(file, 'utf8');
      } catch {
        // Another project's folder.
      }
    }
    return '';
  };
  /** claude answered the prompt (its one request was sent), exit 0, and no engram hook failed or blocked in Claude Code's eyes. */
  const expectAnswered = (run: ClaudeRun, prefix: string): void => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.result?.is_error).toBe(false);
    expect(requestsOf(server, prefix).length).toBeGreaterThan(0);
    const transcript = transcriptOf(run);
    expect(transcript).toContain('"type":"user"');
    expect(transcript).not.toContain('hook_non_blocking_error');
    expect(transcript).not.toContain('hook_cancelled');
    expect(transcript).not.toContain('blocked by hook');
  };

  beforeAll(() => {
    project = world.project('proj');
  });

  /** The real claude in the project with engram's plugin, on `prompt`, with `env` for engram's hooks. */
  const claudeWithPlugin = (prompt: string, prefix: string, env: Record<string, string>): Promise<ClaudeRun> =>
    world.claude(['--plugin-dir', PLUGIN_DIR, prompt], { cwd: project, prefix, env });

  it('a corrupt store: claude answers, each hook that opens it logs one line, the queued events wait in the spool', async () => {
    const corrupt = join(world.root, 'corrupt.db');
    writeFileSync(corrupt, 'this is not a SQLite database '.repeat(200));
    const before = log().length;
    const run = await claudeWithPlugin('hello', 'corrupt', { ENGRAM_STORE: corrupt });
    expectAnswered(run, 'corrupt');
    // Stop and SessionEnd only spool (no store opened): their worker is what meets the corrupt store.
    const failedWorker = await eventually(async () =>
      log()
        .slice(before)
        .find((entry) => entry.status === 'worker-failed'),
    );
    expect(failedWorker.event).toBe('worker');
    const lines = log()
      .slice(before)
      .filter((entry) => entry.event !== 'worker');
    expect(lines.map((entry) => entry.event).sort()).toEqual(['SessionStart', 'UserPromptSubmit']);
    expect(lines.every((entry) => entry.status === 'failed')).toBe(true);
    // Nothing lost: both events are still in the spool for a drainer that can open the store.
    expect(countSpooled(world.engramHome)).toBe(2);
  }, 60_000);

  it('a Postgres that is not there: claude answers', async () => {
    const before = log().length;
    // Its worker would wait for the server to come back (hooks.workerLingerMs): not in a test.
    const run = await claudeWithPlugin('hello', 'nopg', {
      ENGRAM_STORE: 'postgres://engram@127.0.0.1:1/engram',
      ENGRAM_HOOK_WORKER_LINGER_MS: '0',
    });
    expectAnswered(run, 'nopg');
    expect(log().length).toBeGreaterThan(before);
  }, 60_000);

  it('a store locked by another process: the prompt waits no longer than the deadline, and what cannot be written is logged', async () => {
    const seeded = await world.engram(['remember', 'The staging database is called heron-7.'], { cwd: project });
    expect(seeded.code, seeded.stderr).toBe(0);
    const holder = openSqlite(join(world.engramHome, 'engram.db'));
    holder.exec('BEGIN EXCLUSIVE');
    try {
      const before = log().length;
      const run = await claudeWithPlugin('What is the staging database called?', 'locked', {
        ENGRAM_HOOK_DEADLINE_MS: '300',
      });
      expectAnswered(run, 'locked');
      expect(log().slice(before).length).toBeGreaterThan(0);
    } finally {
      holder.exec('ROLLBACK');
      closeSqlite(holder);
    }
  }, 60_000);

  it('the model down: claude answers, the queued turn waits for a retry and the worker logs why', async () => {
    const before = log().length;
    const run = await claudeWithPlugin('We use trunk-based development here.', 'nomodel', {
      ENGRAM_MODEL_PROVIDER: 'anthropic',
      ENGRAM_MODEL_BASE_URL: 'http://127.0.0.1:1',
      ENGRAM_MODEL_MAX_RETRIES: '0',
      ENGRAM_HOOK_WORKER_LINGER_MS: '0',
    });
    expectAnswered(run, 'nomodel');
    const failed = await eventually(async () =>
      log()
        .slice(before)
        .find((entry) => entry.status === 'worker-failed' && /extraction job/.test(entry.message)),
    );
    expect(failed.message).toMatch(/extraction job/);
  }, 60_000);
});
