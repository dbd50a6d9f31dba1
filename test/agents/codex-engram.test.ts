import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiResponsesServer } from '../../src/testing/openai-responses-server.js';
import { findAgentCli } from '../support/agent-clis.js';
import { removeWhenIdle } from '../support/remove-when-idle.js';

// engram with the real Codex CLI (issue 28): `engram install codex` in a temp HOME, `codex exec`
// against the loopback Responses server, the hooks run through engram's one hook runner (built
// dist/, so `npm run build` first). Remembered in project A: in A's request, never in B's; "remember
// that …" said in Codex reaches the next Codex session in A; a corrupt store leaves the answer as it
// was; a stale trust hash is reported; uninstall leaves config.toml and hooks.json byte for byte.

const CLI = join(process.cwd(), 'dist', 'surfaces', 'cli', 'main.js');
const RUN_TIMEOUT_MS = 120_000;
const found = findAgentCli('codex');
const codex = 'cli' in found ? found.cli : undefined;
if (!codex) console.log(`codex: skipped: ${'missing' in found ? found.missing : ''}`);

const root = realpathSync(mkdtempSync(join(tmpdir(), 'engram-codex-')));
afterAll(() => removeWhenIdle(root));
const home = join(root, 'home');
const projectA = join(root, 'alpha');
const projectB = join(root, 'beta');
const codexHome = join(home, '.codex');
const env = { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', LOOP_API_KEY: 'test' };

function run(
  command: string,
  args: readonly string[],
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS - 10_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const engram = (args: readonly string[], cwd: string) => run(process.execPath, [CLI, ...args], cwd);
const exec = (prompt: string, cwd: string) =>
  run(codex!.command, [...codex!.args, 'exec', '--skip-git-repo-check', prompt], cwd);

let server: LanguageModelServer;
/** The requests one Codex run made, as text. */
async function ask(prompt: string, cwd: string): Promise<{ body: string; stdout: string }> {
  const before = server.requests.length;
  const result = await exec(prompt, cwd);
  expect(result.code, result.stderr).toBe(0);
  return {
    body: server.requests
      .slice(before)
      .map((request) => request.rawBody)
      .join('\n'),
    stdout: result.stdout,
  };
}

const userConfig = (url: string): string =>
  [
    '# my Codex settings',
    'model = "gpt-test"',
    'model_provider = "loop"',
    '',
    '[model_providers.loop]',
    'name = "loop"',
    `base_url = "${url}"`,
    "env_key = 'LOOP_API_KEY'",
    'wire_api = "responses"',
    '',
    '[analytics]',
    'enabled = false # no telemetry',
  ].join('\n'); // No final newline: install must not add one for good.
const userHooks = `{\n    "hooks": {\n        "PostToolUse": [ { "hooks": [ { "type": "command", "command": "true" } ] } ]\n    }\n}\n`;

describe.skipIf(!codex)('engram with the real Codex CLI', () => {
  beforeAll(async () => {
    server = await startOpenAiResponsesServer();
    for (const folder of [codexHome, projectA, projectB]) mkdirSync(folder, { recursive: true });
    for (const project of [projectA, projectB]) spawnSync('git', ['init', '-q', project]);
    writeFileSync(join(codexHome, 'config.toml'), userConfig(server.url));
    writeFileSync(join(codexHome, 'hooks.json'), userHooks);
  });
  afterAll(() => server?.close());

  it(
    'install, recall in A and never in B, remember in Codex reaching the next session, a stale hash, a corrupt store, uninstall byte for byte',
    async () => {
      const configBefore = readFileSync(join(codexHome, 'config.toml'));
      const hooksBefore = readFileSync(join(codexHome, 'hooks.json'));
      const installed = await engram(['install', 'codex'], projectA);
      expect(installed.code, installed.stderr).toBe(0);
      const status = await engram(['status'], projectA);
      expect(status.stdout).toMatch(/codex\s+runs engram/);

      const remembered = await engram(
        ['remember', 'The staging database listens on port 6543 (host quartz-heron).'],
        projectA,
      );
      expect(remembered.code, remembered.stderr).toBe(0);
      expect((await ask('Which port does the staging database use?', projectA)).body).toContain(
        'port 6543 (host quartz-heron)',
      );
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Codex: the Stop hook spools the rollout, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      let stored = '';
      for (let waited = 0; waited < 90_000 && !stored.includes('trunk-blue'); waited += 1_000) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        stored = (await engram(['list', '--json'], projectA)).stdout;
      }
      expect(stored).toContain('trunk-blue');
      expect((await ask('What is the release branch called?', projectA)).body).toContain('trunk-blue');
      expect((await ask('What is the release branch called?', projectB)).body).not.toContain('trunk-blue');

      // Codex runs a hook only when its trust hash matches: an edited hook is reported, install again fixes it.
      const hooksFile = join(codexHome, 'hooks.json');
      const edited = readFileSync(hooksFile, 'utf8').replace('"timeout": 10', '"timeout": 11');
      expect(edited).not.toBe(readFileSync(hooksFile, 'utf8'));
      writeFileSync(hooksFile, edited);
      expect((await engram(['status'], projectA)).stdout).toContain('no longer matches');
      expect((await engram(['install', 'codex'], projectA)).code).toBe(0);
      expect((await engram(['status'], projectA)).stdout).toMatch(/codex\s+runs engram/);

      // A corrupt store: Codex answers as it did, the hook says why in its log.
      const plain = await ask('Say hello.', projectA);
      const database = readdirSync(join(home, '.engram')).find((name) => name.endsWith('.db'));
      expect(database).toBeDefined();
      writeFileSync(join(home, '.engram', database!), 'not a database '.repeat(500));
      const broken = await ask('Say hello.', projectA);
      expect(broken.stdout).toBe(plain.stdout);
      const log = readFileSync(join(home, '.engram', 'logs', 'claude-code-hooks.log'), 'utf8');
      expect(log).toMatch(/"agent":"codex"[^\n]*"status":"failed"/);

      const removed = await engram(['uninstall', 'codex'], projectA);
      expect(removed.code, removed.stderr).toBe(0);
      expect(readFileSync(join(codexHome, 'config.toml')).equals(configBefore)).toBe(true);
      expect(readFileSync(hooksFile).equals(hooksBefore)).toBe(true);
      expect(existsSync(join(home, '.engram', 'agent-installs.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
