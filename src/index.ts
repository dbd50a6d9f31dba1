// The root entry, `engram`: what a user of the library calls and the types they name. No database
// driver, SDK, process or network code: stores, models, the sandbox and files are `engram/node`, the
// Postgres backend `engram/postgres`, test doubles `engram/testing`. Internals (ranking, BM25,
// compaction, notes templates, ...) are imported by path inside the package, never exported from here.
// test/exports.test.ts pins this list: a change to it is a deliberate diff.

// The library and its calls.
export {
  Engram,
  type EngramOptions,
  type RememberInput,
  type SaveOptions,
  type EngramSaveResult,
  type ChangeOptions,
  type UpdateOptions,
  type ForgetOptions,
  type InvalidateOptions,
  type ListOptions,
  type RecallOptions,
  type RecallResult,
  type SupersedeChain,
  type SupersedeLink,
  type MemoryContext,
  type MemoryContextOptions,
  type ReindexOptions,
  type ReindexReport,
  type DedupeReport,
  type AgingReport,
} from './engram.js';
export type { SaveResult, NearDuplicate } from './remember/save-memory.js';
export type {
  EngramJobs,
  JobJson,
  JobList,
  JobListOptions,
  JobRunOptions,
  JobRunReport,
  JobOutcomeJson,
  JobCounts,
} from './extraction/engram-jobs.js';
export type {
  EngramChangeSets,
  EngramDream,
  ChangeSetDetail,
  ChangeSetUndoJson,
  DreamStatus,
} from './consolidation/engram-change-sets.js';
export type { ChangeSetRecord, ChangeSetUndo } from './consolidation/change-sets.js';
export type { EngramStorage } from './engram-storage.js';
export type { RankedMemory, ScoreParts } from './recall/ranking.js';
export type { PackedMemory } from './recall/memory-context-format.js';
export type { RecalledMemory } from './extraction/recalled-memories.js';
export type { DedupeGroupReport, DedupeChange } from './maintenance/merge-duplicates.js';
export { EngramError, isEngramError, type EngramErrorCode } from './kernel/errors.js';
export { DEFAULT_SETTINGS, type Settings } from './kernel/settings.js';
export {
  WARNING_CODES,
  describeWarning,
  isWarningCode,
  type WarningCode,
  type WarningDetails,
  type EngramWarning,
} from './kernel/warnings.js';

// What a memory is, and its scopes.
export {
  MEMORY_TYPES,
  type Memory,
  type MemoryPatch,
  type MemorySource,
  type MemoryType,
  type NewMemory,
} from './memory/memory.js';
export { parseScope, isScope, makeScope, type Scope, type ScopeKind, type ParsedScope } from './memory/scope.js';

// Privacy a caller can apply to text of its own (every write path applies it already).
export { redactSecrets, type RedactionResult, type SecretKind } from './privacy/secret-redaction.js';
export { stripPrivateContent, type StripOptions, type StripResult } from './privacy/private-content.js';

// Anthropic's memory tool over an Engram.
export { MemoryTool, type MemoryToolOptions, type MemoryToolResult } from './memory-tool/memory-tool.js';
export {
  anthropicNativeTool,
  MEMORY_TOOL_NAME,
  type MemoryToolCommand,
  type MemoryToolCommandName,
} from './contracts/memory-tool-definition.js';

// A session inside the context window (layers 1–4 and 7) and one agent turn over it.
export { Session } from './session/session.js';
export type {
  SessionOptions,
  SessionNotesConfig,
  PrepareRequestOptions,
  ToolResultInput,
  SessionStats,
} from './session/session.js';
export type { SessionEventMap, SessionEventName, SessionEventListener } from './session/session-events.js';
export type { ContextUsage } from './session/context-budget.js';
export { todoWriteTool, type WorkingMemory, type WorkingTask, type TaskStatus } from './session/working-memory.js';
// The parts a Session holds (its properties); `openSession` in engram/node builds them over files.
export type { PreCompactHook, Compactor } from './session/compaction/compaction.js';
export type { CompactionResult } from './session/compaction/compaction-result.js';
export type { SessionNotes } from './session/notes/session-notes.js';
export type { NotesFiles } from './session/notes/session-notes-resources.js';
export type { FileReadCache, FileReadStat } from './session/file-read-cache.js';
export type { ToolResultStore } from './session/tool-result-store.js';
export { runAgentTurn, type AgentTurnOptions, type AgentTurnResult } from './agent/agent-turn.js';

