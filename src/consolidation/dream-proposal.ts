import { EngramError } from '../kernel/errors.js';

/**
 * What a dream's rules or its model helper ask for, as data: one proposal per change, checked for
 * its shape here (a model's answer may hold anything) before `dream-plan.ts` resolves it against
 * the memories.
 */

/** What one proposal asks for. Every kind keeps the memory: nothing in a dream deletes. */
export type DreamProposal =
  /** Fold `duplicateIds` into `keeperId` (optionally with the merged wording); the duplicates are invalidated, superseded by the keeper. */
  | { kind: 'merge'; keeperId: string; duplicateIds: string[]; content?: string; reason?: string }
  /** `memoryId` was overturned by the newer `supersededBy`: invalid from the newer one's valid-from time. */
  | { kind: 'invalidate'; memoryId: string; supersededBy: string; reason?: string }
  /** Relative dates written as absolute ones. */
  | { kind: 'rewrite-dates'; memoryId: string; content: string; description?: string; reason?: string }
  /** An over-long memory said in fewer words (a model's proposal only). */
  | { kind: 'condense'; memoryId: string; content: string; reason?: string }
  /** Aging rules say so: archived (kept, out of recall). */
  | { kind: 'archive'; memoryId: string; reason?: string }
  /** The memory contradicts an instruction file: a note is added (instruction files are never edited). */
  | { kind: 'annotate'; memoryId: string; note: string; reason?: string };

export const DREAM_PROPOSAL_KINDS = [
  'merge',
  'invalidate',
  'rewrite-dates',
  'condense',
  'archive',
  'annotate',
] as const;

/** A refused proposal: dropped with this reason, the others stand. */
export function refuse(reason: string): EngramError {
  return new EngramError('INVALID_INPUT', reason);
}

const ID_LIST_MAX = 50;

/** Checks the shape of one proposal (they come from a model, so anything may arrive). */
export function checkProposal(value: unknown): DreamProposal {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw refuse('a step is a JSON object');
  const record = value as Record<string, unknown>;
  const text = (key: string, optional = false): string | undefined => {
    const field = record[key];
    if (field === undefined && optional) return undefined;
    if (typeof field !== 'string' || field.length === 0 || field.length > 200_000)
      throw refuse(`"${key}" must be a non-empty string`);
    return field;
  };
  const reason = text('reason', true)?.slice(0, 300);
  const base = reason === undefined ? {} : { reason };
  switch (record.kind) {
    case 'merge': {
      const ids = record.duplicateIds;
      if (
        !Array.isArray(ids) ||
        ids.length === 0 ||
        ids.length > ID_LIST_MAX ||
        !ids.every((id) => typeof id === 'string')
      )
        throw refuse(`"duplicateIds" must be a list of 1-${ID_LIST_MAX} memory ids`);
      const content = text('content', true);
      return { kind: 'merge', keeperId: text('keeperId')!, duplicateIds: ids, ...(content && { content }), ...base };
    }
    case 'invalidate':
      return { kind: 'invalidate', memoryId: text('memoryId')!, supersededBy: text('supersededBy')!, ...base };
    case 'rewrite-dates': {
      const description = text('description', true);
      return {
        kind: 'rewrite-dates',
        memoryId: text('memoryId')!,
        content: text('content')!,
        ...(description && { description }),
        ...base,
      };
    }
    case 'condense':
      return { kind: 'condense', memoryId: text('memoryId')!, content: text('content')!, ...base };
    case 'archive':
      return { kind: 'archive', memoryId: text('memoryId')!, ...base };
    case 'annotate':
      return { kind: 'annotate', memoryId: text('memoryId')!, note: text('note')!, ...base };
    default:
      throw refuse(
        `unknown step kind ${JSON.stringify(String(record.kind).slice(0, 40))}: use one of ${DREAM_PROPOSAL_KINDS.join(', ')}`,
      );
  }
}

/** Refuses a plan that is not one at all (used where a caller hands a plan in whole). */
export function assertProposalList(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new EngramError('INVALID_INPUT', 'A dream plan is a JSON array of steps.');
  return value;
}
