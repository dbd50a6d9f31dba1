// The Node entry, `engram/node`: the composition root and every part that touches files, processes,
// the network or a database driver. The pure library is the root entry (`engram`); the Postgres
// backend is `engram/postgres`, so importing this entry never loads the `pg` driver.
// test/exports.test.ts pins this list: a change to it is a deliberate diff.

// Open an Engram over the settings, the store, the models and the embedder they name.
export { openEngram, type OpenEngramOptions, type OpenedEngram } from './node/open-engram.js';
export {
  loadSettings,
  engramHome,
  type LoadedSettings,
  type LoadSettingsOptions,
  type SettingSource,
  type SettingSourceKind,
} from './node/load-settings.js';
export { resolveProjectIdentity, type ProjectIdentity } from './node/project-identity.js';

// Stores: by URL (`sqlite:` path or `postgres://`), or the embedded SQLite store itself.
export { openStore, type OpenStoreOptions } from './node/open-store.js';
export { SqliteMemoryStore, type SqliteMemoryStoreOptions } from './adapters/sqlite/sqlite-memory-store.js';

// Language models and the embedder.
export { createLanguageModel, type CreateLanguageModelOptions } from './adapters/models/create-language-model.js';
export {
  AnthropicLanguageModel,
  type AnthropicLanguageModelOptions,
} from './adapters/models/anthropic-language-model.js';
export {
  OpenAiCompatibleLanguageModel,
  type OpenAiCompatibleLanguageModelOptions,
} from './adapters/models/openai-compatible-language-model.js';
export {
  ClaudeCodeLanguageModel,
  type ClaudeCodeLanguageModelOptions,
} from './adapters/models/claude-code-language-model.js';
export { memoryToolHandlers } from './surfaces/sdk/anthropic-memory-tool-handlers.js';
export { createEmbedder, type CreateEmbedderOptions } from './adapters/embedding/create-embedder.js';
export {
  OpenAiCompatibleEmbedder,
  type OpenAiCompatibleEmbedderOptions,
} from './adapters/embedding/openai-compatible-embedder.js';

// Extraction (layer 5): queue a finished turn, run the queue, read transcripts.
export { createExtractor } from './node/create-extractor.js';
export {
  Extractor,
  type ExtractorOptions,
  type AfterTurnOptions,
  type AfterTurnResult,
} from './extraction/extractor.js';
export { ExtractionWorker, type ExtractionWorkerOptions } from './extraction/extraction-worker.js';
export type { ExtractionRunReport, JobOutcome, WrittenMemory } from './extraction/extraction-report.js';
export {
  readTranscriptFile,
  type ReadTranscriptOptions,
  type TranscriptFile,
  type TranscriptFormat,
} from './extraction/node/read-transcript.js';
export type { ParsedTranscript } from './extraction/transcripts/claude-code-transcript.js';

// The helper's read-only tools.
export { openSandbox, type Sandbox, type SandboxOptions, type SandboxToolResult } from './sandbox/node/sandbox.js';

// Sessions over their files: open, resume, list; instruction files.
export { openSession, resumeSession, type OpenSessionOptions, type OpenedSession } from './node/session-open.js';
export { nodeNotesFiles } from './session/node/session-notes-files.js';
export type { SessionPaths } from './session/node/session-paths.js';
export {
  listSessions,
  latestSession,
  type SessionSummary,
  type ListSessionsOptions,
} from './session/node/session-listing.js';
export { loadInstructions, type LoadInstructionsOptions } from './instructions/node/instruction-files.js';

// Memory in one line for agent code: the Anthropic and OpenAI clients with recall, injection and extraction.
export { withMemory, type WithMemory } from './surfaces/sdk/with-memory.js';
export type { WithMemoryOptions, WithMemoryEvent, ClientMemoryHandle } from './surfaces/sdk/client-memory-options.js';

// Consolidation over the files: instruction files read for contradictions, recent sessions gathered.
export { runDreamWithFiles, type DreamRunnerOptions } from './consolidation/node/dream-runner.js';
