// The public surface of engram's core: no Node- or database-specific code here (see `engram/node`).
export { Engram, type EngramOptions, type RememberInput, type RecallOptions, type RecallResult, type ListOptions } from './engram.js';
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
export { ageNote, formatAgeNote, type AgeNote, type AgeNoteOptions, type AgeState } from './core/age-notes.js';
export { estimateTextTokens, estimateJsonTokens, type TokenEstimateOptions } from './core/token-estimate.js';
export {
  escapeContextText,
  packMemoryContext,
  MEMORY_CONTEXT_OPEN,
  MEMORY_CONTEXT_CLOSE,
  type ContextCandidate,
  type PackedContext,
  type PackedMemory,
} from './core/memory-context-format.js';
export { buildMemoryContext, buildStaticPart, type MemoryContext, type MemoryContextOptions } from './recall/memory-context.js';
export { selectMemoriesWithModel, LLM_SELECTION_WARNINGS, type LlmSelection, type LlmSelectionRequest, type ManifestEntry } from './recall/llm-selection.js';
export type {
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelResponseFormat,
  LanguageModelRole,
  LanguageModelUsage,
} from './models/language-model.js';
export { normalizeGitRemote } from './core/git-remote.js';
export type { SaveOptions } from './engram.js';
export type { SaveResult, NearDuplicate } from './memory-writes/save-memory.js';
export type { DedupeReport, DedupeGroupReport, DedupeChange } from './maintenance/merge-duplicates.js';
export type { AgingReport } from './maintenance/age-memories.js';
export {
  lexicalProfile,
  lexicalSimilarity,
  compareLexically,
  compareByCosine,
  type LexicalProfile,
  type DuplicateVerdict,
  type DuplicateMethod,
} from './core/near-duplicate.js';
export type {
  ChangeAction,
  ChangeContext,
  HistoryEntry,
  ImportReport,
  MemoryFilter,
  MemoryStore,
  StoreInfo,
  StoreStats,
  TextHit,
  TextSearch,
} from './store/memory-store.js';
