import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import { agentRuns, agentTestWorld, STAGING_FACT } from '../support/agent-e2e.js';

// engram with the real Qwen Code (issue 28): `engram install qwen` in a temp HOME, `qwen -p`
// against the loopback chat completions server, the hooks run through engram's one hook runner
// (built dist/, so `npm run build` first). Remembered in project A: in A's request, never in B's;
// the engram MCP server starts; "remember that …" said in Qwen Code reaches Claude Code's next
// session in A (its real hook command), never B's; a corrupt store leaves Qwen's answer as it
// was; uninstall leaves settings.json byte for byte.

const RUN_TIMEOUT_MS = 120_000;
const qwen = agentCliOrSkip('qwen');

const world = agentTestWorld('qwen');
const { home, projectA, projectB } = world;
const settingsFile = join(home, '.qwen', 'settings.json');
let server: LanguageModelServer;
const env = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: home,
  TERM: 'dumb',
  OPENAI_API_KEY: 'test',
  OPENAI_BASE_URL: server.url,
  OPENAI_MODEL: 'loop-model',
});

const runs = agentRuns({
  home,
  cli: qwen,
  promptArgs: (prompt) => ['-p', prompt],
  env,
  server: () => server,
  timeoutMs: RUN_TIMEOUT_MS - 10_000,
});
const { engram, engramOk, ask } = runs;

// The user's own settings, as a person writes them (no final newline: install must not add one for
// good), with the "$version" Qwen Code 0.24.4 adds on its first run (it rewrites a file without it).
const userSettings = `{
    "security": { "auth": { "selectedType": "openai" } },
    "privacy": { "usageStatisticsEnabled": false },
    "telemetry": { "enabled": false },
    "hooks": { "PostToolUse": [ { "hooks": [ { "type": "command", "command": "true", "timeout": 5 } ] } ] },
    "$version": 4
}`;

describe.skipIf(!qwen)('engram with the real Qwen Code', () => {
  beforeAll(async () => {
    // Qwen Code's own memory step asks the model after each turn; it is answered like any other.
    server = await startOpenAiChatCompletionsServer();
    world.createFolders([join(home, '.qwen')]);
    writeFileSync(settingsFile, userSettings);
  });
  afterAll(() => server?.close());

  it(
    "install, recall in A and never in B, remember in Qwen reaching Claude Code's next session, a corrupt store, uninstall byte for byte",
    async () => {
      const settingsBefore = readFileSync(settingsFile);
      await engramOk(['install', 'qwen'], projectA);
      expect((await engram(['status'], projectA)).stdout).toMatch(/qwen\s+runs engram/);

      await engramOk(['remember', STAGING_FACT], projectA);
      const inA = await ask('Which port does the staging database use?', projectA);
      // UserPromptSubmit's context, as Qwen Code puts it into the user turn (its submitted_prompt is the typed text).
      expect(inA.body).toMatch(/<qwen:user-prompt-submit-context>[^]*port 6543 \(host quartz-heron\)/);
      // The MCP server install wrote: Qwen Code started it and offers its tools.
      expect(inA.body).toContain('memory_search');
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Qwen Code: Stop spools the chat file, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      await runs.expectStored('trunk-blue', projectA);
      // Another agent, same project: Claude Code's prompt hook gives it; in B it does not.
      await runs.expectClaudeCodeGiven('trunk-blue', { given: projectA, notGiven: projectB });

      // A corrupt store: Qwen Code answers as it did, the hook says why in its log.
      await runs.expectCorruptStoreFailsOpen(projectA);

      await engramOk(['uninstall', 'qwen'], projectA);
      expect(readFileSync(settingsFile).equals(settingsBefore)).toBe(true);
      expect(existsSync(join(home, '.engram', 'agent-installs.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
