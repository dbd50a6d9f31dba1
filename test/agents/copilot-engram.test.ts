import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import { agentRuns, agentTestWorld, hookLogOf, STAGING_FACT, waitForMemory } from '../support/agent-e2e.js';

// engram with the real GitHub Copilot CLI (issue 28): `engram install copilot` with COPILOT_HOME set
// (so the install is checked to land where Copilot reads), `copilot -p` offline against the loopback
// chat completions server, the hooks run through engram's one hook runner (built dist/, so `npm run
// build` first). Remembered in project A: in A's request, never in B's; "remember that …" said in
// Copilot is stored from its events.jsonl and reaches Claude Code's next prompt in A (its hook, run
// as Claude Code runs it), never in B; a corrupt store leaves the answer as it was; uninstall leaves
// mcp-config.json byte for byte and takes engram's hooks file out.

const RUN_TIMEOUT_MS = 120_000;
const copilot = agentCliOrSkip('copilot');

const world = agentTestWorld('copilot');
const { root, home, projectA, projectB } = world;
// Not ~/.copilot: Copilot 1.0.102 reads its hooks, MCP config and sessions from COPILOT_HOME.
const copilotHome = join(root, 'copilot-home');
let env: Record<string, string> = {};

let server: LanguageModelServer;
const runs = agentRuns({
  home,
  cli: copilot,
  promptArgs: (prompt) => ['-p', prompt, '--allow-all-tools'],
  env: () => env,
  server: () => server,
  timeoutMs: RUN_TIMEOUT_MS - 10_000,
});
const { engram, engramOk, ask } = runs;

/** engram's hook log, shown when a memory did not reach a request (a deadline, a lock). */
const hookLog = (): string => {
  try {
    return hookLogOf(home).slice(-4_000);
  } catch {
    return 'no hook log';
  }
};

/** Each Copilot session's hook runs as its events.jsonl records them (hook.start / hook.end), for a failure's message. */
function copilotHookRecords(sessions: string): string {
  if (!existsSync(sessions)) return 'no sessions';
  const lines: string[] = [];
  for (const session of readdirSync(sessions).filter((name) => !name.startsWith('.'))) {
    const file = join(sessions, session, 'events.jsonl');
    const records = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
    const hooks = records.filter((line) => line.includes('"type":"hook.'));
    lines.push(`${session}: ${records.length} records`, ...hooks.map((line) => `  ${line.slice(0, 400)}`));
  }
  return lines.join('\n');
}

const userMcpConfig = `{\n  "mcpServers": {\n    "notes": { "type": "local", "command": "true", "args": [], "tools": ["*"] }\n  }\n}`; // No final newline.

describe.skipIf(!copilot)('engram with the real Copilot CLI', () => {
  beforeAll(async () => {
    server = await startOpenAiChatCompletionsServer();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      TERM: 'dumb',
      COPILOT_HOME: copilotHome,
      COPILOT_OFFLINE: 'true',
      COPILOT_PROVIDER_BASE_URL: server.url,
      COPILOT_PROVIDER_API_KEY: 'test',
      COPILOT_MODEL: 'loop-model',
      // On a loaded shared machine a Node start alone passed 1 s at p95: the default 1 s deadline then
      // answers with nothing (fail open, tested in test/surfaces/claude-code). Here what is checked is
      // that memory reaches Copilot, so the deadline stays under Copilot's own 10 s timeoutSec.
      ENGRAM_HOOK_DEADLINE_MS: '8000',
    };
    world.createFolders([home, copilotHome]);
    writeFileSync(join(copilotHome, 'mcp-config.json'), userMcpConfig);
  });
  afterAll(() => server?.close());

  it(
    'install, recall in A and never in B, remember in Copilot reaching Claude Code, a corrupt store, uninstall byte for byte',
    async () => {
      const mcpBefore = readFileSync(join(copilotHome, 'mcp-config.json'));
      await engramOk(['install', 'copilot'], projectA);
      expect(existsSync(join(copilotHome, 'hooks', 'engram.json'))).toBe(true);
      expect(existsSync(join(home, '.copilot'))).toBe(false);
      expect((await engram(['status'], projectA)).stdout).toMatch(/copilot\s+runs engram/);

      await engramOk(['remember', STAGING_FACT], projectA);
      const inA = await ask('Which port does the staging database use?', projectA);
      expect(inA.body, hookLog()).toContain('port 6543 (host quartz-heron)');
      // The MCP server from mcp-config.json: Copilot offers engram's tools to the model.
      expect(inA.body).toContain('"name":"engram-memory_search"');
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Copilot: agentStop/sessionEnd spool its events.jsonl, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      const stored = await waitForMemory(() => engram(['list', '--json'], projectA), 'trunk-blue');
      if (!stored.includes('trunk-blue')) {
        const jobs = (await engram(['queue', 'list', '--state', 'pending,running,failed,done', '--json'], projectA))
          .stdout;
        const sessions = join(copilotHome, 'session-state');
        expect.fail(
          `"trunk-blue" was not stored.\nhook log:\n${hookLog()}\njobs:\n${jobs.slice(-3_000)}\nCopilot's hooks:\n${copilotHookRecords(sessions)}`,
        );
      }
      // Another agent, same project: Claude Code's next prompt gets it; never in B.
      await runs.expectClaudeCodeGiven('trunk-blue', { given: projectA, notGiven: projectB });
      // And Copilot's own next session in A.
      expect((await ask('What is the release branch called?', projectA)).body, hookLog()).toContain('trunk-blue');

      // A corrupt store: Copilot answers as it did, the hook says why in its log.
      await runs.expectCorruptStoreFailsOpen(projectA);

      await engramOk(['uninstall', 'copilot'], projectA);
      expect(readFileSync(join(copilotHome, 'mcp-config.json')).equals(mcpBefore)).toBe(true);
      expect(existsSync(join(copilotHome, 'hooks', 'engram.json'))).toBe(false);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
