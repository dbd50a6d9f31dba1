import type { Settings } from '../kernel/settings.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import type { LanguageModel } from '../contracts/language-model.js';
import type { Embedder } from '../contracts/embedder.js';
import type { AgentTool } from '../extraction/agent-extraction.js';
import type { InstructionText } from './offline-plan.js';
import type { GatheredSession } from './gather.js';

/** What a dream reads and writes. */
export interface DreamDependencies {
  store: MemoryStore;
  settings: Settings;
  now: () => Date;
  /** With a model, a helper proposes what rules cannot find; without one the dream is rules only. */
  model?: LanguageModel;
  /** The helper's read-only tools for one scope (`openDreamTools` in node/); none: it reads only what it is shown. */
  openTools?: (scope: Scope) => Promise<readonly AgentTool[]>;
  /** The instruction files (CLAUDE.md…), read for contradictions and never written. */
  instructions?: readonly InstructionText[];
  /** Vectors of rewritten memories are recomputed when the store keeps vectors. */
  embedder?: Embedder;
  onWarning?: (warning: string) => void;
  /**
   * The gather phase's reader: the sessions active since `since` (null: never consolidated), newest
   * first, at most `maxSessions` (`gatherSessionFiles` in node/ reads engram's and Claude Code's).
   * Read only when a model is configured; a failure is a warning and the dream plans without them.
   */
  gather?: (input: { since: string | null; maxSessions: number; signal: AbortSignal }) => Promise<GatheredSession[]>;
}

export interface DreamOptions {
  /** The scopes to consolidate, each on its own; undefined: every scope of the store (the service's runs). */
  scopes?: readonly Scope[];
  /** Plan and report, change nothing. */
  dryRun?: boolean;
  /** `automatic` runs pass the time and session gates first; `manual` (engram dream) only the lock. */
  trigger: 'manual' | 'automatic';
  /** The user's cancel: the run stops, nothing of it is applied, and the last-run time is kept. */
  signal?: AbortSignal;
}
