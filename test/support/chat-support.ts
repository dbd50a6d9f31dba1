import { afterEach } from 'vitest';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ChatAgent } from '../../src/surfaces/chat/chat-agent.js';
import type { ChatAgentOptions } from '../../src/surfaces/chat/chat-agent-types.js';
import { ChatTerminal } from '../../src/surfaces/chat/chat-terminal.js';
import type { LanguageModel } from '../../src/contracts/language-model.js';
import { openEngram, type OpenedEngram } from '../../src/node/open-engram.js';

/** A chat over in-memory streams: a real ChatAgent (SQLite store, session files in a temp ENGRAM_HOME) and a real ChatTerminal. */
export interface TestChat {
  root: string;
  project: string;
  engramHome: string;
  opened: OpenedEngram;
  agent: ChatAgent;
  terminal: ChatTerminal;
  /** Everything the terminal wrote so far. */
  output(): string;
  /** Types one line (or a block of lines arriving together). */
  type(text: string): void;
  /** Waits until the output holds `text` (after `from` characters), failing after a few seconds. */
  waitFor(text: string | RegExp, from?: number): Promise<void>;
  /** Ends input (Ctrl-D) and waits for the terminal to finish, then closes everything. */
  finish(): Promise<void>;
  running: Promise<void>;
}

export interface TestChatOptions {
  model: LanguageModel;
  /** Files of the project, by relative path. */
  files?: Record<string, string>;
  /** Reuse this root (a second chat over the same ENGRAM_HOME and project). */
  root?: string;
  resume?: ChatAgentOptions['resume'];
  settings?: Record<string, unknown>;
  /** The session's clock (message timestamps, the idle gap of microcompaction). */
  now?: () => Date;
}

/** Starts a chat in a temp project (a git repository, so it is its own project root). */
export async function startTestChat(options: TestChatOptions): Promise<TestChat> {
  const root = options.root ?? (await realpath(await mkdtemp(join(tmpdir(), 'engram-chat-'))));
  const project = join(root, 'project');
  const engramHome = join(root, 'engram-home');
  const userHome = join(root, 'user-home');
  await mkdir(join(project, '.git'), { recursive: true });
  await mkdir(userHome, { recursive: true });
  await writeFile(join(project, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  for (const [path, content] of Object.entries(options.files ?? {})) {
    await mkdir(join(project, path, '..'), { recursive: true });
    await writeFile(join(project, path), content);
  }
  const opened = await openEngram({
    cwd: project,
    env: { ENGRAM_HOME: engramHome, HOME: userHome },
    ...(options.settings && { flags: options.settings }),
  });
  const input = new PassThrough();
  const output = new PassThrough();
  let written = '';
  output.on('data', (chunk: Buffer) => {
    written += chunk.toString('utf8');
  });
  const terminal = new ChatTerminal({ input, output, terminal: false, color: false, settings: opened.engram.settings });
  const agent = await ChatAgent.open({
    engram: opened.engram,
    model: options.model,
    cwd: project,
    engramHome,
    userHome,
    managedInstructionsPath: '',
    confirm: (question) => terminal.confirm(question),
    onNotice: (notice) => terminal.notice(notice),
    ...(options.resume && { resume: options.resume }),
    ...(options.now && { now: options.now }),
  });
  const running = terminal.run(agent);
  const waitFor = async (text: string | RegExp, from = 0): Promise<void> => {
    for (let tries = 0; tries < 500; tries += 1) {
      const seen = written.slice(from);
      if (typeof text === 'string' ? seen.includes(text) : text.test(seen)) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`The chat never printed ${String(text)}. It printed:\n${written}`);
  };
  return {
    root,
    project,
    engramHome,
    opened,
    agent,
    terminal,
    running,
    output: () => written,
    type: (text) => input.write(`${text}\n`),
    waitFor,
    finish: async () => {
      input.end();
      await running;
      await agent.close();
      await opened.close();
    },
  };
}

/** The project memory the chat tests remember and expect back in a turn. */
export const FRANKFURT_MEMORY = {
  content: 'The deploy target is the Frankfurt region (eu-central-1).',
  type: 'project',
} as const;

/** Types each question into the chat and waits for its answer, in order. */
export async function converse(chat: TestChat, ...exchanges: Array<[question: string, answer: string]>): Promise<void> {
  for (const [question, answer] of exchanges) {
    chat.type(question);
    await chat.waitFor(answer);
  }
}

/** Removes a chat's temp root. */
export async function removeTestRoot(root: string): Promise<void> {
  await rm(root, { recursive: true, force: true });
}

/** Chats of the enclosing `describe`, finished and their temp roots removed after each test. */
export interface TestChats {
  /** Starts a chat ({@link startTestChat}); its root is removed afterwards unless `options.root` was given. */
  start(options: TestChatOptions): Promise<TestChat>;
  /** Finishes `chat` now (the test reads what it left), rather than after the test. */
  finish(chat: TestChat): Promise<void>;
  /** Removes `root` too after the test. */
  removeAfter(root: string): void;
}

/** Registers the `afterEach` that finishes every chat {@link TestChats.start} started and removes its root. */
export function useTestChats(): TestChats {
  const roots: string[] = [];
  const chats: TestChat[] = [];
  afterEach(async () => {
    for (const chat of chats.splice(0)) await chat.finish().catch(() => undefined);
    await Promise.all(roots.splice(0).map(removeTestRoot));
  });
  return {
    async start(options) {
      const started = await startTestChat(options);
      chats.push(started);
      if (!options.root) roots.push(started.root);
      return started;
    },
    async finish(chat) {
      chats.splice(chats.indexOf(chat), 1);
      await chat.finish();
    },
    removeAfter(root) {
      roots.push(root);
    },
  };
}
