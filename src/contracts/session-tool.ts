import type { ToolDefinition } from './language-model.js';

/** What a tool run tells the session besides its answer: files read and edited feed re-injection after a compaction and the boundary's metadata. */
export interface SessionToolOutput {
  /** The tool result the model sees (the session persists it to disk when it is over the threshold). */
  content: string;
  isError?: boolean;
  /** Files this call read, with the content the model saw: the most recent are re-injected after a compaction. */
  filesRead?: Array<{ path: string; content: string }>;
  /** Files this call changed (recorded in the compact boundary's `filesEdited`). */
  filesEdited?: string[];
}

/** What a tool gets while it runs. */
export interface SessionToolContext {
  sessionId: string;
  toolUseId: string;
  /** Fires when the user interrupts the turn or the session closes. */
  signal: AbortSignal;
}

/** A tool the session's model may call: its definition (sent in every request, unchanged) and how to run it. */
export interface SessionTool {
  definition: ToolDefinition;
  run(input: Record<string, unknown>, context: SessionToolContext): Promise<SessionToolOutput>;
}
