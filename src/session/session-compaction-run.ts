import { compactionTripped } from './compaction/compaction-policy.js';
import type { Compactor } from './compaction/compaction.js';
import type { CompactionInput } from './compaction/compaction-input.js';
import type { CompactionResult } from './compaction/compaction-result.js';
import type { Settings } from '../kernel/settings.js';
import type { FileReadCache } from './file-read-cache.js';
import { microcompactSession } from './microcompaction.js';
import type { SessionNotesDriver } from './notes/session-notes-driver.js';
import type { SessionAccounting } from './session-accounting.js';
import type { SessionEvents } from './session-events.js';
import type { SessionMessageLog } from './session-message-log.js';
import type { SessionStats } from './session-options.js';

/**
 * What a compaction (layer 4) and a microcompaction (layer 2) do to a session around the list they
 * change: the events before and after, the swap of the message list, and what no longer holds once
 * content left the context (the file-read cache, reported usage, the notes' trigger state).
 */

/** The parts of a session a compaction touches. */
export interface SessionCompactionParts {
  log: SessionMessageLog;
  compactor: Compactor;
  events: SessionEvents;
  accounting: SessionAccounting;
  notes: SessionNotesDriver;
  fileReadCache: FileReadCache;
  settings: Settings;
  /** Counted in place (the session's own stats object). */
  stats: SessionStats;
}

/** Runs the compactor over the live list and puts its result in place; `request` is read once the compaction has started. */
export async function runSessionCompaction(
  parts: SessionCompactionParts,
  trigger: 'auto' | 'manual',
  request: () => Omit<CompactionInput, 'trigger' | 'messages' | 'preTokens'>,
): Promise<CompactionResult> {
  const { log, compactor, events, accounting } = parts;
  const preTokens = accounting.tokens(log.messages);
  events.emit('compaction-started', { trigger, preTokens });
  let result: CompactionResult;
  try {
    result = await compactor.compact({ trigger, messages: log.messages, preTokens, ...request() });
  } catch (error) {
    const failuresInARow = compactor.failuresInARow;
    events.emit('compaction-failed', {
      trigger,
      error,
      failuresInARow,
      tripped: compactionTripped({ failuresInARow }, parts.settings),
    });
    throw error;
  }
  log.replace(result.boundary, result.messages);
  // The cleared content is no longer in context: a re-read must return the file, not "unchanged".
  parts.fileReadCache.clear();
  // Usage recorded on the kept messages counted the context before the boundary.
  accounting.forgetReports(log.messages.length, { resetWarnings: true });
  parts.stats.compactions += 1;
  const postTokens = accounting.tokens(log.messages);
  parts.notes.afterCompaction(postTokens);
  events.emit('compaction-finished', {
    trigger,
    boundary: result.boundary,
    modelCalls: result.modelCalls,
    preTokens,
    postTokens,
    warnings: result.warnings,
  });
  return result;
}

/** Layer 2 after an idle gap: old tool results cleared and meta messages dropped, when there are any. */
export function runSessionMicrocompaction(parts: SessionCompactionParts, now: Date): void {
  const { log, accounting } = parts;
  const result = microcompactSession(log.messages, now, parts.settings);
  if (!result.changed) return;
  const tokensBefore = accounting.tokens(log.messages);
  log.rewrite(result.messages);
  parts.fileReadCache.clear();
  accounting.forgetReports(log.messages.length);
  parts.stats.microcompactions += 1;
  parts.events.emit('microcompaction-applied', {
    clearedToolResults: result.clearedToolResults,
    droppedMeta: result.droppedMeta,
    tokensBefore,
    tokensAfter: accounting.tokens(log.messages),
  });
}
