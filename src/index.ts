// The public surface of engram's core: no Node- or database-specific code here (see `engram/node`).
export { Engram, type EngramOptions, type RememberInput, type RecallOptions, type RecallResult, type ListOptions } from './engram.js';
export { EngramError, isEngramError, type EngramErrorCode } from './kernel/errors.js';
export {
  MEMORY_TYPES,
  normalizeNewMemory,
  normalizePatch,
  type Memory,
  type MemoryPatch,
  type MemorySource,
  type MemoryType,
  type NewMemory,
} from './memory/memory.js';
export { parseScope, assertScope, isScope, makeScope, type Scope, type ScopeKind } from './memory/scope.js';
export { DEFAULT_SETTINGS, SETTING_DEFINITIONS, type Settings, type SettingDefinition } from './kernel/settings.js';
export { queryTerms } from './recall/query-terms.js';
export { rankByRelevance, type RankedMemory, type ScoreParts } from './recall/ranking.js';
export { addConversationContext, type ContextSupport, type ContextWeights } from './recall/conversation-context.js';
export { withWordForms } from './recall/word-forms.js';
export { ageNote, formatAgeNote, type AgeNote, type AgeNoteOptions, type AgeState } from './recall/age-notes.js';
export { estimateTextTokens, estimateJsonTokens, type TokenEstimateOptions } from './kernel/token-estimate.js';
export {
  escapeContextText,
  packMemoryContext,
  type ContextCandidate,
  type PackedContext,
  type PackedMemory,
} from './recall/memory-context-format.js';
export { MEMORY_CONTEXT_OPEN, MEMORY_CONTEXT_CLOSE } from './privacy/injected-markers.js';
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
} from './contracts/language-model.js';
export type {
  ContentBlock,
  TextBlock,
  ToolUseBlock,
  ToolResultBlock,
  SystemBlock,
  ToolDefinition,
  ToolChoice,
  LanguageModelStopReason,
} from './contracts/language-model.js';
export { toolUses, messageText, systemText } from './contracts/language-model-content.js';
export { DEFAULT_MODEL_IDS, type ModelProvider } from './kernel/settings.js';
export { normalizeGitRemote } from './kernel/git-remote.js';
export type { SaveOptions } from './engram.js';
export type { SaveResult, NearDuplicate } from './remember/save-memory.js';
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
} from './remember/near-duplicate.js';
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
} from './contracts/memory-store.js';
export type { EngramSaveResult } from './engram.js';
export {
  redactSecrets,
  findSecrets,
  isHighEntropyToken,
  redactionPlaceholder,
  SECRET_KINDS,
  HIGH_ENTROPY_RULE,
  type SecretKind,
  type SecretMatch,
  type RedactionResult,
} from './privacy/secret-redaction.js';
export { stripPrivateContent, createPrivateContentFilter, type StripOptions, type StripResult, type PrivateContentFilter } from './privacy/private-content.js';
export { sanitizeText, PRIVACY_WARNINGS, type PrivacyReport } from './privacy/memory-privacy.js';
export { detectExplicitMemory, toThirdPerson, type ExplicitIntent, type RememberIntent, type ForgetIntent, type ExplicitTrigger } from './remember/explicit-memory.js';
export {
  applyExplicitMemory,
  findForgetTarget,
  EXPLICIT_MEMORY_ACTOR,
  type ExplicitMemoryWriteOptions,
  type ExplicitMemoryOutcome,
  type ExplicitMemoryResult,
  type ForgetCandidate,
} from './remember/explicit-memory-writes.js';
export { MemoryTool, type MemoryToolOptions, type MemoryToolResult } from './memory-tool/memory-tool.js';
export {
  memoryToolDefinition,
  anthropicNativeTool,
  parseMemoryToolCommand,
  ANTHROPIC_MEMORY_TOOL,
  MEMORY_TOOL_NAME,
  MEMORY_TOOL_COMMANDS,
  type MemoryToolCommand,
  type MemoryToolCommandName,
} from './contracts/memory-tool-definition.js';
export { MEMORY_ROOT } from './memory-tool/memory-tool-paths.js';
export type { MemoryFolder, MemoryToolLayout } from './memory-tool/memory-tool-layout.js';
export type { Conversation, ConversationMessage, ConversationRole, ConversationToolCall, ConversationToolResult } from './contracts/conversation.js';
export { parseExtractionOutput, type DropReason, type DroppedItem, type ExtractedCandidate, type WriteScopes } from './extraction/extraction-output.js';
export { recalledFromText, type RecalledMemory } from './extraction/recalled-memories.js';
export type { ExtractionRunReport, WrittenMemory } from './extraction/extraction-report.js';
export { parseClaudeCodeTranscript, type ParsedTranscript } from './extraction/transcripts/claude-code-transcript.js';
export { parseEngramTranscript, formatEngramTranscriptLine, type EngramTranscriptLine } from './extraction/transcripts/engram-transcript.js';
export { parsePlainTextTranscript } from './extraction/transcripts/plain-text-transcript.js';
export {
  activeInstructions,
  formatInstructions,
  type InstructionFile,
  type InstructionScope,
  type InstructionSet,
} from './instructions/instruction-format.js';
export {
  parseRuleFrontmatter,
  expandGlobs,
  matchGlob,
  findImports,
  stripBlockHtmlComments,
  type RuleFrontmatter,
  type InstructionImport,
} from './instructions/instruction-rules.js';
export {
  SESSION_NOTES_SECTIONS,
  DEFAULT_SESSION_NOTES_TEMPLATE,
  DEFAULT_SESSION_NOTES_PROMPT,
  parseNotesSections,
  replaceNotesSection,
  hasRealNotesContent,
  notesOverCaps,
  capNotesSections,
  parseSectionEdits,
  type NotesSection,
  type NotesCapReport,
  type NotesSectionEdit,
} from './session/notes/session-notes-template.js';
export { shouldUpdateSessionNotes, type NotesTriggerState, type NotesTriggerReason } from './session/notes/session-notes-trigger.js';
export { runForkedHelper, type ForkPrefix, type ForkedHelperOptions, type ForkedHelperResult } from './session/forked-helper.js';
export {
  estimateMessageTokens,
  estimateMessagesTokens,
  contextTokensFromUsage,
  contextTokenCount,
  contextWindowFor,
  parseModelContextWindows,
  contextUsage,
  warningLevel,
  type ContextUsage,
  type ModelContextWindow,
} from './session/context-budget.js';
export { microcompact, contextEditingFor, OLD_TOOL_RESULT_PLACEHOLDER, type MicrocompactionInput, type MicrocompactionResult } from './session/microcompaction.js';
export { FileReadCache, FILE_UNCHANGED_MARKER, type FileReadCacheOptions, type FileReadStat } from './session/file-read-cache.js';
export { autoCompactThreshold, shouldAutoCompact, compactionTripped, type CompactionBreakerState } from './session/compaction/compaction-policy.js';
export {
  COMPACTION_SUMMARY_PROMPT,
  COMPACTION_SUMMARY_SECTIONS,
  COMPACT_SUMMARY_OPENING,
  summaryInstruction,
  stripAnalysis,
  compactSummaryText,
  messageGroups,
  dropOldestGroups,
  droppableGroupCount,
  stripBulkyContent,
  type CompactableMessage,
  type CompactSummaryTextOptions,
  type SummaryInstructionOptions,
} from './session/compaction/compaction-summary.js';
export { standingRules, withStandingRules, missingRules, STANDING_RULES_HEADING } from './session/compaction/compaction-standing-rules.js';
export { WorkingMemory, todoWriteTool, TODO_WRITE_RESULT, type WorkingTask, type TaskStatus, type WorkingMemoryOptions } from './session/working-memory.js';
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
