import { EngramError } from '../kernel/errors.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import { MAX_CONVERSATION_ID_LENGTH } from '../contracts/conversation.js';

/**
 * The surfaced set of a conversation kept in the store, for hosts that run one process per prompt
 * (a Claude Code hook): `load()` before building the MemoryTurn (its `surfaced` option), `save()`
 * with `turn.surfacedIds()` after. A host that keeps one MemoryTurn per conversation needs none of
 * this: the set lives in the turn. Kept in a checkpoint named `<namespace>-surfaced:<conversation>`,
 * the most recent ids only.
 */

/** Ids kept per conversation, at most (the most recently surfaced). */
export const MAX_SURFACED_KEPT = 2_000;

export interface PersistedSurfacedOptions {
  /** The host's name, first in the checkpoint's name (default `claude-code`, whose hooks started it). */
  namespace?: string;
}

/** One conversation's surfaced set in the store. */
export interface PersistedSurfaced {
  /** The checkpoint that holds it. */
  readonly name: string;
  /** The ids surfaced so far, oldest first; none when nothing was saved or what was saved is unreadable. */
  load(): Promise<string[]>;
  /** Replaces the saved set (the most recent MAX_SURFACED_KEPT ids). */
  save(ids: Iterable<string>): Promise<void>;
}

const NAMESPACE = /^[a-z0-9-]{1,40}$/;
// The hook input's rule for a session id (hook-input.ts): any text but control characters.
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

/** The surfaced set of a conversation, kept in the store's checkpoints (STORE_UNSUPPORTED without them). */
export function persistedSurfaced(
  engram: { store: MemoryStore },
  conversationId: string,
  options: PersistedSurfacedOptions = {},
): PersistedSurfaced {
  const namespace = options?.namespace ?? 'claude-code';
  if (
    typeof conversationId !== 'string' ||
    conversationId === '' ||
    conversationId.length > MAX_CONVERSATION_ID_LENGTH ||
    CONTROL.test(conversationId)
  )
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid conversation id ${JSON.stringify(String(conversationId).slice(0, 80))}: 1 to ${MAX_CONVERSATION_ID_LENGTH} characters, no control characters.`,
    );
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace))
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid namespace ${JSON.stringify(String(namespace).slice(0, 40))}: lowercase letters, digits and -, at most 40.`,
    );
  const name = surfacedCheckpointName(conversationId, namespace);
  const checkpoints = requireRole(engram.store, 'checkpoints', 'a persisted surfaced set');
  return {
    name,
    async load() {
      const raw = await checkpoints.get(name);
      if (raw === undefined) return [];
      try {
        const value: unknown = JSON.parse(raw);
        return Array.isArray(value)
          ? value.filter((id): id is string => typeof id === 'string').slice(-MAX_SURFACED_KEPT)
          : [];
      } catch {
        return [];
      }
    },
    async save(ids) {
      const list = [...ids];
      if (!list.every((id) => typeof id === 'string'))
        throw new EngramError('INVALID_INPUT', 'A surfaced set is a list of memory ids (strings).');
      await checkpoints.set(name, JSON.stringify(list.slice(-MAX_SURFACED_KEPT)));
    },
  };
}

/** The checkpoint listing the memories surfaced in a conversation (their text is in the host's context). */
export function surfacedCheckpointName(conversationId: string, namespace = 'claude-code'): string {
  return `${namespace}-surfaced:${conversationId}`;
}
