// The public surface of engram's core: no Node- or database-specific code here (see `engram/node`).
export { Engram, type EngramOptions, type RememberInput, type RecallOptions, type RecallResult, type ListOptions, type ImportReport } from './engram.js';
export { EngramError, isEngramError, type EngramErrorCode } from './core/errors.js';
export {
  MEMORY_TYPES,
  normalizeNewMemory,
  normalizePatch,
  type Memory,
  type MemoryPatch,
  type MemorySource,
  type MemoryType,
  type NewMemory,
} from './core/memory.js';
export { parseScope, assertScope, isScope, makeScope, type Scope, type ScopeKind } from './core/scope.js';
export { DEFAULT_SETTINGS, SETTING_DEFINITIONS, type Settings, type SettingDefinition } from './core/settings.js';
export { queryTerms } from './core/query-terms.js';
export { rankByRelevance, type RankedMemory, type ScoreParts } from './core/ranking.js';
export { normalizeGitRemote } from './core/git-remote.js';
export type {
  ChangeAction,
  ChangeContext,
  HistoryEntry,
  MemoryFilter,
  MemoryStore,
  StoreInfo,
  StoreStats,
  TextHit,
  TextSearch,
} from './store/memory-store.js';
