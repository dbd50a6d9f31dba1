import type { ContentBlock, LanguageModelUsage } from './language-model.js';

/**
 * The shapes the session engine (SPEC §2) passes between its layers: one message of a session, the
 * record a compaction leaves, the todo list, and the entries a session transcript holds. Each layer
 * lives in its own module under src/session (compaction/, notes/, node/ for the files); they meet here.
 */

/** One message of a session's conversation, as the session holds it and the transcript stores it. */
export interface SessionMessage {
  /** Unique in the session; the transcript links messages through it (`parentUuid`). */
  uuid: string;
  role: 'user' | 'assistant';
  /**
   * What is sent to the model. Once a message is in the session its content is frozen: only
   * microcompaction (clearing old tool results) and compaction (replacing old messages) change
   * what is sent, so every other request repeats the previous one byte for byte.
   */
  content: string | ContentBlock[];
  /** ISO-8601 with milliseconds. */
  timestamp: string;
  /** Injected by engram or the host (memory context, re-injected files, reminders), not typed by the user; dropped first by microcompaction. */
  meta?: boolean;
  /** The summary a compaction put in place of the messages before its boundary. */
  compactSummary?: boolean;
  /** Assistant messages: the usage the provider reported for the request that produced it. */
  usage?: LanguageModelUsage;
  /** Assistant messages: the model that answered. */
  model?: string;
}

/** What a compaction leaves behind (SPEC §2 layer 4 step 3); stored in the transcript as a boundary. */
export interface CompactBoundary {
  uuid: string;
  timestamp: string;
  trigger: 'auto' | 'manual';
  /** How the summary was made: from the session notes (no model call) or by a summarizer. */
  method: 'notes' | 'summary';
  /** Estimated context tokens just before the compaction. */
  preTokens: number;
  /** The last message the summary covers (Claude Code's `logicalParentUuid`). */
  lastSummarizedUuid?: string;
  /** Project-relative or absolute paths of files the session edited before the boundary. */
  filesEdited: string[];
  /** The plan in force at the boundary (todo list rendered as text, or the agent's plan). */
  plan?: string;
  activeSkills?: string[];
  /** `''` outside git. */
  gitBranch: string;
}

export type TodoStatus = 'pending' | 'in_progress' | 'completed';

/** One item of the session's todo list (working memory: never written to long-term memory). */
export interface TodoItem {
  content: string;
  status: TodoStatus;
  /** Present-tense form shown while in progress ("Running the tests"). */
  activeForm?: string;
}

/** Title, tags and the facts a listing shows; re-appended at exit so the last 64 KB of a transcript carry it. */
export interface SessionMetadata {
  sessionId: string;
  title?: string;
  tags?: string[];
  cwd?: string;
  gitBranch?: string;
  model?: string;
  /** ISO-8601 of the session's first and latest message. */
  createdAt?: string;
  updatedAt?: string;
  messageCount?: number;
}

/** What resuming a session restores (`readSessionTranscript` reads it from a file; `Session` starts from it). */
export interface ResumedSession {
  sessionId: string;
  /** The live list: from the latest compact boundary on (summary, re-injected and kept messages, then newer ones). */
  messages: SessionMessage[];
  boundary?: CompactBoundary;
  todos: TodoItem[];
  metadata: SessionMetadata;
  /** The uuid the next appended message names as its parent (the last message, or the boundary). */
  leafUuid?: string;
}

/**
 * One record of a session transcript. The writer turns each into one JSON line (see
 * src/session/node/session-transcript-writer.ts for the line format); resume reads them back.
 */
export type SessionTranscriptEntry =
  | { kind: 'message'; message: SessionMessage; parentUuid: string | null }
  | { kind: 'compact-boundary'; boundary: CompactBoundary; parentUuid: null }
  | { kind: 'todos'; todos: TodoItem[]; timestamp: string }
  | {
      kind: 'file-snapshot';
      messageUuid: string;
      files: Array<{ path: string; backupPath?: string; timestamp: string }>;
    }
  | { kind: 'metadata'; metadata: SessionMetadata; timestamp: string };

/** Where a session writes its transcript. Appends are buffered; `flush` and `close` write what is pending. */
export interface SessionTranscriptSink {
  /** Queues an entry; throws (and queues nothing) when the entry cannot be written, so a caller can refuse the change it records. */
  append(entry: SessionTranscriptEntry): void;
  /** Optional: tells `listener` about writes that failed in the background; returns a function that removes it. */
  onWriteError?(listener: (error: Error) => void): () => void;
  flush(): Promise<void>;
  close(): Promise<void>;
}