// SPEC's memory turn for any host: recall → inject before the request, queue extraction after it.
export { MemoryTurn } from './agent/memory-turn.js';
export type {
  MemoryTurnOptions,
  MemoryTurnEngram,
  BeforeRequestOptions,
  AfterResponseOptions,
  MemoryAgentTurnOptions,
  MemoryAgentTurnResult,
} from './agent/memory-turn-options.js';
export {
  persistedSurfaced,
  type PersistedSurfaced,
  type PersistedSurfacedOptions,
} from './agent/persisted-surfaced.js';
export {
  sessionStartMemories,
  SESSION_START_MAX_MEMORIES,
  type SessionStartOptions,
  type SessionStartEngram,
} from './agent/session-start-memories.js';
export {
  type MemoryInjection,
  type MemoryTurnError,
  type MemoryTurnEvent,
  type ExtractionQueueResult,
} from './agent/memory-injection.js';
export type {
  SessionMessage,
  CompactBoundary,
  TodoItem,
  TodoStatus,
  SessionMetadata,
  ResumedSession,
  SessionTranscriptEntry,
  SessionTranscriptSink,
} from './contracts/session-message.js';
export type { SessionTool, SessionToolOutput, SessionToolContext } from './contracts/session-tool.js';

// Consolidation ("dream", SPEC §3 layer 6): one reviewable, undoable change set; queueDream for a session that ended.
export { runDream } from './consolidation/run-dream.js';
export { queueDream } from './consolidation/dream-state.js';
export type { DreamDependencies, DreamOptions } from './consolidation/dream-inputs.js';
export type { DreamReport } from './consolidation/dream-report.js';
export type { GatheredSession } from './consolidation/gather.js';
// Instructions (CLAUDE.md and rules) as the model receives them; `loadInstructions` in engram/node reads them.
export {
  activeInstructions,
  formatInstructions,
  type InstructionFile,
  type InstructionScope,
  type InstructionSet,
} from './instructions/instruction-format.js';

// The contracts a backend, a model or an embedder implements.
export type {
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelResponseFormat,
  LanguageModelRole,
  LanguageModelUsage,
  LanguageModelStopReason,
  ContentBlock,
  TextBlock,
  ToolUseBlock,
  ToolResultBlock,
  SystemBlock,
  ToolDefinition,
  ToolChoice,
  ContextEditingRequest,
  AppliedContextEdit,
} from './contracts/language-model.js';
export { messageText, toolUses } from './contracts/language-model-content.js';
export type { Embedder, EmbedOptions } from './contracts/embedder.js';
export type {
  MemoryStore,
  MemoryLedger,
  StoreRoles,
  StoreRole,
  StoreWith,
  MemoryFilter,
  ImportReport,
  PurgeReport,
  StoreInfo,
  StoreStats,
  TextSearch,
  TextHit,
} from './contracts/memory-store.js';
export type {
  VectorIndex,
  VectorSpace,
  VectorEntry,
  VectorSearch,
  VectorHit,
  VectorCounts,
} from './contracts/memory-store-vectors.js';
export type { JobQueue, Job, JobState, NewJob, JobFilter, FinishedJobFilter } from './contracts/memory-store-jobs.js';
export type { StoreLocks } from './contracts/memory-store-locks.js';
export type { Checkpoints, CheckpointFilter } from './contracts/memory-store-checkpoints.js';
export type {
  RecordCopy,
  ExportPage,
  CheckpointRecord,
  StoreRecords,
  RestoreCounts,
  RestoreReport,
} from './contracts/memory-store-records.js';
export type { ChangeAction, ChangeContext, HistoryEntry } from './memory/memory-history.js';
export type {
  Conversation,
  ConversationMessage,
  ConversationRole,
  ConversationToolCall,
  ConversationToolResult,
} from './contracts/conversation.js';
