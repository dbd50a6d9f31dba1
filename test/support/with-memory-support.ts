import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram } from '../../src/node/open-engram.js';
import type { Job } from '../../src/contracts/memory-store-jobs.js';
import type { WithMemoryEvent, WithMemoryOptions } from '../../src/surfaces/sdk/client-memory-options.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import { startOpenAiResponsesServer } from '../../src/testing/openai-responses-server.js';
import { afterEach, beforeEach } from 'vitest';

/** A project folder with its own engram home and SQLite store, as a user's app would have. */
export interface MemoryFolder {
  directory: string;
  store: string;
  env: Record<string, string>;
  events: WithMemoryEvent[];
  /** withMemory options over this folder (recorded events, a generous time cap so a loaded machine still recalls). */
  options(extra?: Partial<WithMemoryOptions>): WithMemoryOptions;
  seed(memories: ReadonlyArray<{ name: string; description: string; content: string }>): Promise<void>;
  contents(): Promise<string[]>;
  jobs(): Promise<Job[]>;
  close(): Promise<void>;
}

export const DEPLOY_FACT = {
  name: 'deploy-target',
  description: 'Where the API service deploys',
  content: 'The deploy target of the API service is the Frankfurt region (eu-central-1).',
};
export const DEPLOY_QUESTION = 'Where do we deploy the API service?';

export async function openMemoryFolder(): Promise<MemoryFolder> {
  const directory = await mkdtemp(join(tmpdir(), 'engram-with-memory-'));
  const store = join(directory, 'engram.db');
  const env = { ENGRAM_HOME: join(directory, 'home'), ENGRAM_MODEL_PROVIDER: 'none' };
  const events: WithMemoryEvent[] = [];
  const open = () => openEngram({ cwd: directory, env, flags: { 'store.url': store } });
  return {
    directory,
    store,
    env,
    events,
    options: (extra = {}) => ({
      store,
      cwd: directory,
      env,
      recallTimeoutMs: 30_000,
      onEvent: (event) => events.push(event),
      ...extra,
    }),
    async seed(memories) {
      const { engram, close } = await open();
      for (const memory of memories) await engram.remember({ ...memory, type: 'project' });
      await close();
    },
    async contents() {
      const { engram, close } = await open();
      const memories = await engram.list();
      await close();
      return memories.map((memory) => memory.content);
    },
    async jobs() {
      const { engram, close } = await open();
      const jobs = await engram.store.jobs!.list({ queue: 'extraction' });
      await close();
      return jobs;
    },
    close: () => rm(directory, { recursive: true, force: true }),
  };
}

const SERVERS = {
  anthropic: startAnthropicMessagesServer,
  chat: startOpenAiChatCompletionsServer,
  responses: startOpenAiResponsesServer,
};

/** What a wrapped client or a middleware holds: the memory to close after the test. */
interface HoldsMemory {
  memory: { close(): Promise<void> };
}

/** One test's world: the loopback servers asked for, a memory folder holding DEPLOY_FACT, the clients to close. */
export type MemoryWorld<Kind extends keyof typeof SERVERS> = Record<Kind, LanguageModelServer> & {
  folder: MemoryFolder;
  /** Closes the wrapped client's (or middleware's) memory after the test; returns it. */
  keep<T extends HoldsMemory>(made: T): T;
};

/**
 * For each test of the enclosing suite, a fresh world: the named loopback model servers (streaming in
 * 4-character chunks) and a memory folder seeded with DEPLOY_FACT; after it, the kept clients' memories, the
 * servers and the folder are closed.
 */
export function useMemoryWorld<Kind extends keyof typeof SERVERS>(...kinds: Kind[]): MemoryWorld<Kind> {
  const kept: HoldsMemory[] = [];
  const world = {
    keep<T extends HoldsMemory>(made: T): T {
      kept.push(made);
      return made;
    },
  } as MemoryWorld<Kind>;
  beforeEach(async () => {
    for (const kind of kinds)
      world[kind] = (await SERVERS[kind]({ streamChunkCharacters: 4 })) as MemoryWorld<Kind>[Kind];
    world.folder = await openMemoryFolder();
    await world.folder.seed([DEPLOY_FACT]);
  });
  afterEach(async () => {
    for (const made of kept.splice(0)) await made.memory.close();
    await Promise.all(kinds.map((kind) => world[kind].close()));
    await world.folder.close();
  });
  return world;
}

/** Reads a Messages stream to its end: the text deltas it emitted, in order, and its final message. */
export async function readTextStream<Message>(stream: {
  on(event: 'text', listener: (text: string) => void): unknown;
  finalMessage(): Promise<Message>;
}): Promise<{ texts: string[]; final: Message }> {
  const texts: string[] = [];
  stream.on('text', (text) => texts.push(text));
  return { texts, final: await stream.finalMessage() };
}
