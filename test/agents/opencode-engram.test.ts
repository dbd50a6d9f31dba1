import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import {
  agentRuns,
  agentTestWorld,
  corruptStore,
  hookLogOf,
  openCodeLoopSettings,
  STAGING_FACT,
} from '../support/agent-e2e.js';

// engram with the real OpenCode CLI (issue 28): `engram install opencode` in a temp HOME, `opencode
// run` against the loopback chat completions server, engram's plugin running the one hook runner
// (built dist/, so `npm run build` first). OpenCode starts slowly under load: three runs in all.
// Remembered in project A: in A's request, never in B's; "remember that …" said in OpenCode is
// stored (from OpenCode's SQLite rows at session.idle) and reaches Claude Code's next session in A;
// a corrupt store leaves the answer as it was; uninstall leaves opencode.json byte for byte.

const LAUNCHER = join(process.cwd(), 'plugins', 'engram', 'scripts', 'engram.mjs');
const RUN_TIMEOUT_MS = 200_000;
const opencode = agentCliOrSkip('opencode');

const world = agentTestWorld('opencode');
const { home, projectA, projectB } = world;
const config = join(home, '.config', 'opencode');
const env = {
  PATH: process.env.PATH ?? '',
  HOME: home,
  TERM: 'dumb',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  // The wiring is tested here, not the latency (npm run bench): OpenCode's start loads a shared
  // two-core machine so much that a hook past the default 1 s deadline would answer with nothing.
  ENGRAM_HOOK_DEADLINE_MS: '8000',
};

let server: LanguageModelServer;
// ask: the requests one OpenCode run made (its title request and the turn).
const runs = agentRuns({
  home,
  cli: opencode,
  promptArgs: (prompt) => ['run', prompt],
  env: () => env,
  server: () => server,
  timeoutMs: RUN_TIMEOUT_MS - 10_000,
});
const { run, engram, engramOk, ask } = runs;

// The user's own settings (a provider, no telemetry), tab-indented with no final newline: uninstall must give these bytes back.
const userSettings = (url: string): string =>
  JSON.stringify({ $schema: 'https://opencode.ai/config.json', ...openCodeLoopSettings(url) }, null, '\t');

describe.skipIf(!opencode)('engram with the real OpenCode CLI', () => {
  beforeAll(async () => {
    server = await startOpenAiChatCompletionsServer({
      respond: (request) =>
        request.rawBody.includes('Generate a title for this conversation') ? { message: { text: 'Notes' } } : undefined,
    });
    world.createFolders([config]);
    writeFileSync(join(config, 'opencode.json'), userSettings(server.url));
  });
  afterAll(() => server?.close());

  it(
    'install, recall in A and never in B, remember in OpenCode reaching Claude Code, a corrupt store, uninstall byte for byte',
    async () => {
      const settingsBefore = readFileSync(join(config, 'opencode.json'));
      await engramOk(['install', 'opencode'], projectA);
      expect((await engram(['status'], projectA)).stdout).toMatch(/opencode\s+loads engram/);

      await engramOk(['remember', STAGING_FACT], projectA);
      // One turn: the recall for the question, and a statement to remember said in OpenCode.
      const first = await ask(
        'Remember that the release branch is called trunk-blue. Which port does the staging database use?',
        projectA,
      );
      expect(first.body).toContain('port 6543 (host quartz-heron)');
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // session.idle spooled the session (its rows in opencode.db); the worker stores the statement.
      await runs.expectStored('trunk-blue', projectA);
      // Another agent's next session in A (Claude Code's session-start hook) is given it; B's is not.
      const claude = (cwd: string) =>
        run(
          process.execPath,
          [LAUNCHER, 'hook', 'session-start', '--from', 'engram-plugin'],
          cwd,
          JSON.stringify({ session_id: `claude-${cwd.length}-${Date.now()}`, cwd, source: 'startup' }),
        );
      expect((await claude(projectA)).stdout).toContain('trunk-blue');
      expect((await claude(projectB)).stdout).not.toContain('trunk-blue');

      // A corrupt store: OpenCode answers as it did, the plugin's runner says why in its log.
      corruptStore(home);
      const broken = await ask(
        'Remember that the release branch is called trunk-blue. Which port does the staging database use?',
        projectA,
      );
      expect(broken.stdout).toBe(first.stdout);
      expect(broken.body).not.toContain('quartz-heron');
      expect(hookLogOf(home)).toMatch(/"event":"chat.message","agent":"opencode"[^\n]*"status":"failed"/);

      await engramOk(['uninstall', 'opencode'], projectA);
      expect(readFileSync(join(config, 'opencode.json')).equals(settingsBefore)).toBe(true);
      expect(existsSync(join(config, 'plugin', 'engram.js'))).toBe(false);
    },
    RUN_TIMEOUT_MS * 4,
  );
});
