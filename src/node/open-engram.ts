// openEngram alone, so the CLI and the service load only what opening engram needs (not the
// extraction, sandbox or migration modules `engram/node` also exports).
import { tightenPrivateFolder } from '../kernel/node/private-files.js';
import { loadSettings, type LoadSettingsOptions, type LoadedSettings } from './load-settings.js';
import { openStore, storeOptionsFromSettings } from './open-store.js';
import type { Embedder } from '../contracts/embedder.js';
import type { LanguageModel } from '../contracts/language-model.js';
import { Engram } from '../engram.js';

export interface OpenEngramOptions extends LoadSettingsOptions {
  /** Recorded in history for changes this instance makes. */
  actor?: string;
  now?: () => Date;
  /** Used instead of the embedder the settings configure (embedding.provider; none by default). */
  embedder?: Embedder;
  /**
   * Used instead of the model the settings configure (model.provider; auto by default: the side
   * model when a key is set). `false`: the caller calls no model (a hook's ranked recall), so none
   * is made and the model adapters are not even loaded.
   */
  model?: LanguageModel | false;
  /** Told once when no model is configured (engram then runs offline); nothing is printed by default. */
  onNotice?: (notice: string) => void;
}

export interface OpenedEngram {
  engram: Engram;
  loaded: LoadedSettings;
  close(): Promise<void>;
  /** The same as close(): `await using opened = await openEngram()`. */
  [Symbol.asyncDispose](): Promise<void>;
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
  // The adapters' modules load only when one is made: a hook process opens engram for each prompt.
  const embedder =
    options.embedder ??
    (settings.embedding.provider === 'none'
      ? undefined
      : (await import('../adapters/embedding/create-embedder.js')).createEmbedder(settings));
  // The cheap side model serves recall's LLM selection; creating it does no I/O (its SDK loads on the first call).
  const model =
    options.model === false
      ? undefined
      : (options.model ??
        (await import('../adapters/models/create-language-model.js')).createLanguageModel(settings, {
          purpose: 'side',
          ...(options.onNotice && { onNotice: options.onNotice }),
        }));
  // An ENGRAM_HOME made by an older version or under a loose umask: the owner's alone from now on.
  tightenPrivateFolder(loaded.home);
  const store = await openStore(settings.store.url, {
    ...storeOptionsFromSettings(settings),
    ...(options.now && { now: options.now }),
  });
  const engram = new Engram({
    store,
    ...(embedder && { embedder }),
    ...(model && { model }),
    settings,
    defaultScope: loaded.project.scope,
    readScopes: [loaded.project.scope, 'global'],
    ...(options.actor && { actor: options.actor }),
    ...(options.now && { now: options.now }),
  });
  const close = (): Promise<void> => store.close();
  return { engram, loaded, close, [Symbol.asyncDispose]: close };
}
