import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiResponsesServer } from '../../src/testing/openai-responses-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import { agentRuns, agentTestWorld, codexLoopConfig, STAGING_FACT } from '../support/agent-e2e.js';

// engram with the real Codex CLI (issue 28): `engram install codex` in a temp HOME, `codex exec`
// against the loopback Responses server, the hooks run through engram's one hook runner (built
// dist/, so `npm run build` first). Remembered in project A: in A's request, never in B's; "remember
// that …" said in Codex reaches the next Codex session in A; a corrupt store leaves the answer as it
// was; a stale trust hash is reported; uninstall leaves config.toml and hooks.json byte for byte.

const RUN_TIMEOUT_MS = 120_000;
const codex = agentCliOrSkip('codex');

const world = agentTestWorld('codex');
const { home, projectA, projectB } = world;
const codexHome = join(home, '.codex');
const env = { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', LOOP_API_KEY: 'test' };

let server: LanguageModelServer;
const runs = agentRuns({
  home,
  cli: codex,
  promptArgs: (prompt) => ['exec', '--skip-git-repo-check', prompt],
  env: () => env,
  server: () => server,
  timeoutMs: RUN_TIMEOUT_MS - 10_000,
});
const { engram, engramOk, ask } = runs;

// No final newline: install must not add one for good.
const userConfig = (url: string): string => ['# my Codex settings', ...codexLoopConfig(url)].join('\n');
const userHooks = `{\n    "hooks": {\n        "PostToolUse": [ { "hooks": [ { "type": "command", "command": "true" } ] } ]\n    }\n}\n`;

describe.skipIf(!codex)('engram with the real Codex CLI', () => {
  beforeAll(async () => {
    server = await startOpenAiResponsesServer();
    world.createFolders([codexHome]);
    writeFileSync(join(codexHome, 'config.toml'), userConfig(server.url));
    writeFileSync(join(codexHome, 'hooks.json'), userHooks);
  });
  afterAll(() => server?.close());

  it(
    'install, recall in A and never in B, remember in Codex reaching the next session, a stale hash, a corrupt store, uninstall byte for byte',
    async () => {
      const configBefore = readFileSync(join(codexHome, 'config.toml'));
      const hooksBefore = readFileSync(join(codexHome, 'hooks.json'));
      await engramOk(['install', 'codex'], projectA);
      const status = await engram(['status'], projectA);
      expect(status.stdout).toMatch(/codex\s+runs engram/);

      await engramOk(['remember', STAGING_FACT], projectA);
      expect((await ask('Which port does the staging database use?', projectA)).body).toContain(
        'port 6543 (host quartz-heron)',
      );
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Codex: the Stop hook spools the rollout, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      await runs.expectStored('trunk-blue', projectA);
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
      await runs.expectCorruptStoreFailsOpen(projectA);

      await engramOk(['uninstall', 'codex'], projectA);
      expect(readFileSync(join(codexHome, 'config.toml')).equals(configBefore)).toBe(true);
      expect(readFileSync(hooksFile).equals(hooksBefore)).toBe(true);
      expect(existsSync(join(home, '.engram', 'agent-installs.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
