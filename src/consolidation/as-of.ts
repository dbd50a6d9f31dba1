import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import type { RecallResult } from '../recall/recall-memories.js';
import { rankByRelevance } from '../recall/ranking.js';
import { lexicalProfile } from '../remember/near-duplicate.js';

/**
 * What was true then (issue 15): recall leaves invalidated and superseded memories out; these
 * filters put them back for `engram recall --include-invalid` and `--as-of <date>`, over what
 * recall found, without touching its ranking. Invalid memories are matched by their words and
 * ranked by the same formula.
 */

/** Whether a memory held at `at`: valid from before it, and not yet invalidated. */
export function validAt(memory: Pick<Memory, 'validFrom' | 'invalidAt'>, at: string): boolean {
  return memory.validFrom <= at && (memory.invalidAt === null || memory.invalidAt > at);
}

const AS_OF = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Reads an `--as-of` value: an ISO date or date-time (a bare date means the end of that day, UTC),
 * as an ISO instant. Anything else, a day the month lacks (2026-02-30) included, is INVALID_INPUT.
 */
export function parseAsOf(value: string): string {
  const match = typeof value === 'string' && value.length <= 40 ? AS_OF.exec(value) : null;
  const [year, month, day] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  const calendar = match ? new Date(Date.UTC(year, month - 1, day)) : undefined;
  const time = !match ? NaN : match[4] === undefined ? Date.parse(`${match[0]}T23:59:59.999Z`) : Date.parse(value);
  if (
    !calendar ||
    calendar.getUTCFullYear() !== year ||
    calendar.getUTCMonth() !== month - 1 ||
    calendar.getUTCDate() !== day ||
    !Number.isFinite(time)
  )
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid as-of date ${JSON.stringify(String(value).slice(0, 40))}: use an ISO date such as 2026-03-09 or 2026-03-09T10:00:00Z.`,
    );
  return new Date(time).toISOString();
}

/** Whether `parseAsOf` takes the value (for input schemas). */
export function isAsOf(value: string): boolean {
  try {
    parseAsOf(value);
    return true;
  } catch {
    return false;
  }
}

/** Recall's result with invalid memories added (those valid at `asOf`, when given) and current ones not yet valid then removed. */
export async function withInvalidMemories(
  dependencies: { store: MemoryStore; settings: Settings; now: () => Date },
  result: RecallResult,
  options: { scopes: readonly Scope[]; asOf?: string; topK?: number },
): Promise<RecallResult> {
  const { asOf } = options;
  const current = asOf === undefined ? result.memories : result.memories.filter((entry) => validAt(entry.memory, asOf));
  const words = lexicalProfile(result.terms.join(' ')).words;
  if (words.size === 0) return { ...result, memories: current };
  const invalid = await dependencies.store.list({ scopes: options.scopes, invalid: 'only', archived: 'exclude' });
  const candidates = invalid
    .filter((memory) => asOf === undefined || validAt(memory, asOf))
    .map((memory) => {
      const own = lexicalProfile(`${memory.name} ${memory.description} ${memory.content}`).words;
      let shared = 0;
      for (const word of words) if (own.has(word)) shared += 1;
      return { memory, relevance: shared / words.size };
    })
    .filter((candidate) => candidate.relevance > 0);
  const { recall } = dependencies.settings;
  const ranked = rankByRelevance(candidates, {
    now: dependencies.now().toISOString(),
    recencyBase: recall.recencyBase,
  });
  const topK = options.topK ?? recall.topK;
  const memories = [...current, ...ranked]
    .sort((a, b) => b.parts.score - a.parts.score)
    .slice(0, Math.max(topK, current.length));
  return { ...result, memories };
}
