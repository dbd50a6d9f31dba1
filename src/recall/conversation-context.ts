import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';

/**
 * Conversation context for full-text recall. Memories written from a conversation carry their
 * source session and turn; a question's words often sit in one turn while the answer sits in the
 * next ("What did you think of the book?" → "Loved it, the ending made me cry"). A hit therefore
 * borrows a share of the relevance of the best hit from the same or an adjacent turn of its session
 * (passage retrieval's "context window"), and a smaller share of the best other hit of its session
 * (its "document score"). Only memories that are already candidates lend or borrow, so the change
 * is a re-ordering of what full-text found, never a new match; memories without a source session
 * are left as they are.
 */
export interface ContextWeights {
  /** Share of the best same-turn or adjacent-turn hit's relevance added, 0..1 (0 = off). */
  neighbourWeight: number;
  /** Share of the best other same-session hit's relevance added, 0..1 (0 = off). */
  sessionWeight: number;
  /**
   * For memories whose source names no session (imported, hand-written): share of the relevance of
   * the best other such hit of the same scope written within `sittingMinutes` of it, 0..1 (0 = off).
   * Memories written in one sitting are about one conversation, as a session's are.
   */
  sittingWeight?: number;
  /** How close in creation time two memories without a source session must be to count as one sitting. */
  sittingMinutes?: number;
  /**
   * How the sitting's lent share follows the lender's strength: the lent relevance is
   * `sittingWeight × lender × (lender / best hit)^sittingStrength`, 0..2 (0 = a flat share of any
   * lender). At 1 a sitting whose best hit is the question's best lends the full share and one that
   * matches weakly lends little, so a sitting that only shares common words does not crowd the ranking.
   */
  sittingStrength?: number;
}

/** What context added to one hit, in the units of the relevance it came with. */
export interface ContextSupport {
  /** The hit's own relevance, before context. */
  own: number;
  /** The memory of the same or an adjacent turn that lent the most, and what it added. */
  neighbour?: { id: string; added: number };
  /** The other memory of the same session that lent the most, and what it added. */
  session?: { id: string; added: number };
  /** Without a source session: the memory written in the same sitting that lent the most, and what it added. */
  sitting?: { id: string; added: number };
}

interface TurnPosition {
  session: string;
  /** The turn's key within its session, when the source names a turn. */
  turn?: string;
  /** Keys of the turns one before and one after, for turn ids that end in a number ("12", "turn-7", "D3:12"). */
  adjacent: string[];
}

/** The best two hits of a group (a session or a turn), so "the best other than me" is one lookup. */
interface BestTwo {
  first?: { index: number; relevance: number };
  second?: { index: number; relevance: number };
}

const NUMBERED_TURN = /^(.*?)(\d{1,9})$/;
/** Longest sitting, in minutes: a day. */
export const MAX_SITTING_MINUTES = 1_440;

/**
 * Adds conversation context to full-text hits and re-sorts them, best first (ties keep their
 * order). Each returned hit carries `context` when it borrowed anything. Pure, deterministic and
 * linear in the number of hits.
 */
