import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGeminiGenerateContentServer } from '../../src/testing/gemini-generate-content-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import { agentRuns, agentTestWorld, STAGING_FACT } from '../support/agent-e2e.js';

// engram with the real Gemini CLI (issue 28): `engram install gemini` in a temp HOME, `gemini -p`
// against the loopback generateContent server, the hooks run through engram's one hook runner
// (built dist/, so `npm run build` first). Remembered in project A: in A's request, never in B's;
// the engram MCP server starts; "remember that …" said in Gemini CLI reaches Claude Code's next
// session in A (its real hook command), never B's; a corrupt store leaves Gemini's answer as it
// was; uninstall leaves settings.json byte for byte.

const RUN_TIMEOUT_MS = 120_000;
const gemini = agentCliOrSkip('gemini');

const world = agentTestWorld('gemini');
const { home, projectA, projectB } = world;
const settingsFile = join(home, '.gemini', 'settings.json');
let server: LanguageModelServer;
const env = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: home,
  TERM: 'dumb',
  GEMINI_API_KEY: 'test',
  GOOGLE_GEMINI_BASE_URL: server.url,
  // Headless in a folder Gemini CLI has not been told to trust (test/support/agent-clis.md §2).
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
});

const runs = agentRuns({
  home,
  cli: gemini,
  promptArgs: (prompt) => ['-m', 'gemini-2.5-flash', '-p', prompt],
  env,
  server: () => server,
  timeoutMs: RUN_TIMEOUT_MS - 10_000,
});
const { engram, engramOk, ask } = runs;

// The user's own settings, as a person writes them (no final newline: install must not add one for good).
const userSettings = `{
    "security": { "auth": { "selectedType": "gemini-api-key" } },
    "privacy": { "usageStatisticsEnabled": false },
    "telemetry": { "enabled": false },
    "hooks": { "AfterTool": [ { "hooks": [ { "type": "command", "command": "true", "timeout": 5000 } ] } ] }
}`;

describe.skipIf(!gemini)('engram with the real Gemini CLI', () => {
  beforeAll(async () => {
    server = await startGeminiGenerateContentServer();
    world.createFolders([join(home, '.gemini')]);
    writeFileSync(settingsFile, userSettings);
  });
  afterAll(() => server?.close());

  it(
    "install, recall in A and never in B, remember in Gemini reaching Claude Code's next session, a corrupt store, uninstall byte for byte",
    async () => {
      const settingsBefore = readFileSync(settingsFile);
      await engramOk(['install', 'gemini'], projectA);
      expect((await engram(['status'], projectA)).stdout).toMatch(/gemini\s+runs engram/);

      await engramOk(['remember', STAGING_FACT], projectA);
      const inA = await ask('Which port does the staging database use?', projectA);
      // BeforeAgent's context, as Gemini CLI puts a hook's context into the user turn.
      expect(inA.body).toMatch(/<hook_context>[^]*port 6543 \(host quartz-heron\)/);
      // The MCP server install wrote: Gemini CLI started it and passed on its instructions.
      expect(inA.body).toContain("instructions provided by the tool server 'engram'");
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Gemini CLI: AfterAgent spools the chat file, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      await runs.expectStored('trunk-blue', projectA);
      // Another agent, same project: Claude Code's prompt hook gives it; in B it does not.
      await runs.expectClaudeCodeGiven('trunk-blue', { given: projectA, notGiven: projectB });

      // A corrupt store: Gemini CLI answers as it did, the hook says why in its log.
      await runs.expectCorruptStoreFailsOpen(projectA);

      await engramOk(['uninstall', 'gemini'], projectA);
      expect(readFileSync(settingsFile).equals(settingsBefore)).toBe(true);
      expect(existsSync(join(home, '.engram', 'agent-installs.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
