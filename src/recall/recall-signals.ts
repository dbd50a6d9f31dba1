import { addConversationContext, type ContextSupport } from './conversation-context.js';
import type { Settings } from '../kernel/settings.js';
import { demoteNearDuplicates, type DisagreementSupport, type DuplicateSupport } from './recall-diversity.js';
import { questionDates } from './question-dates.js';
import type { RankedMemory, RecallSignals } from './ranking.js';
import { addSecondHop, type SecondHopSupport } from './second-hop.js';
import { asksWhen } from './time-expressions.js';
import { applyTimeSignals, type QuestionTime, type TimeSignals } from './time-aware-ranking.js';
import type { TextHit } from '../contracts/memory-store.js';

// The lexical half of recall after the store's BM25: each signal re-orders full-text hits in pure
// code, so SQLite and Postgres rank the same candidates the same way. In order: conversation context
// (source turns and sessions), time (dates named in the question, "when" questions), a second hop
// (words the best hits share lend relevance to the candidates holding them), diversity
// (near-identical hits give way; of two that disagree, the newer goes first). None of them queries
// the store again. Each is a setting; 0 (or 1 for diversity) turns it off.

/** A full-text hit with what each signal did to it. */
export interface SignalledHit extends TextHit {
  context?: ContextSupport;
  time?: TimeSignals;
  secondHop?: SecondHopSupport;
  duplicate?: DuplicateSupport;
  /** A newer hit says otherwise of the same subject; it ranks before this one. */
  disagrees?: DisagreementSupport;
}

/** What the re-ranking needs besides the hits: the question, its terms, what it says about time, the settings. */
export interface SignalInput {
  terms: readonly string[];
  /** How many memories recall keeps in the end. */
  topK: number;
  time: QuestionTime;
  settings: Settings['recall'];
}

/** What a question says about time, at the settings (no dates are read when date matching is off). */
export function questionTime(query: string, now: string, settings: Settings['recall']): QuestionTime {
  return {
    dates: settings.dateWeight > 0 ? questionDates(query, now) : [],
    asksWhen: settings.timeMentionWeight > 0 && asksWhen(query),
  };
}

/** Re-orders full-text hits by conversation context, time, a second hop and diversity; best first. */
export function applyRecallSignals(found: readonly TextHit[], input: SignalInput): SignalledHit[] {
  const { settings } = input;
  let hits: SignalledHit[] = addConversationContext(found, {
    neighbourWeight: settings.contextNeighbourWeight,
    sessionWeight: settings.contextSessionWeight,
    sittingWeight: settings.contextSittingWeight,
    sittingMinutes: settings.contextSittingMinutes,
    sittingStrength: settings.contextSittingStrength,
  });
  hits = applyTimeSignals(hits, input.time, {
    dateWeight: settings.dateWeight,
    dateAfterDays: settings.dateAfterDays,
    timeMentionWeight: settings.timeMentionWeight,
  });
  hits = addSecondHop(hits, input.terms, {
    weight: settings.secondHopWeight,
    terms: settings.secondHopTerms,
    from: settings.secondHopFrom,
  });
  // Twice top_k: the slots that can be filled, and the memories next in line for them.
  return demoteNearDuplicates(hits, settings.duplicateSimilarity, 2 * input.topK);
}

/**
 * Copies what the signals did into each ranked memory's score parts (for `--explain`), amounts
 * relative to the best full-text hit, as relevance is.
 */
export function withSignals(
  ranked: readonly RankedMemory[],
  hits: readonly SignalledHit[],
  best: number,
): RankedMemory[] {
  if (best <= 0) return [...ranked];
  const byId = new Map(hits.map((hit) => [hit.memory.id, hit]));
  return ranked.map((entry) => {
    const hit = byId.get(entry.memory.id);
    if (!hit) return entry;
    const signals: RecallSignals = {
      ...(hit.time?.date !== undefined && { date: hit.time.date }),
      ...(hit.time?.timeMention !== undefined && { timeMention: hit.time.timeMention }),
      ...(hit.secondHop && { secondHop: { added: hit.secondHop.added / best, via: hit.secondHop.via } }),
      ...(hit.duplicate && { duplicate: hit.duplicate }),
      ...(hit.disagrees && { disagrees: hit.disagrees }),
    };
    const relative = (added: { id: string; added: number } | undefined) =>
      added && { id: added.id, added: added.added / best };
    const neighbour = relative(hit.context?.neighbour);
    const sitting = relative(hit.context?.sitting);
    const session = relative(hit.context?.session);
    const parts = {
      ...entry.parts,
      ...(hit.context && {
        context: {
          own: hit.context.own / best,
          ...(neighbour && { neighbour }),
          ...(session && { session }),
          ...(sitting && { sitting }),
        },
      }),
      ...(Object.keys(signals).length > 0 && { signals }),
    };
    return { ...entry, parts };
  });
}
