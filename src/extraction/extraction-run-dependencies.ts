import type { MemorySource } from '../memory/memory.js';
import type { Engram } from '../engram.js';
import type { LanguageModel } from '../contracts/language-model.js';
import type { ConversationToolCall } from '../contracts/conversation.js';
import type { AgentTool } from './agent-extraction.js';
import type { ExplicitMemoryHandler } from './explicit-statements.js';
import type { ExtractionJobPayload } from './extraction-job-payload.js';
import type { ExtractionStore } from './extraction-store.js';

/** What running an extraction job needs. */
export interface ExtractionRunDependencies {
  engram: Engram;
  /** Told as cheap mode reads a job's span, group by group (a long transcript takes a while). */
  onProgress?: (progress: ExtractionProgress) => void;
  /** Absent: offline, explicit statements only. */
  model?: LanguageModel;
  mode: 'cheap' | 'agent';
  /** The helper's tools for a job (agent mode): the memory tool, writing with `source`, and the sandboxed tools. */
  agentTools?: (input: {
    engram: Engram;
    scopes: ExtractionJobPayload['scopes'];
    source: MemorySource;
    projectRoot?: string;
  }) => Promise<AgentTool[]> | AgentTool[];
  explicit?: ExplicitMemoryHandler;
  isMemoryWrite?: (call: ConversationToolCall) => boolean;
  now: () => Date;
  signal?: AbortSignal;
}

/** How far a job's run has read its span: messages read of all, in cheap mode. */
export interface ExtractionProgress {
  jobId: string;
  messagesRead: number;
  messages: number;
}

/** One job's run: its dependencies and the store with the roles extraction runs on. */
export type JobRun = ExtractionRunDependencies & { store: ExtractionStore };
