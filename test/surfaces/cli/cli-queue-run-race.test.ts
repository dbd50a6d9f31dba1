import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { createWorkspace, type EngramRun, type Workspace } from '../../support/cli-harness.js';
import { answer } from '../../support/extraction-support.js';

// Several `engram queue run --failed` at once on one SQLite store holding failed extraction jobs
// (failed for real: the API key was wrong, a permanent error). Left to themselves the processes
// rarely overlap (a run puts 8 jobs back in a few milliseconds), so the test holds the store's
// write lock while they start: each lists the failed jobs (a read) and then waits for the lock at
// its first retry; released, all retry the same jobs, and all but one find each already put back.
// The store-level interleavings are in test/extraction/revive-failed-jobs.test.ts.
const FACTS = [
  'The billing service is deployed from the blue cluster.',
  'Invoices are archived to cold storage after ninety days.',
  'The mobile app uses Kotlin Multiplatform for shared logic.',
  'Staging databases are refreshed from production every Sunday.',
  'Feature flags live in LaunchDarkly under the project web-core.',
  'The on-call rotation changes every Tuesday at noon.',
  'Support tickets above severity two page the platform team.',
  'Translations are managed in Crowdin and synced nightly.',
];
const RUNS = 3;
const RIGHT_KEY = 'sk-ant-right';

let workspace: Workspace;
let server: LanguageModelServer;

function modelEnv(key: string): Record<string, string> {
  return { ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: server.url, ENGRAM_MODEL_MAX_RETRIES: '0' };
}

beforeAll(async () => {
  workspace = createWorkspace();
  // The runs wait for the lock the test holds: longer than the 5 s default, never the test's doing.
  writeFileSync(join(workspace.home, 'config.json'), JSON.stringify({ store: { busyTimeoutMs: 60_000 } }));
  server = await startAnthropicMessagesServer({
    apiKey: RIGHT_KEY,
    // Each job's one model call answers with the fact of its own transcript.
    respond: (request) => {
      const fact = FACTS.find((candidate) => request.rawBody.includes(candidate));
      return { message: { text: fact === undefined ? '[]' : answer({ content: fact }) } };
    },
  });
});
afterAll(async () => {
  await server.close();
  workspace.cleanup();
});

/** Takes the store's write lock in this process, as another writer would; returns its release. */
function holdWriteLock(): () => void {
  const db = openSqlite(join(workspace.home, 'engram.db'));
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    closeSqlite(db);
    throw error;
  }
  return () => {
    db.exec('ROLLBACK');
    closeSqlite(db);
  };
}

/** Model requests made with this API key (the SDK sends it as a bearer token or as x-api-key). */
function requestsWith(key: string): number {
  return server.requests.filter(
    (request) => request.headers.authorization === `Bearer ${key}` || request.headers['x-api-key'] === key,
  ).length;
}

describe('engram queue run --failed, several at once', () => {
  it('puts each failed job back once, runs it once, and every run exits 0', async () => {
    await Promise.all(
      FACTS.map((fact, index) => {
        const file = join(workspace.root, `turn-${index}.txt`);
        writeFileSync(file, fact);
        // Each extract also runs whatever else is due, so which one reports which failure varies.
        return workspace.run(['extract', file], { env: modelEnv('sk-ant-wrong') });
      }),
    );
    const failed = (await workspace.json(['queue', '--state', 'failed'])).jobs;
    expect(failed).toHaveLength(FACTS.length);
    for (const job of failed) {
      expect(job).toMatchObject({ state: 'failed', attempts: 1 });
      expect(job.lastError).toMatch(/^MODEL_AUTH: /);
    }

    // Processes started together read the queue past the held lock; three times as long as they
    // take, and at least 1.5 s, is what the runs below get to reach their first retry.
    let release = holdWriteLock();
    const calibrationStarted = Date.now();
    const listed = await Promise.all(
      Array.from({ length: RUNS }, () => workspace.run(['queue', '--state', 'failed', '--json'])),
    ).finally(release);
    const holdMs = Math.max(1_500, 3 * (Date.now() - calibrationStarted));
    for (const run of listed) expect(run.json().jobs).toHaveLength(FACTS.length);

    release = holdWriteLock();
    const running = Promise.all(
      // The first one prints text, as a user reads it; the others JSON.
      Array.from({ length: RUNS }, (_, index) =>
        workspace.run(['queue', 'run', '--failed', ...(index === 0 ? [] : ['--json'])], { env: modelEnv(RIGHT_KEY) }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    release();
    const runs = await running;
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toBe('');
    }
    const [text, ...json] = runs as [EngramRun, ...EngramRun[]];
    const told = text.stdout.match(
      /^(\d+) failed job\(s\) put back\.(?: (\d+) other\(s\) were put back or removed by another process first\.)?\nRan (\d+) due job\(s\): \3 done, 0 failed or waiting for a retry\.$/m,
    );
    expect(told, text.stdout).not.toBeNull();
    const reports = [
      { revived: Number(told![1]), handledElsewhere: Number(told![2] ?? 0), outcomes: [], ran: Number(told![3]) },
      ...json.map((run) => {
        const report = run.json();
        return { ...report, ran: report.outcomes.length };
      }),
    ];
    // Each job put back by exactly one run; the others met it already put back.
    expect(reports.reduce((sum, report) => sum + report.revived, 0)).toBe(FACTS.length);
    for (const report of reports) expect(report.revived + report.handledElsewhere).toBeLessThanOrEqual(FACTS.length);
    expect(
      reports.reduce((sum, report) => sum + report.handledElsewhere, 0),
      `no run met a job another had put back first: the runs did not overlap (held the lock ${holdMs} ms)`,
    ).toBeGreaterThan(0);

    // Each job run by exactly one of them, once, to the end: one model call each, nothing lost.
    expect(reports.reduce((sum, report) => sum + report.ran, 0)).toBe(FACTS.length);
    const outcomes = reports.flatMap((report) => report.outcomes);
    expect(new Set(outcomes.map((outcome: any) => outcome.job.id)).size).toBe(outcomes.length);
    for (const outcome of outcomes) expect(outcome).toMatchObject({ state: 'done', job: { attempts: 1 } });
    expect(requestsWith(RIGHT_KEY)).toBe(FACTS.length);

    expect((await workspace.json(['queue', '--state', 'pending,running,failed'])).jobs).toEqual([]);
    const done = (await workspace.json(['queue', '--state', 'done'])).jobs;
    expect(done.map((job: any) => job.id).sort()).toEqual(failed.map((job: any) => job.id).sort());
    for (const job of done) expect(job).toMatchObject({ state: 'done', attempts: 1, lockedBy: null });
    const contents = (await workspace.json(['list'])).memories.map((memory: any) => memory.content);
    expect(contents.sort()).toEqual([...FACTS].sort());
  });
});
