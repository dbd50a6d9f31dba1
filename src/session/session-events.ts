import type { ContextUsage } from './context-budget.js';
import type { CompactBoundary, SessionMessage } from '../contracts/session-message.js';

/**
 * The events a Session emits (SPEC §2): context warnings, the layers firing, background notes
 * updates. Names are noun-verb; listeners run synchronously and a listener that throws is ignored
 * (a broken status line must never break a turn).
 */
export interface SessionEventMap {
  /** A message joined the live list (and the transcript). */
  'message-added': { message: SessionMessage };
  /** Context usage crossed a warning ratio (level 1..3 = `session.warnRatios`); emitted once per level until a compaction. */
  'context-warning': { level: 1 | 2 | 3; usage: ContextUsage };
  /** A tool result over `session.toolResultThresholdBytes` went to disk; the message keeps a frozen preview. */
  'tool-result-persisted': { toolUseId: string; path: string; bytes: number };
  /** Layer 2 cleared old tool results and dropped meta messages after an idle gap. */
  'microcompaction-applied': {
    clearedToolResults: number;
    droppedMeta: number;
    tokensBefore: number;
    tokensAfter: number;
  };
  'notes-update-started': { lastMessageUuid: string };
  'notes-update-finished': { lastMessageUuid: string };
  'notes-update-failed': { lastMessageUuid: string; error: unknown };
  'compaction-started': { trigger: 'auto' | 'manual'; preTokens: number };
  'compaction-finished': {
    trigger: 'auto' | 'manual';
    boundary: CompactBoundary;
    modelCalls: number;
    preTokens: number;
    postTokens: number;
    warnings: string[];
  };
  /** `tripped`: the circuit breaker is open, auto-compaction stops until a manual compaction succeeds. */
  'compaction-failed': { trigger: 'auto' | 'manual'; error: unknown; failuresInARow: number; tripped: boolean };
  /**
   * A buffered transcript write failed in the background (usually STORE_ERROR: disk full, folder
   * gone or unwritable). The session goes on and the lines stay pending: they are retried with the
   * next message and at close, so nothing is lost once the cause is fixed. `path`: the transcript file.
   */
  'transcript-error': { error: unknown; path?: string };
}

export type SessionEventName = keyof SessionEventMap;
export type SessionEventListener<Name extends SessionEventName> = (event: SessionEventMap[Name]) => void;

/** A small typed emitter (no Node dependency): listeners are isolated from each other and from the emitter. */
export class SessionEvents {
  readonly #listeners = new Map<SessionEventName, Set<(event: never) => void>>();

  /** Adds a listener; returns a function that removes it. */
  on<Name extends SessionEventName>(name: Name, listener: SessionEventListener<Name>): () => void {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(listener as (event: never) => void);
    return () => this.off(name, listener);
  }

  /** Removes a listener added with `on`. */
  off<Name extends SessionEventName>(name: Name, listener: SessionEventListener<Name>): void {
    this.#listeners.get(name)?.delete(listener as (event: never) => void);
  }

  /** Calls every listener of `name` with `event`; a throwing listener is skipped. */
  emit<Name extends SessionEventName>(name: Name, event: SessionEventMap[Name]): void {
    for (const listener of [...(this.#listeners.get(name) ?? [])]) {
      try {
        (listener as SessionEventListener<Name>)(event);
      } catch {
        // A listener's failure is its own; the session goes on.
      }
    }
  }
}
