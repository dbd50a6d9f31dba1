import { loadSettings, type LoadSettingsOptions, type LoadedSettings } from './adapters/config/load-settings.js';
import { openStore } from './adapters/open-store.js';
import { createEmbedder } from './adapters/embedding/create-embedder.js';
import type { Embedder } from './embedding/embedder.js';
import { Engram } from './engram.js';

export { loadSettings, engramHome, type LoadedSettings, type LoadSettingsOptions, type SettingSource } from './adapters/config/load-settings.js';
export { openStore, parseStoreUrl, type OpenStoreOptions, type StoreLocation } from './adapters/open-store.js';
export { resolveProjectIdentity, type ProjectIdentity } from './adapters/fs/project-identity.js';
export { SqliteMemoryStore, type SqliteMemoryStoreOptions } from './adapters/sqlite/sqlite-memory-store.js';
export { createEmbedder, type CreateEmbedderOptions } from './adapters/embedding/create-embedder.js';
export { OpenAiCompatibleEmbedder, type OpenAiCompatibleEmbedderOptions } from './adapters/embedding/openai-compatible-embedder.js';

export interface OpenEngramOptions extends LoadSettingsOptions {
  /** Recorded in history for changes this instance makes. */
  actor?: string;
  now?: () => Date;
  /** Used instead of the embedder the settings configure (embedding.provider; none by default). */
  embedder?: Embedder;
}

export interface OpenedEngram {
  engram: Engram;
  loaded: LoadedSettings;
  close(): Promise<void>;
}

/**
 * Opens engram the way the CLI does: effective settings for a working directory, its store, and
 * the current project as the default scope (reads see the project and global).
 * @example
 * const { engram, close } = await openEngram({ cwd: process.cwd() });
 * await engram.remember({ content: 'The user prefers tabs.', type: 'user' });
 * await close();
 */
export async function openEngram(options: OpenEngramOptions = {}): Promise<OpenedEngram> {
  const loaded = loadSettings(options);
  const { settings } = loaded;
  // Configuration errors surface before the store opens; nothing leaves the machine unless configured.
  const embedder = options.embedder ?? createEmbedder(settings);
  const store = await openStore(settings.store.url, {
    busyTimeoutMs: settings.store.busyTimeoutMs,
    limits: settings.memory,
    fullText: { k1: settings.recall.fullTextK1, b: settings.recall.fullTextB },
    ...(options.now && { now: options.now }),
  });
  const engram = new Engram({
    store,
    ...(embedder && { embedder }),
    settings,
    defaultScope: loaded.project.scope,
    readScopes: [loaded.project.scope, 'global'],
    ...(options.actor && { actor: options.actor }),
    ...(options.now && { now: options.now }),
  });
  return { engram, loaded, close: () => store.close() };
}