export function addConversationContext<T extends { memory: Memory; relevance: number }>(
  hits: readonly T[],
  weights: ContextWeights,
): Array<T & { context?: ContextSupport }> {
  checkWeights(weights);
  const sittingWeight = weights.sittingWeight ?? 0;
  if ((weights.neighbourWeight === 0 && weights.sessionWeight === 0 && sittingWeight === 0) || hits.length < 2)
    return [...hits];
  const positions = hits.map((hit) => keptPlace(hit.memory).position);
  const sittings = sittingWeight > 0 ? bestInSitting(hits, positions, (weights.sittingMinutes ?? 0) * 60_000) : [];
  const strength = weights.sittingStrength ?? 0;
  const best = strength > 0 && sittings.length > 0 ? Math.max(0, ...hits.map((hit) => hit.relevance)) : 0;
  const bySession = new Map<string, BestTwo>();
  const byTurn = new Map<string, BestTwo>();
  positions.forEach((position, index) => {
    const relevance = Math.max(0, hits[index]!.relevance);
    if (!position || relevance === 0) return;
    offer(bySession, position.session, index, relevance);
    if (position.turn !== undefined) offer(byTurn, position.turn, index, relevance);
  });
  const supported = hits.map((hit, index) => {
    const position = positions[index];
    if (!position) {
      const sitting = sittings[index];
      if (!sitting) return { hit, relevance: hit.relevance };
      const context: ContextSupport = {
        own: Math.max(0, hit.relevance),
        sitting: {
          id: hits[sitting.index]!.memory.id,
          added: sittingWeight * sitting.relevance * (best > 0 ? (sitting.relevance / best) ** strength : 1),
        },
      };
      return { hit, relevance: context.own + context.sitting!.added, context };
    }
    // The best of the same turn and the adjacent ones, the first of equals.
    let neighbour = position.turn === undefined ? undefined : bestOther(byTurn.get(position.turn), index);
    for (const key of position.adjacent) {
      const candidate = bestOther(byTurn.get(key), index);
      if (candidate && (!neighbour || candidate.relevance > neighbour.relevance)) neighbour = candidate;
    }
    const session = bestOther(bySession.get(position.session), index);
    const context: ContextSupport = { own: Math.max(0, hit.relevance) };
    if (neighbour && weights.neighbourWeight > 0)
      context.neighbour = {
        id: hits[neighbour.index]!.memory.id,
        added: weights.neighbourWeight * neighbour.relevance,
      };
    if (session && weights.sessionWeight > 0)
      context.session = { id: hits[session.index]!.memory.id, added: weights.sessionWeight * session.relevance };
    if (!context.neighbour && !context.session) return { hit, relevance: hit.relevance };
    return { hit, relevance: context.own + (context.neighbour?.added ?? 0) + (context.session?.added ?? 0), context };
  });
  // Nothing borrowed: the hits keep the store's order exactly.
  if (!supported.some((entry) => entry.context)) return [...hits];
  return supported
    .map((_, index) => index)
    .sort((a, b) => supported[b]!.relevance - supported[a]!.relevance || a - b)
    .map((index) => {
      const { hit, relevance, context } = supported[index]!;
      return context ? { ...hit, relevance, context } : { ...hit };
    });
}

/**
 * For each hit without a source session: the most relevant other such hit of its scope created
 * within `windowMs` of it. Hits are sorted by creation time once, so each looks only at its window.
 * Hits that share their exact creation time with another hit of the scope are a dated block (a
 * conversation imported with its date, every message at that date): a block is one sitting, it
 * neither lends to nor borrows from hits written at another time, however close.
 */
