import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readTranscriptFile } from '../../src/extraction/node/read-transcript.js';
import { listOpenCodeSessions, readOpenCodeSession } from '../../src/extraction/node/read-opencode-session.js';
import { startGeminiGenerateContentServer } from '../../src/testing/gemini-generate-content-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import { startOpenAiResponsesServer } from '../../src/testing/openai-responses-server.js';
import { agentCliOrSkip } from '../support/agent-clis.js';
import { codexLoopConfig, openCodeLoopSettings, runProcess, useModelServer } from '../support/agent-e2e.js';
import { removeWhenIdle } from '../support/remove-when-idle.js';

// Each agent's real CLI, headless, in a temp HOME, against the loopback server of its protocol, with
// a probe hook (or OpenCode plugin) installed the way test/support/agent-clis.md says: the context it
// prints at session start and per prompt must reach the model's request, and the agent's own session
// file must read back (through engram's reader) with the typed prompt and without the injected text.
// This pins the hook protocol of the pinned versions; the install command builds on it.

const PROBE_HOOK = fileURLToPath(new URL('../fixtures/agents/probe-hook.mjs', import.meta.url));
const PROBE_PLUGIN = fileURLToPath(new URL('../fixtures/agents/probe-plugin.js', import.meta.url));
const PROMPT = 'What does notes.txt say?';
const RUN_TIMEOUT_MS = 200_000;

const root = realpathSync(mkdtempSync(join(tmpdir(), 'engram-agent-cli-')));
afterAll(() => removeWhenIdle(root));

interface World {
  home: string;
  project: string;
  log: string;
  env: Record<string, string>;
}

