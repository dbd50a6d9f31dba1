import { compactSummaryText } from './compaction-summary.js';
import type { CompactionInput } from './compaction-input.js';
import { reinjection } from './compaction-reinjection.js';
import { estimateMessagesTokens } from '../context-budget.js';
import type { Settings } from '../../kernel/settings.js';
import type { CompactBoundary, SessionMessage } from '../../contracts/session-message.js';

/** What a compaction hands back: the boundary and the messages that replace the session's, built here for both paths. */

export interface CompactionResult {
  boundary: CompactBoundary;
  /** The summary (compactSummary, meta), the re-injected files and plan (meta), then the kept recent messages. */
  messages: SessionMessage[];
  /** Model calls this compaction made (0 on the fast path). */
  modelCalls: number;
  /** The summary text (notes or cleaned summarizer answer, with the standing rules). */
  summary: string;
  /** Oldest message groups left out of the summarizer request to make it fit. */
  droppedGroups: number;
  /** Estimated tokens of `messages`. */
  postTokens: number;
  /** What did not stop the compaction but should be known (a failed hook, notes that could not serve). */
  warnings: string[];
}

type CompactionSettings = Pick<Settings, 'compaction' | 'tokens'>;

/** What building a result needs beside the input: the settings, and the clock and ids (injectable for tests). */
export interface CompactionResultContext {
  settings: CompactionSettings;
  generateId: () => string;
  now: () => Date;
}

/** The texts of the summary message and the re-injection after it (files already in the kept messages are skipped). */
export function compactionHead(
  input: CompactionInput,
  summary: string,
  method: 'notes' | 'summary',
  kept: readonly SessionMessage[],
  settings: CompactionSettings,
): { texts: string[]; plan?: string } {
  const present = (content: string): boolean =>
    kept.some((message) =>
      typeof message.content === 'string'
        ? message.content.includes(content)
        : message.content.some((block) =>
            (block.type === 'tool_result' ? block.content : block.type === 'text' ? block.text : '').includes(content),
          ),
    );
  const reinjected = reinjection(input.reinject, settings, present);
  const text = compactSummaryText(summary, {
    fromNotes: method === 'notes',
    recentMessagesKept: kept.length > 0,
    trigger: input.trigger,
    ...(input.transcriptPath && { transcriptPath: input.transcriptPath }),
  });
  return { texts: [text, ...reinjected.texts], ...(reinjected.plan !== undefined && { plan: reinjected.plan }) };
}

/** The boundary and the new messages: the head (summary first, marked compactSummary), then the kept messages. */
export function compactionResult(
  input: CompactionInput,
  parts: {
    summary: string;
    head: { texts: string[]; plan?: string };
    kept: SessionMessage[];
    method: 'notes' | 'summary';
    lastSummarizedUuid: string | undefined;
    modelCalls: number;
    droppedGroups: number;
    warnings: string[];
  },
  context: CompactionResultContext,
): CompactionResult {
  const boundary: CompactBoundary = {
    uuid: context.generateId(),
    timestamp: context.now().toISOString(),
    trigger: input.trigger,
    method: parts.method,
    preTokens: input.preTokens,
    ...(parts.lastSummarizedUuid !== undefined && { lastSummarizedUuid: parts.lastSummarizedUuid }),
    filesEdited: [...new Set(input.metadata.filesEdited)],
    ...(parts.head.plan !== undefined && { plan: parts.head.plan }),
    ...(input.metadata.activeSkills &&
      input.metadata.activeSkills.length > 0 && { activeSkills: [...input.metadata.activeSkills] }),
    gitBranch: input.metadata.gitBranch,
  };
  const timestamp = boundary.timestamp;
  const head = parts.head.texts.map((content, index): SessionMessage => ({
    uuid: context.generateId(),
    role: 'user',
    content,
    timestamp,
    meta: true,
    ...(index === 0 && { compactSummary: true }),
  }));
  const messages = [...head, ...parts.kept];
  return {
    boundary,
    messages,
    modelCalls: parts.modelCalls,
    summary: parts.summary,
    droppedGroups: parts.droppedGroups,
    postTokens: estimateMessagesTokens(messages, context.settings),
    warnings: parts.warnings,
  };
}
