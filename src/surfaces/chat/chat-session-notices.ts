import type { Session } from '../../session/session.js';
import type { ChatNotice } from './chat-agent-types.js';

/** Where the session's events go in the chat: its notices, and the turn context to inject again. */
export interface SessionNoticeTarget {
  notice(kind: ChatNotice['kind'], text: string): void;
  /** Said once per chat: a problem each later message would repeat. */
  noticeOnce(kind: ChatNotice['kind'], text: string): void;
  /** The turn context went with a compaction or a microcompaction's dropped meta messages. */
  contextDropped(): void;
}

/**
 * Tells the chat what the session does in the background (compactions, context warnings, saved
 * tool results, transcript and notes failures); returns the calls that detach the listeners.
 */
export function attachSessionNotices(session: Session, target: SessionNoticeTarget): Array<() => void> {
  return [
    session.on('context-warning', ({ level, usage }) =>
      target.notice(
        'context-warning',
        `context ${Math.round(usage.ratio * 100)}% full (warning ${level} of 3); /compact frees room`,
      ),
    ),
    session.on('compaction-started', ({ trigger }) =>
      target.notice('compaction', `compacting the conversation (${trigger})…`),
    ),
    session.on('compaction-finished', ({ boundary, modelCalls, preTokens, postTokens }) => {
      target.contextDropped();
      target.notice(
        'compaction',
        `compacted ${preTokens} → ${postTokens} tokens from ${boundary.method === 'notes' ? 'the session notes' : 'a summary'} (${modelCalls} model call${modelCalls === 1 ? '' : 's'})`,
      );
    }),
    session.on('microcompaction-applied', ({ droppedMeta }) => {
      if (droppedMeta > 0) target.contextDropped();
    }),
    session.on('compaction-failed', ({ error, tripped }) =>
      target.notice(
        'compaction',
        `compaction failed: ${error instanceof Error ? error.message : String(error)}${tripped ? ' (automatic compaction is now off)' : ''}`,
      ),
    ),
    session.on('tool-result-persisted', ({ path, bytes }) =>
      target.notice('tool-result', `a ${bytes}-byte tool result was saved to ${path}`),
    ),
    session.on('transcript-error', ({ error, path }) => {
      // Each later message retries and fails alike until the cause is fixed: the same problem is said once.
      const text = `the transcript${path === undefined ? '' : ` ${path}`} could not be written (${error instanceof Error ? error.message : String(error)}); the chat goes on and the lines are retried with each message`;
      target.noticeOnce('transcript', text);
    }),
    session.on('notes-update-failed', ({ error }) =>
      target.notice('notes', `session notes update failed: ${error instanceof Error ? error.message : String(error)}`),
    ),
  ];
}
