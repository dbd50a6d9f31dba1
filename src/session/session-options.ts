import type { Settings } from '../kernel/settings.js';
import type { LanguageModel, SystemBlock } from '../contracts/language-model.js';
import type { Compactor, PreCompactHook } from './compaction/compaction.js';
import type { FileReadCache } from './file-read-cache.js';
import type { SessionTranscriptSink } from '../contracts/session-message.js';
import type { SessionNotes } from './notes/session-notes.js';
import type { SessionNotesConfig } from './notes/session-notes-driver.js';
import type { ResumedSession } from '../contracts/session-message.js';
import type { SessionTool, SessionToolOutput } from '../contracts/session-tool.js';
import type { ToolResultStore } from './tool-result-store.js';

/** The shapes a Session takes and reports (its options, a request's options, tool results, counters); the Session is in session.ts. */

/** What a Session is built from. Nothing here does I/O; `openSession` (session-open.ts) builds the disk-backed parts. */
export interface SessionOptions {
  /** The model the session's turns go to (its id picks the context window). */
  model: LanguageModel;
  /** Default: DEFAULT_SETTINGS. */
  settings?: Settings;
  /** Default: a new random id. */
  sessionId?: string;
  /**
   * The static, cache-stable system prompt (instructions, then the MEMORY.md index). A string is one
   * block marked for caching. Never changes for the life of the session: per-turn recalled memory goes
   * in the turn's user message (`addUserMessage(..., { context })`), so every request keeps its prefix.
   */
  system?: string | readonly SystemBlock[];
  /** The tools offered in every request, unchanged (definitions sent in this order). `read_persisted_output` is added when tool results are stored. */
  tools?: readonly SessionTool[];
  /** Where every message, boundary and todo list is appended; none: nothing is written. Background write failures become `transcript-error` events. */
  transcript?: SessionTranscriptSink;
  /** Layer 1; none: oversized results are cut at the threshold instead. */
  toolResultStorage?: ToolResultStore;
  /**
   * Layer 3: where the session notes live (the Session builds them over its model and settings and
   * relays their events), or a SessionNotes built elsewhere (then only start/finish are reported, from
   * the outside). None: compaction always takes the summary path.
   */
  notes?: SessionNotes | SessionNotesConfig;
  /** Layer 4; default: a Compactor over `model` and the settings (with `preCompactHooks`). */
  compactor?: Compactor;
  /** User hooks run before a summary compaction; text they return joins the summarizer's instructions. */
  preCompactHooks?: PreCompactHook[];
  /** Named in a compaction summary so the model can look up details from before the boundary. */
  transcriptPath?: string;
  /** File-read dedupe shared with the host's read tool; default: one sized by the settings. */
  fileReadCache?: FileReadCache;
  /** Tokens of context; default `contextWindowFor(model.modelId, settings)`. */
  contextWindow?: number;
  cwd?: string;
  /** `''` outside git. */
  gitBranch?: string;
  title?: string;
  /** A session read back from its transcript (`readSessionTranscript`): its live messages, todos and metadata. */
  resumed?: ResumedSession;
  now?: () => Date;
  generateId?: () => string;
}

/** One prepared request's options. */
export interface PrepareRequestOptions {
  /** The request's output cap; input + this never exceeds the window. */
  maxOutputTokens: number;
  signal?: AbortSignal;
}

/** A tool result to add: the tool_use it answers and what the tool returned. */
export interface ToolResultInput extends SessionToolOutput {
  toolUseId: string;
}

/** Counters a host or benchmark reads. */
export interface SessionStats {
  requests: number;
  compactions: number;
  microcompactions: number;
  notesUpdates: number;
  persistedToolResults: number;
}
