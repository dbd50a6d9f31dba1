import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';
import { answer } from '../../support/extraction-support.js';

// `engram queue run` runs due jobs; `--force` also the ones waiting for a retry (a rate limit's
// backoff), `--failed` also the failed ones. The model is a real Anthropic Messages server on loopback.
let workspace: Workspace;
let server: LanguageModelServer;
let modelEnv: Record<string, string>;

beforeAll(async () => {
  workspace = createWorkspace();
  // A retry an hour away: the plain run surely finds it not due.
  writeFileSync(
    join(workspace.home, 'config.json'),
    JSON.stringify({ extraction: { retryBaseDelayMs: 3_600_000, retryMaxDelayMs: 3_600_000 } }),
  );
  server = await startAnthropicMessagesServer();
  modelEnv = { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.url, ENGRAM_MODEL_MAX_RETRIES: '0' };
});
afterAll(async () => {
  await server.close();
  workspace.cleanup();
});

async function extractBackedOff(name: string, text: string): Promise<void> {
  const file = join(workspace.root, name);
  writeFileSync(file, text);
  server.script({ error: { kind: 'rate_limit', retryAfter: 3600 } });
  const result = await workspace.run(['extract', file], { env: modelEnv });
  expect(result.stderr).toMatch(/stays queued and is retried from /);
}

async function extractFailed(name: string, text: string): Promise<void> {
  const file = join(workspace.root, name);
  writeFileSync(file, text);
  server.script({ error: { kind: 'auth' } });
  const result = await workspace.run(['extract', file], { env: modelEnv });
  expect(result.stderr).toMatch(/marked failed/);
}

describe('engram queue run --force / --failed', () => {
  it('runs a job waiting for a retry only with --force, its attempts kept', async () => {
    await extractBackedOff('backoff.txt', 'The nightly build runs at two in the morning.');
    const waiting = (await workspace.json(['queue'])).jobs;
    expect(waiting).toEqual([expect.objectContaining({ state: 'pending', attempts: 1 })]);
    expect(Date.parse(waiting[0].runAt)).toBeGreaterThan(Date.now() + 600_000);

    const plain = await workspace.run(['queue', 'run'], { env: modelEnv });
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('Ran 0 due job(s)');
    expect(plain.stdout).toContain(
      '1 job(s) still pending (waiting for a retry, or queued meanwhile): "engram queue run --force" runs them now.',
    );
    expect(server.requests).toHaveLength(1);

    server.script({ message: { text: answer({ content: 'The nightly build runs at two in the morning.' }) } });
    const forced = await workspace.json(['queue', 'run', '--force'], 0, { env: modelEnv });
    expect(forced.hastened).toBe(1);
    expect(forced.outcomes).toEqual([
      expect.objectContaining({ state: 'done', job: expect.objectContaining({ id: waiting[0].id, attempts: 2 }) }),
    ]);
    expect((await workspace.json(['queue'])).jobs).toEqual([]);
    expect((await workspace.json(['list'])).memories.map((memory: any) => memory.content)).toContain(
      'The nightly build runs at two in the morning.',
    );
  });

  it('leaves failed jobs to --failed, which puts them back and runs them', async () => {
    await extractFailed('failed.txt', 'Code review needs two approvals.');
    const forced = await workspace.run(['queue', 'run', '--force'], { env: modelEnv });
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('0 job(s) waiting for a retry made due now.');
    expect(forced.stdout).toContain('1 failed job(s) left: "engram queue run --failed"');

    server.script({ message: { text: answer({ content: 'Code review needs two approvals.' }) } });
    const revived = await workspace.json(['queue', 'run', '--failed'], 0, { env: modelEnv });
    expect(revived).toMatchObject({ revived: 1, handledElsewhere: 0 });
    expect(revived.outcomes).toEqual([expect.objectContaining({ state: 'done' })]);
    expect((await workspace.json(['queue', '--state', 'failed'])).jobs).toEqual([]);
  });

  it('refuses unknown options and run-only options elsewhere, with exit 2 and nothing changed', async () => {
    await extractBackedOff('refused.txt', 'Releases are tagged from the main branch.');
    const before = await workspace.json(['queue']);
    for (const [args, message] of [
      [['queue', 'run', '--forse'], /Unknown option '--forse'.*engram queue --help/],
      [['queue', 'run', '--force=yes'], /--force/],
      [['queue', 'list', '--force'], /--force applies to "engram queue run", not to queue list/],
      [['queue', '--failed'], /--failed applies to "engram queue run"/],
      [['queue', 'retry', 'job_x', '--force'], /--force applies to "engram queue run", not to queue retry/],
    ] as const) {
      const result = await workspace.run(args, { env: modelEnv });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe('');
    }
    expect(await workspace.json(['queue'])).toEqual(before);
    const help = await workspace.run(['queue', '--help']);
    expect(help.stdout).toMatch(/--force\s+queue run: also the jobs waiting for a retry/);
    expect(help.stdout).toMatch(/--failed\s+queue run: also the failed jobs/);
  });
});
