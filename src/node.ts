import { loadSettings, type LoadSettingsOptions, type LoadedSettings } from './adapters/config/load-settings.js';
import { openStore } from './adapters/open-store.js';
import { Engram } from './engram.js';

export { loadSettings, engramHome, type LoadedSettings, type LoadSettingsOptions, type SettingSource } from './adapters/config/load-settings.js';
export { openStore, parseStoreUrl, type OpenStoreOptions, type StoreLocation } from './adapters/open-store.js';
export { resolveProjectIdentity, type ProjectIdentity } from './adapters/fs/project-identity.js';
export { SqliteMemoryStore, type SqliteMemoryStoreOptions } from './adapters/sqlite/sqlite-memory-store.js';

export interface OpenEngramOptions extends LoadSettingsOptions {
  /** Recorded in history for changes this instance makes. */
  actor?: string;
  now?: () => Date;
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
  const store = await openStore(settings.store.url, {
    busyTimeoutMs: settings.store.busyTimeoutMs,
    limits: settings.memory,
    ...(options.now && { now: options.now }),
  });
  const engram = new Engram({
    store,
    settings,
    defaultScope: loaded.project.scope,
    readScopes: [loaded.project.scope, 'global'],
    ...(options.actor && { actor: options.actor }),
    ...(options.now && { now: options.now }),
  });
  return { engram, loaded, close: () => store.close() };
}
