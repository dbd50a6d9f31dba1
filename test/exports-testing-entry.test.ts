import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `engram/testing` is for any test runner, so it must load where vitest is not installed. This test
// installs the built package into a temporary folder as a user's project would have it: the
// package's dist and package.json under node_modules/engram, its run-time dependencies beside it,
// and no vitest anywhere Node's resolution looks. A child `node` process then imports the entry.

const run = promisify(execFile);
const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs in the child: proves vitest is absent, uses the test doubles, and shows the suites entry is the one that needs vitest. */
const USER_SCRIPT = `
const vitest = await import('vitest').then(() => 'found', (error) => error.code);
const testing = await import('engram/testing');
const anthropic = await testing.startAnthropicMessagesServer();
anthropic.script({ message: { text: 'Hello from the loopback.' } });
const response = await fetch(anthropic.url + '/v1/messages', {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'test' },
  body: JSON.stringify({ model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
});
const answer = await response.json();
const recorded = anthropic.requests.length;
await anthropic.close();
const openai = await testing.startOpenAiChatCompletionsServer();
await openai.close();
const embeddings = await testing.startEmbeddingsServer({ dimensions: 4 });
const vectors = await fetch(embeddings.baseUrl + '/embeddings', {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'test-embed', input: ['tabs over spaces'] }),
}).then((reply) => reply.json());
await embeddings.close();
const model = new testing.ScriptedLanguageModel({ script: ['scripted answer'] });
const scripted = await model.generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 8 });
const suites = await import('engram/testing/suites').then(() => 'loaded', (error) => error.code + ' ' + (String(error.message).includes("'vitest'") ? 'vitest' : error.message));
console.log(JSON.stringify({
  vitest,
  status: response.status,
  text: answer.content?.[0]?.text,
  recorded,
  embeddingLength: vectors.data?.[0]?.embedding?.length,
  scripted: scripted.text,
  suites,
}));
`;

describe('engram/testing without vitest installed', () => {
  let project = '';

  beforeAll(() => {
    const dist = join(PACKAGE_ROOT, 'dist', 'testing', 'index.js');
    if (!existsSync(dist))
      throw new Error(
        'Run `npm run build` first: this test installs the built package (dist/) into a temporary project.',
      );
    project = mkdtempSync(join(tmpdir(), 'engram-no-vitest-'));
    const installed = join(project, 'node_modules', 'engram');
    mkdirSync(installed, { recursive: true });
    // Copied, not linked: Node resolves a linked package from its real path, where the development
    // node_modules (with vitest) would be found.
    cpSync(join(PACKAGE_ROOT, 'dist'), join(installed, 'dist'), {
      recursive: true,
      filter: (source) => !source.endsWith('.map'),
    });
    cpSync(join(PACKAGE_ROOT, 'package.json'), join(installed, 'package.json'));
    const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const dependency of Object.keys(manifest.dependencies)) {
      const target = join(project, 'node_modules', dependency);
      mkdirSync(join(target, '..'), { recursive: true });
      symlinkSync(join(PACKAGE_ROOT, 'node_modules', dependency), target, 'dir');
    }
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'user-project', private: true, type: 'module' }),
    );
  });

  afterAll(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('imports and serves the loopback servers and the scripted model, and only the suites entry asks for vitest', async () => {
    const script = join(project, 'use-testing.mjs');
    writeFileSync(script, USER_SCRIPT);
    const { stdout } = await run(process.execPath, [script], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({
      // The setup is what it claims: vitest cannot be resolved from the project.
      vitest: 'ERR_MODULE_NOT_FOUND',
      status: 200,
      text: 'Hello from the loopback.',
      recorded: 1,
      embeddingLength: 4,
      scripted: 'scripted answer',
      suites: 'ERR_MODULE_NOT_FOUND vitest',
    });
  });
});
