import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../src/adapters/models/anthropic-language-model.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import { EXTRACTION_QUEUE } from '../../src/extraction/extraction-job-payload.js';
import type { JobOutcome } from '../../src/extraction/extraction-report.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { answer, PROJECT } from '../support/extraction-support.js';

const WORKER = fileURLToPath(new URL('../fixtures/extraction-crash-worker.mjs', import.meta.url));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(): Promise<{ path: string; server: LanguageModelServer }> {
  const directory = await mkdtemp(join(tmpdir(), 'engram-crash-'));
  const server = await startAnthropicMessagesServer();
  cleanups.push(
    () => rm(directory, { recursive: true, force: true }),
    () => server.close(),
  );
  return { path: join(directory, 'engram.db'), server };
}

/** Starts the worker process and resolves once it printed its afterTurn result (the job is in the store). */
function startWorker(args: string[]): Promise<{ child: ChildProcessWithoutNullStreams; result: any }> {
  const child = spawn(process.execPath, [WORKER, ...args], { stdio: 'pipe' });
  cleanups.push(async () => void child.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve({ child, result: JSON.parse(out.split('\n')[0]!) });
    });
    child.on('exit', (code) => reject(new Error(`the worker exited (${code}) before queueing: ${err}`)));
  });
}

function killed(child: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function survivor(path: string, url: string): Promise<{ engram: Engram; extractor: Extractor }> {
  const store = new SqliteMemoryStore({ path });
  await store.open();
  cleanups.push(() => store.close());
  const engram = new Engram({
    store,
    settings: DEFAULT_SETTINGS,
    defaultScope: PROJECT,
    readScopes: [PROJECT, 'global'],
    onWarning: () => {},
  });
  const model = new AnthropicLanguageModel({
    model: 'claude-haiku-5-5',
    baseUrl: url,
    apiKey: 'sk-ant-test',
    maxRetries: 0,
  });
  return { engram, extractor: new Extractor({ engram, model, autoStart: false }) };
}

/** Drains until a job ran (a dead worker's lease must run out first), at most ~20 s. */
async function drainUntilDone(extractor: Extractor): Promise<JobOutcome[]> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const outcomes = await extractor.drain();
    if (outcomes.length > 0) return outcomes;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no job became due');
}

describe('a crash between accepting and running a job loses nothing', () => {
  it('a job queued by a process killed before any worker ran it runs in the next process', async () => {
    const { path, server } = await setup();
    const { child, result } = await startWorker([path, 'queue']);
    expect(result).toMatchObject({ status: 'queued', jobs: [{ created: true }] });
    await killed(child);

    server.script({
      message: {
        text: answer({ content: 'On-call is managed in the PagerDuty schedule PLATFORM.', type: 'reference' }),
      },
    });
    const { engram, extractor } = await survivor(path, server.url);
    const outcomes = await extractor.drain();
    expect(outcomes.map((outcome) => outcome.state)).toEqual(['done']);
    expect((await engram.list()).map((memory) => [memory.content, memory.source?.turnId])).toEqual([
      ['On-call is managed in the PagerDuty schedule PLATFORM.', 'a1'],
    ]);
    expect(server.requests).toHaveLength(1);
  });

  it('a job whose worker was SIGKILLed mid-run is taken over when its lease runs out', async () => {
    const { path, server } = await setup();
    server.script({ hang: true });
    const { child } = await startWorker([path, 'run', server.url]);
    // The worker claimed the job and is waiting on the model: now it dies.
    for (let waited = 0; server.requests.length === 0 && waited < 200; waited += 1)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.requests).toHaveLength(1);
    await killed(child);

    server.script({
      message: {
        text: answer({ content: 'On-call is managed in the PagerDuty schedule PLATFORM.', type: 'reference' }),
      },
    });
    const { engram, extractor } = await survivor(path, server.url);
    const [job] = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    expect(job).toMatchObject({ state: 'running', attempts: 1 });
    const outcomes = await drainUntilDone(extractor);
    expect(outcomes.map((outcome) => outcome.state)).toEqual(['done']);
    expect(await engram.count()).toBe(1);
    expect((await engram.store.jobs!.get(job!.id))!).toMatchObject({ state: 'done', attempts: 2 });
    // The replay of the same turn by the dead process's conversation adds nothing.
    expect(
      await extractor.afterTurn({
        sessionId: 'crash-session',
        messages: [
          { id: 'u1', role: 'user', text: 'x' },
          { id: 'a1', role: 'assistant', text: 'y' },
        ],
      }),
    ).toMatchObject({ status: 'nothing-new' });
  });
});
