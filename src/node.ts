export { openEngram, type OpenEngramOptions, type OpenedEngram } from './node/open-engram.js';
export { loadSettings, engramHome, type LoadedSettings, type LoadSettingsOptions, type SettingSource } from './node/load-settings.js';
export { openStore, parseStoreUrl, storeOptionsFromSettings, type OpenStoreOptions, type StoreLocation } from './node/open-store.js';
export { resolveProjectIdentity, type ProjectIdentity } from './node/project-identity.js';
export { SqliteMemoryStore, type SqliteMemoryStoreOptions } from './adapters/sqlite/sqlite-memory-store.js';
export { createEmbedder, type CreateEmbedderOptions } from './adapters/embedding/create-embedder.js';
export { OpenAiCompatibleEmbedder, type OpenAiCompatibleEmbedderOptions } from './adapters/embedding/openai-compatible-embedder.js';
export {
  createLanguageModel,
  selectLanguageModel,
  MODEL_OFFLINE_NOTICE,
  type CreateLanguageModelOptions,
  type ModelSelection,
} from './adapters/models/create-language-model.js';
export { AnthropicLanguageModel, type AnthropicLanguageModelOptions } from './adapters/models/anthropic-language-model.js';
export { memoryToolHandlers } from './adapters/models/anthropic-memory-tool-handlers.js';
export { OpenAiCompatibleLanguageModel, type OpenAiCompatibleLanguageModelOptions } from './adapters/models/openai-compatible-language-model.js';
export { ModelRequestPolicy, type ModelRequestPolicyOptions } from './adapters/http/request-policy.js';
export { openSandbox, Sandbox, SANDBOX_TOOL_NAMES, type SandboxOptions, type SandboxToolResult } from './sandbox/node/sandbox.js';
export { SANDBOX_COMMANDS, GIT_SUBCOMMANDS } from './sandbox/sandbox-commands.js';
export { createExtractor } from './node/create-extractor.js';
export { Extractor, type ExtractorOptions, type AfterTurnOptions, type AfterTurnResult } from './extraction/extractor.js';
export { ExtractionWorker, type ExtractionWorkerOptions, type JobOutcome } from './extraction/extraction-worker.js';
export { createAgentTools } from './extraction/agent-tools.js';
export { readTranscriptFile, detectTranscriptFormat, TRANSCRIPT_FORMATS, type TranscriptFile, type TranscriptFormat } from './extraction/node/read-transcript.js';
export { copyStore, type CopyStoreOptions, type CopyStoreReport, type CopyProgress, type CopyPhase } from './maintenance/copy-store.js';
export { summarizeStore, type StoreSummary, type RecordCounts, type RecordKind } from './maintenance/store-checksum.js';
export { Session, type SessionOptions, type SessionNotesConfig, type PrepareRequestOptions, type ToolResultInput, type SessionStats } from './session/session.js';
export { openSession, resumeSession, type OpenSessionOptions, type OpenedSession } from './node/session-open.js';
export { runAgentTurn, type AgentTurnOptions, type AgentTurnResult } from './agent/agent-turn.js';
export type { SessionEventMap, SessionEventName, SessionEventListener } from './session/session-events.js';
export { loadInstructions, type LoadInstructionsOptions } from './instructions/node/instruction-files.js';
export { SessionNotes, type SessionNotesOptions, type SessionNotesEvent } from './session/notes/session-notes.js';
export { readPersistedOutputTool } from './session/persisted-output-tool.js';
export { ToolResultStorage, persistedOutputText, type ToolResultStorageOptions, type StoredToolResult, type ToolResultPage } from './session/node/tool-result-storage.js';
export { Compactor, isPromptTooLong, type CompactorOptions, type CompactionInput, type CompactionResult, type CompactionNotes, type PreCompactHook } from './session/compaction/compaction.js';
export { projectSlug, sessionPaths, subagentTranscriptPath, validateSessionId, type SessionPaths } from './session/node/session-paths.js';
export { SessionTranscriptWriter, openSidechainTranscript, type SessionTranscriptWriterOptions } from './session/node/session-transcript-writer.js';
export { readSessionTranscript, type ResumedTranscript, type ReadSessionTranscriptOptions } from './session/node/session-transcript-reader.js';
export { listSessions, latestSession, type SessionSummary, type ListSessionsOptions } from './session/node/session-listing.js';
export { ChatAgent, type ChatAgentOptions, type ChatNotice, type ChatTurnResult } from './surfaces/chat/chat-agent.js';
export { ChatTerminal, type ChatTerminalOptions } from './surfaces/chat/chat-terminal.js';
export { createChatTools, type ChatToolsOptions } from './surfaces/chat/chat-tools.js';