function world(name: string): World {
  const home = join(root, name, 'home');
  const project = join(root, name, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'notes.txt'), 'The deploy target is Frankfurt.\n');
  const log = join(root, name, 'probe.jsonl');
  writeFileSync(log, '');
  return { home, project, log, env: { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', ENGRAM_PROBE_LOG: log } };
}

const run = (
  cli: { command: string; args: string[] },
  args: readonly string[],
  options: { cwd: string; env: Record<string, string> },
) => runProcess(cli.command, [...cli.args, ...args], { ...options, timeoutMs: RUN_TIMEOUT_MS - 10_000 });

const hook = (shape: string, event: string): string => `node ${JSON.stringify(PROBE_HOOK)} ${shape} ${event}`;
const probes = (log: string): Array<{ event: string; input: Record<string, unknown> }> =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { event: string; input: Record<string, unknown> });
const bodyText = (server: LanguageModelServer): string => server.requests.map((request) => request.rawBody).join('\n');
const files = (directory: string, suffix: string): string[] =>
  existsSync(directory)
    ? readdirSync(directory, { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith(suffix))
        .map((name) => join(directory, name))
    : [];

/**
 * Codex's trust record for a hook: sha256 over the canonical (sorted keys, compact) JSON of
 * `{event_name: <snake_case event>, hooks: [{type, command, timeout, async}]}` (plus `matcher` when
 * the group has one), keyed `<hooks.json path>:<event>:<group index>:<handler index>` in config.toml.
 */
function codexTrust(hooksFile: string, event: string, command: string, timeout: number): string {
  const label = event.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
  const identity = `{"event_name":${JSON.stringify(label)},"hooks":[{"async":false,"command":${JSON.stringify(command)},"timeout":${timeout},"type":"command"}]}`;
  const hash = `sha256:${createHash('sha256').update(identity).digest('hex')}`;
  return `[hooks.state.${JSON.stringify(`${hooksFile}:${label}:0:0`)}]\ntrusted_hash = "${hash}"\n`;
}

/** Hooks in the nested shape (Codex, Gemini CLI, Qwen Code): each event's group runs the probe with `handler` beside it. */
const nestedHooks = (events: readonly string[], handler: Record<string, unknown>) =>
  Object.fromEntries(
    events.map((event) => [
      event,
      [{ hooks: [{ type: 'command', command: hook('hook-specific', event), ...handler }] }],
    ]),
  );

/** The session read back holds the typed prompt as its one user message (after `clean`) and none of the probes' context. */
function expectTypedPromptOnly(
  messages: ReadonlyArray<{ role: string; meta?: unknown; text: string }>,
  clean: (text: string) => string = (text) => text,
): void {
  const typed = messages.filter((message) => message.role === 'user' && !message.meta);
  expect(typed.map((message) => clean(message.text))).toEqual([PROMPT]);
  expect(JSON.stringify(messages)).not.toContain('ENGRAM-PROBE-CONTEXT');
}

describe('Codex', () => {
  const cli = agentCliOrSkip('codex');
  const server = useModelServer(() => startOpenAiResponsesServer());

  it.skipIf(!cli)(
    'runs hooks.json only once config.toml records its trust hash; the context reaches the request as developer messages',
    async () => {
      const w = world('codex');
      const codexHome = join(w.home, '.codex');
      mkdirSync(codexHome);
      const hooksFile = join(codexHome, 'hooks.json');
      const events = ['SessionStart', 'UserPromptSubmit'];
      writeFileSync(
        hooksFile,
        JSON.stringify({
          hooks: nestedHooks(events, { timeout: 30 }),
        }),
      );
      const config = [...codexLoopConfig(server.url), ''].join('\n');
      writeFileSync(join(codexHome, 'config.toml'), config);
      const env = { ...w.env, LOOP_API_KEY: 'test' };
      const args = ['exec', '--skip-git-repo-check', PROMPT];
      // Untrusted: skipped without a word.
      const untrusted = await run(cli!, args, { cwd: w.project, env });
      expect(untrusted.code, untrusted.stderr).toBe(0);
      expect(probes(w.log)).toEqual([]);
      writeFileSync(
        join(codexHome, 'config.toml'),
        config + events.map((event) => codexTrust(hooksFile, event, hook('hook-specific', event), 30)).join('\n'),
      );
      const before = server.requests.length;
      const trusted = await run(cli!, args, { cwd: w.project, env });
      expect(trusted.code, trusted.stderr).toBe(0);
      expect(probes(w.log).map((probe) => probe.event)).toEqual(events);
      const prompt = probes(w.log)[1]!.input;
      expect(prompt).toMatchObject({ hook_event_name: 'UserPromptSubmit', prompt: PROMPT, cwd: w.project });
      const request = server.requests[before]!.body as {
        input: Array<{ role?: string; content?: Array<{ text?: string }> }>;
      };
      const developer = request.input
        .filter((item) => item.role === 'developer')
        .map((item) => item.content?.[0]?.text);
      expect(developer).toContain('ENGRAM-PROBE-CONTEXT SessionStart');
      expect(developer).toContain('ENGRAM-PROBE-CONTEXT UserPromptSubmit');
      const transcript = await readTranscriptFile(String(prompt.transcript_path));
      expectTypedPromptOnly(transcript.conversation.messages);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('Gemini CLI', () => {
  const cli = agentCliOrSkip('gemini');
  const server = useModelServer(() => startGeminiGenerateContentServer());

  it.skipIf(!cli)(
    'SessionStart and BeforeAgent context (timeouts in ms) reaches the request as <hook_context> in the user turn',
    async () => {
      const w = world('gemini');
      mkdirSync(join(w.home, '.gemini'));
      const events = ['SessionStart', 'BeforeAgent', 'AfterAgent', 'SessionEnd'];
      writeFileSync(
        join(w.home, '.gemini', 'settings.json'),
        JSON.stringify({
          security: { auth: { selectedType: 'gemini-api-key' } },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          hooks: nestedHooks(events, { name: 'probe', timeout: 30_000 }),
        }),
      );
      const result = await run(cli!, ['-m', 'gemini-2.5-flash', '-p', PROMPT], {
        cwd: w.project,
        env: {
          ...w.env,
          GEMINI_API_KEY: 'test',
          GOOGLE_GEMINI_BASE_URL: server.url,
          GEMINI_CLI_TRUST_WORKSPACE: 'true',
        },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(probes(w.log).map((probe) => probe.event)).toEqual(events);
      const body = bodyText(server);
      expect(body).toContain('<hook_context>ENGRAM-PROBE-CONTEXT SessionStart</hook_context>');
      expect(body).toContain('<hook_context>ENGRAM-PROBE-CONTEXT BeforeAgent</hook_context>');
      const transcript = await readTranscriptFile(String(probes(w.log)[1]!.input.transcript_path));
      expectTypedPromptOnly(transcript.conversation.messages);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('Copilot CLI', () => {
  const cli = agentCliOrSkip('copilot');
  const server = useModelServer(() => startOpenAiChatCompletionsServer());

  it.skipIf(!cli)(
    'user hooks in ~/.copilot/hooks: sessionStart and userPromptSubmitted context reach the request',
    async () => {
      const w = world('copilot');
      mkdirSync(join(w.home, '.copilot', 'hooks'), { recursive: true });
      const events = ['sessionStart', 'userPromptSubmitted', 'agentStop', 'sessionEnd'];
      writeFileSync(
        join(w.home, '.copilot', 'hooks', 'engram-probe.json'),
        JSON.stringify({
          version: 1,
          hooks: Object.fromEntries(
            events.map((event) => [event, [{ type: 'command', bash: hook('flat', event), timeoutSec: 30 }]]),
          ),
        }),
      );
      const result = await run(cli!, ['-p', PROMPT, '--allow-all-tools'], {
        cwd: w.project,
        env: {
          ...w.env,
          COPILOT_OFFLINE: 'true',
          COPILOT_PROVIDER_BASE_URL: server.url,
          COPILOT_PROVIDER_API_KEY: 'test',
          COPILOT_MODEL: 'loop-model',
        },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(probes(w.log).map((probe) => probe.event)).toEqual(events);
      const body = bodyText(server);
      expect(body).toContain('ENGRAM-PROBE-CONTEXT sessionStart');
      expect(body).toContain('<system_reminder>\\nENGRAM-PROBE-CONTEXT userPromptSubmitted\\n</system_reminder>');
      const stop = probes(w.log).find((probe) => probe.event === 'agentStop')!;
      const transcript = await readTranscriptFile(String(stop.input.transcriptPath));
      expectTypedPromptOnly(transcript.conversation.messages);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('Qwen Code', () => {
  const cli = agentCliOrSkip('qwen');
  // Qwen Code's own memory step asks the model after the turn; it is answered like any other.
  const server = useModelServer(() => startOpenAiChatCompletionsServer());

  it.skipIf(!cli)(
    'SessionStart context goes into the system prompt, UserPromptSubmit context into the user turn',
    async () => {
      const w = world('qwen');
      mkdirSync(join(w.home, '.qwen'));
      const events = ['SessionStart', 'UserPromptSubmit', 'Stop'];
      writeFileSync(
        join(w.home, '.qwen', 'settings.json'),
        JSON.stringify({
          security: { auth: { selectedType: 'openai' } },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          hooks: nestedHooks(events, { timeout: 30 }),
        }),
      );
      const result = await run(cli!, ['-p', PROMPT], {
        cwd: w.project,
        env: { ...w.env, OPENAI_API_KEY: 'test', OPENAI_BASE_URL: server.url, OPENAI_MODEL: 'loop-model' },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(probes(w.log).map((probe) => probe.event)).toEqual(events);
      const first = server.requests[0]!.body as { messages: Array<{ role: string; content: unknown }> };
      expect(JSON.stringify(first.messages.filter((message) => message.role === 'system'))).toContain(
        'ENGRAM-PROBE-CONTEXT SessionStart',
      );
      expect(JSON.stringify(first.messages.filter((message) => message.role === 'user'))).toContain(
        '<qwen:user-prompt-submit-context>\\nENGRAM-PROBE-CONTEXT UserPromptSubmit',
      );
      const transcript = await readTranscriptFile(String(probes(w.log)[1]!.input.transcript_path));
      expectTypedPromptOnly(transcript.conversation.messages);
    },
    RUN_TIMEOUT_MS,
  );
});

describe('OpenCode', () => {
  const cli = agentCliOrSkip('opencode');
  const server = useModelServer(() =>
    startOpenAiChatCompletionsServer({
      respond: (request) =>
        request.rawBody.includes('Generate a title for this conversation') ? { message: { text: 'Notes' } } : undefined,
    }),
  );

  it.skipIf(!cli)(
    'a local plugin’s chat.message part reaches the user turn, its system transform the system prompt',
    async () => {
      const w = world('opencode');
      const config = join(w.home, '.config', 'opencode');
      mkdirSync(join(config, 'plugin'), { recursive: true });
      writeFileSync(join(config, 'plugin', 'engram-probe.js'), readFileSync(PROBE_PLUGIN));
      writeFileSync(join(config, 'opencode.json'), JSON.stringify(openCodeLoopSettings(server.url)));
      const result = await run(cli!, ['run', PROMPT], {
        cwd: w.project,
        env: { ...w.env, OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' },
      });
      expect(result.code, result.stderr).toBe(0);
      expect(probes(w.log).find((probe) => probe.event === 'chat.message')?.input.text).toContain(PROMPT);
      const main = server.requests.find((request) => !request.rawBody.includes('Generate a title'))!;
      const messages = (main.body as { messages: Array<{ role: string; content: unknown }> }).messages;
      expect(JSON.stringify(messages.filter((message) => message.role === 'user'))).toContain(
        'ENGRAM-PROBE-CONTEXT chat.message',
      );
      expect(JSON.stringify(messages.filter((message) => message.role === 'system'))).toContain(
        'ENGRAM-PROBE-CONTEXT system.transform',
      );
      const database = files(join(w.home, '.local', 'share', 'opencode'), 'opencode.db')[0]!;
      const [session] = listOpenCodeSessions(database);
      const transcript = readOpenCodeSession(database, session!.id);
      expectTypedPromptOnly(transcript.conversation.messages, (text) => text.replace(/^"|"$/g, ''));
    },
    RUN_TIMEOUT_MS,
  );
});
