import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';
import { answer } from '../../support/extraction-support.js';
import { createExtractProgress } from '../../../src/surfaces/cli/extract-progress.js';

// A long transcript is read in several model calls (extraction.maxInputTokens): `engram extract`
// tells how far it got on stderr with --progress (the default on a terminal), never on stdout,
// and nothing with --quiet. The model is a real Anthropic Messages server on loopback.
let workspace: Workspace;
let server: LanguageModelServer;
let modelEnv: Record<string, string>;
let file = 0;

beforeAll(async () => {
  workspace = createWorkspace();
  // The smallest input a call may read: each turn below is its own call.
  writeFileSync(join(workspace.home, 'config.json'), JSON.stringify({ extraction: { maxInputTokens: 500 } }));
  server = await startAnthropicMessagesServer();
  modelEnv = { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.url, ENGRAM_MODEL_MAX_RETRIES: '0' };
});
afterAll(async () => {
  await server.close();
  workspace.cleanup();
});

/** A chat-messages transcript of `turns` user/assistant pairs, each long enough to fill one call. */
function transcript(turns: number): string {
  file += 1;
  const path = join(workspace.root, `long-${file}.jsonl`);
  const lines: string[] = [];
  for (let index = 0; index < turns; index += 1) {
    const filler = `Notes on service ${file}-${index}: ${'the deploy pipeline checks every stage carefully. '.repeat(30)}`;
    lines.push(JSON.stringify({ role: 'user', content: `${filler} What about step ${index}?` }));
    lines.push(JSON.stringify({ role: 'assistant', content: `Step ${index} of ${file} is done.` }));
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

function scriptAnswers(count: number, tag: string): void {
  for (let index = 0; index < count; index += 1)
    server.script({ message: { text: answer({ content: `Service ${tag} step ${index} runs on the blue cluster.` }) } });
}

describe('engram extract --progress', () => {
  it('tells messages read and memories written on stderr, step by step, while stdout holds one JSON document', async () => {
    const path = transcript(4);
    scriptAnswers(4, 'a');
    const before = server.requests.length;
    const result = await workspace.run(['extract', path, '--progress', '--json'], { env: modelEnv });
    expect(result.code, result.stderr).toBe(0);
    const calls = server.requests.length - before;
    expect(calls).toBeGreaterThanOrEqual(3);
    const document = result.json();
    expect(document.written.length).toBeGreaterThan(0);

    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^engram: extract: 8 new message\(s\) to read with anthropic /);
    const steps = lines.slice(1).map((line) => {
      const match = /^engram: extract: (\d+)\/(\d+) messages read, (\d+) memor(?:y|ies) written$/.exec(line);
      expect(match, line).not.toBeNull();
      return { read: Number(match![1]), of: Number(match![2]), written: Number(match![3]) };
    });
    // One step per call, then the job's end with what it wrote.
    expect(steps.length).toBe(calls + 1);
    expect(steps.every((step) => step.of === 8)).toBe(true);
    for (let index = 1; index < steps.length; index += 1)
      expect(steps[index]!.read).toBeGreaterThanOrEqual(steps[index - 1]!.read);
    expect(steps.at(-1)).toEqual({ read: 8, of: 8, written: document.written.length });
    expect(steps[0]!.written).toBe(0);
    expect(result.stdout).not.toContain('messages read');
    expect(result.stderr).not.toContain('\r');
  });

  it('says nothing with --quiet, nor by default when stderr is not a terminal', async () => {
    for (const flags of [['--quiet'], []]) {
      const path = transcript(3);
      scriptAnswers(3, `q${file}`);
      const result = await workspace.run(['extract', path, ...flags], { env: modelEnv });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/^Extracted from /);
    }
  });

  it('refuses --progress with --quiet, reading nothing', async () => {
    const path = transcript(2);
    const before = server.requests.length;
    const all = ['queue', '--state', 'pending,running,failed,done'];
    const jobs = (await workspace.json(all)).jobs;
    const result = await workspace.run(['extract', path, '--progress', '--quiet'], { env: modelEnv });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--progress and --quiet contradict/);
    expect(server.requests.length).toBe(before);
    expect((await workspace.json(all)).jobs).toEqual(jobs);
  });
});

describe('extract progress on a terminal', () => {
  it('redraws one line in place and ends it, so the report starts on a fresh line', () => {
    const written: string[] = [];
    const progress = createExtractProgress({ isTTY: true, write: (text: string) => written.push(text) }, true);
    progress.start(6, 'anthropic claude-haiku');
    progress.read({ jobId: 'job_1', messagesRead: 2, messages: 6 });
    progress.read({ jobId: 'job_1', messagesRead: 6, messages: 6 });
    progress.finish();
    expect(written).toEqual([
      'engram: extract: 6 new message(s) to read with anthropic claude-haiku\n',
      '\r\u001b[Kengram: extract: 2/6 messages read, 0 memories written',
      '\r\u001b[Kengram: extract: 6/6 messages read, 0 memories written',
      '\n',
    ]);
  });
});
