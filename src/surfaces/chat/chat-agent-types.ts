import type { Engram } from '../../engram.js';
import type { LanguageModel } from '../../contracts/language-model.js';
import type { AgentTurnResult } from '../../agent/agent-turn.js';
import type { WrittenMemory } from '../../extraction/extraction-report.js';
import type { ForgetCandidate } from '../../remember/explicit-memory-writes.js';

// What the reference chat agent is given and what it answers the terminal: its options, the
// notices it tells between turns, and the results of a turn and of the slash commands.

/** What the reference chat agent is built from; `ChatAgent.open` does the I/O. */
export interface ChatAgentOptions {
  /** Long-term memory (opened by the caller: `openEngram`). */
  engram: Engram;
  /** The model the conversation goes to. */
  model: LanguageModel;
  /** The cheap model for recall selection and extraction; default `engram.model`; none: ranked recall and explicit statements only. */
  sideModel?: LanguageModel;
  /** The working directory: the project root is its git root, else itself. */
  cwd: string;
  /** Sessions live under `<engramHome>/projects/<slug>/`. */
  engramHome: string;
  /** The user's home (for `~/.claude/CLAUDE.md` and rules). */
  userHome: string;
  /** Continue a session: its id, or the project's latest. */
  resume?: { sessionId: string } | { latest: true };
  /** Asks the user before a file is written. */
  confirm: (question: string) => Promise<boolean>;
  /** Told of what happens in the background: compactions, warnings, notes updates, extraction. */
  onNotice?: (notice: ChatNotice) => void;
  /** Queue extraction after each turn (default true). */
  extraction?: boolean;
  /** The managed instruction file (default the setting). */
  managedInstructionsPath?: string;
  now?: () => Date;
}

/** Something the terminal may show between turns. */
export interface ChatNotice {
  kind: 'compaction' | 'context-warning' | 'notes' | 'tool-result' | 'extraction' | 'transcript' | 'warning';
  text: string;
}

/** What one turn did, for the terminal. */
export interface ChatTurnResult extends AgentTurnResult {
  /** Memories injected this turn. */
  recalled: Array<{ id: string; name: string }>;
}

/** What /memory shows. */
export interface ChatMemoryReport {
  instructions: Array<{ path: string; scope: string; lines: number; bytes: number; paths?: string[]; active: boolean }>;
  instructionWarnings: string[];
  recalled: Array<{ id: string; name: string; turns: number }>;
  stored: WrittenMemory[];
  scopes: readonly string[];
}

/** How /forget ended. */
export type ChatForgetResult =
  | { status: 'archived'; id: string; name: string }
  | { status: 'no-match' | 'ambiguous'; candidates: ForgetCandidate[] };
