import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ClaudeCodeLanguageModel } from '../src/adapters/models/claude-code-language-model.js';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { DEFAULT_SETTINGS } from '../src/kernel/settings.js';
import type { ConversationMessage } from '../src/contracts/conversation.js';
import { Engram } from '../src/engram.js';
import { Extractor } from '../src/extraction/extractor.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';
import { median, round, timeMs } from './statistics.js';

/**
 * Part `claude-code`: extraction through the claude-code provider, the real Claude Code CLI run
 * headless against the loopback Messages server (issue 13's target: one headless call per Stop,
 * batched when several turns are pending). Two runs over one session of STOPS turns: a worker that
 * drains after every Stop, and Stops that queue while no worker ran (then one drain). Reported: CLI
 * calls (requests the server saw), calls per Stop, and the wall time of one headless call.
 */

const STOPS = Number(process.env.ENGRAM_BENCH_CLAUDE_CODE_STOPS ?? 5);

export interface ClaudeCodeExtractionBenchResult {
  stops: number;
  /** A drain after each Stop: one headless call per Stop. */
  drainedEachStop: { headlessCalls: number; callsPerStop: number; msPerCallP50: number };
  /** All Stops queued before one drain: the pending turns of the session go in one call. */
  pendingThenDrained: { headlessCalls: number; callsPerStop: number; drainMs: number };
  claudeVersion: string;
}

function claudeBinary(): string {
  const require = createRequire(import.meta.url);
  try {
    const binary = join(
      dirname(require.resolve(`@anthropic-ai/claude-code-${process.platform}-${process.arch}/package.json`)),
      'claude',
    );
    if (existsSync(binary)) return binary;
  } catch {
    // Fall back to the wrapper.
  }
  return resolve('node_modules/.bin/claude');
}

function turn(index: number): ConversationMessage[] {
  return [
    { id: `u${index}`, role: 'user', text: `Turn ${index}: we keep the release notes in docs/releases-${index}.md.` },
    { id: `a${index}`, role: 'assistant', text: 'Noted.' },
  ];
}

export async function benchClaudeCodeExtractionPart(): Promise<ClaudeCodeExtractionBenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-claude-code-'));
  const home = join(directory, 'home');
  mkdirSync(join(home, '.claude'), { recursive: true });
  writeFileSync(join(home, '.claude', 'settings.json'), '{}');
  const server = await startAnthropicMessagesServer({ claudeCode: true, respond: { message: { text: '[]' } } });
  const model = new ClaudeCodeLanguageModel({
    model: 'haiku',
    command: claudeBinary(),
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      TERM: 'dumb',
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: 'bench',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    },
  });
  const open = async (name: string): Promise<{ store: SqliteMemoryStore; extractor: Extractor }> => {
    const store = new SqliteMemoryStore({ path: join(directory, `${name}.db`) });
    await store.open();
    const engram = new Engram({
      store,
      settings: DEFAULT_SETTINGS,
      defaultScope: 'project:bench',
      readScopes: ['project:bench'],
    });
    return { store, extractor: new Extractor({ engram, model, autoStart: false }) };
  };
  try {
    const stdout = execFileSync(claudeBinary(), ['--version'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: home },
    });
    const each = await open('each');
    const callMs: number[] = [];
    let messages: ConversationMessage[] = [];
    let before = server.requests.length;
    for (let stop = 1; stop <= STOPS; stop += 1) {
      messages = [...messages, ...turn(stop)];
      await each.extractor.afterTurn({ sessionId: 'each', messages });
      callMs.push(await timeMs(() => each.extractor.drain()));
    }
    const eachCalls = server.requests.length - before;
    await each.store.close();

    const pending = await open('pending');
    messages = [];
    for (let stop = 1; stop <= STOPS; stop += 1) {
      messages = [...messages, ...turn(stop)];
      await pending.extractor.afterTurn({ sessionId: 'pending', messages });
    }
    before = server.requests.length;
    const drainMs = await timeMs(() => pending.extractor.drain());
    const pendingCalls = server.requests.length - before;
    await pending.store.close();
    const result: ClaudeCodeExtractionBenchResult = {
      stops: STOPS,
      drainedEachStop: {
        headlessCalls: eachCalls,
        callsPerStop: round(eachCalls / STOPS),
        msPerCallP50: round(median(callMs), 0),
      },
      pendingThenDrained: {
        headlessCalls: pendingCalls,
        callsPerStop: round(pendingCalls / STOPS),
        drainMs: round(drainMs, 0),
      },
      claudeVersion: stdout.trim(),
    };
    console.log(
      `claude-code extraction (${result.claudeVersion}): drained after each of ${STOPS} Stops: ${eachCalls} headless calls ` +
        `(${result.drainedEachStop.callsPerStop}/Stop, p50 ${result.drainedEachStop.msPerCallP50} ms each); ` +
        `${STOPS} Stops pending, one drain: ${pendingCalls} call(s) (${result.pendingThenDrained.callsPerStop}/Stop, ${result.pendingThenDrained.drainMs} ms)`,
    );
    return result;
  } finally {
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  }
}