function bestInSitting(
  hits: ReadonlyArray<{ memory: Memory; relevance: number }>,
  positions: ReadonlyArray<TurnPosition | undefined>,
  windowMs: number,
): Array<{ index: number; relevance: number } | undefined> {
  const best: Array<{ index: number; relevance: number } | undefined> = hits.map(() => undefined);
  const timed = hits
    .map((hit, index) => ({ index, at: keptPlace(hit.memory).createdMs, scope: hit.memory.scope }))
    .filter((entry) => positions[entry.index] === undefined && Number.isFinite(entry.at))
    .sort((a, b) => a.at - b.at || (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
  // Sorted by time, then scope: the hits of one scope that share one creation time are side by side.
  const dated = new Uint8Array(hits.length);
  for (let position = 1; position < timed.length; position += 1) {
    const entry = timed[position]!;
    const previous = timed[position - 1]!;
    if (entry.at === previous.at && entry.scope === previous.scope) dated[entry.index] = dated[previous.index] = 1;
  }
  let start = 0;
  for (const [position, entry] of timed.entries()) {
    while (timed[start]!.at < entry.at - windowMs) start += 1;
    for (let other = start; other < timed.length && timed[other]!.at <= entry.at + windowMs; other += 1) {
      const candidate = timed[other]!;
      if (other === position || candidate.scope !== entry.scope) continue;
      if (candidate.at !== entry.at && (dated[entry.index] === 1 || dated[candidate.index] === 1)) continue;
      const relevance = Math.max(0, hits[candidate.index]!.relevance);
      const current = best[entry.index];
      if (relevance > 0 && (!current || relevance > current.relevance))
        best[entry.index] = { index: candidate.index, relevance };
    }
  }
  return best;
}

// A frozen memory (a store hands the same ones to query after query) keeps its place: the keys are
// strings built per memory, and the same memories are candidates again and again.
const PLACES = new WeakMap<Memory, { position: TurnPosition | undefined; createdMs: number }>();

/** `turnPosition` and the creation time, kept beside a memory that cannot change (frozen, its source too). */
function keptPlace(memory: Memory): { position: TurnPosition | undefined; createdMs: number } {
  let place = PLACES.get(memory);
  if (place === undefined) {
    place = { position: turnPosition(memory), createdMs: Date.parse(memory.createdAt) };
    if (Object.isFrozen(memory) && (memory.source === null || Object.isFrozen(memory.source)))
      PLACES.set(memory, place);
  }
  return place;
}

/** Where a memory sits in a conversation, or undefined when its source names no session. */
function turnPosition(memory: Memory): TurnPosition | undefined {
  const sessionId = memory.source?.sessionId;
  if (typeof sessionId !== 'string' || sessionId === '') return undefined;
  // Scope is part of the key: two scopes may reuse a session id without sharing a conversation.
  const session = `${memory.scope}\u0000${sessionId}`;
  const turnId = memory.source?.turnId;
  if (typeof turnId !== 'string' || turnId === '') return { session, adjacent: [] };
  const numbered = NUMBERED_TURN.exec(turnId);
  if (!numbered) return { session, turn: `${session}\u0000${turnId}`, adjacent: [] };
  // Numbered turns are keyed by prefix and value, so "D3:05" and "D3:5" are the same turn.
  const key = (number: number): string => `${session}\u0000${numbered[1]!}\u0000#${number}`;
  const number = Number(numbered[2]);
  return { session, turn: key(number), adjacent: [key(number - 1), key(number + 1)] };
}

function offer(groups: Map<string, BestTwo>, key: string, index: number, relevance: number): void {
  const group = groups.get(key) ?? {};
  if (!group.first || relevance > group.first.relevance) {
    group.second = group.first;
    group.first = { index, relevance };
  } else if (!group.second || relevance > group.second.relevance) {
    group.second = { index, relevance };
  }
  groups.set(key, group);
}

function bestOther(group: BestTwo | undefined, index: number): { index: number; relevance: number } | undefined {
  if (!group) return undefined;
  return group.first?.index === index ? group.second : group.first;
}

function checkWeights(weights: ContextWeights): void {
  for (const key of ['neighbourWeight', 'sessionWeight', 'sittingWeight'] as const) {
    // The sitting is optional (callers that predate it give only the source weights).
    const value = key === 'sittingWeight' ? (weights[key] ?? 0) : weights[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
      throw new EngramError(
        'CONFIG_INVALID',
        `Invalid conversation context ${key} ${JSON.stringify(value)}: a number from 0 to 1.`,
      );
    }
  }
  const strength = weights.sittingStrength ?? 0;
  if (typeof strength !== 'number' || !Number.isFinite(strength) || strength < 0 || strength > 2) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid conversation context sittingStrength ${JSON.stringify(strength)}: a number from 0 to 2.`,
    );
  }
  const minutes = weights.sittingMinutes ?? 0;
  if (typeof minutes !== 'number' || !Number.isFinite(minutes) || minutes < 0 || minutes > MAX_SITTING_MINUTES) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid conversation context sittingMinutes ${JSON.stringify(minutes)}: a number from 0 to ${MAX_SITTING_MINUTES}.`,
    );
  }
}
