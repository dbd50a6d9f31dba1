import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram } from '../../src/node/open-engram.js';
import type { Job } from '../../src/contracts/memory-store-jobs.js';
import type { WithMemoryEvent, WithMemoryOptions } from '../../src/surfaces/sdk/client-memory.js';

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
