import { EngramError } from '../kernel/errors.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import { parseDreamState, type DreamState } from './dream-gates.js';

// The dream's state is one checkpoint: read and written here alone, so a hook that only counts a
// session (queueDream) loads none of the dream itself.
const STATE = 'dream:state';

/** Replaces the consolidation state the gates use. */
export async function writeDreamState(store: MemoryStore, state: DreamState): Promise<void> {
  await requireRole(store, 'checkpoints', 'consolidation').set(STATE, JSON.stringify(state));
}

/** Reads the consolidation state the gates use (last run, last scan, sessions noted). */
export async function readDreamState(store: MemoryStore): Promise<DreamState> {
  return parseDreamState(await requireRole(store, 'checkpoints', 'consolidation').get(STATE));
}

/**
 * Queues a dream for a session that ended (the Claude Code plugin's SessionEnd calls this): the
 * session is counted for the session gate and the service's next check runs the dream if the
 * gates open. Never runs a dream inline; cheap enough for a hook.
 */
export async function queueDream(store: MemoryStore, input: { sessionId: string }): Promise<void> {
  const checkpoints = requireRole(store, 'checkpoints', 'consolidation');
  if (typeof input?.sessionId !== 'string' || input.sessionId.length === 0 || input.sessionId.length > 200)
    throw new EngramError(
      'INVALID_INPUT',
      'queueDream needs the sessionId of the session that ended (1-200 characters).',
    );
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const text = await checkpoints.get(STATE);
    const state = parseDreamState(text);
    if (state.sessions.includes(input.sessionId)) return;
    const next = { ...state, sessions: [...state.sessions, input.sessionId].slice(-1_000) };
    if (await checkpoints.set(STATE, JSON.stringify(next), { expected: text ?? null })) return;
  }
  throw new EngramError(
    'CONFLICT',
    'Could not note the session for consolidation: the state kept changing; try again.',
  );
}
