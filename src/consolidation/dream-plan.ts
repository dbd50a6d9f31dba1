import { isEngramError } from '../kernel/errors.js';
import {
  DEFAULT_MEMORY_LIMITS,
  assertContent,
  deriveDescription,
  type Memory,
  type MemoryLimits,
} from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { sameMemoryState } from '../memory/memory-changes.js';
import { lexicalProfile, mergeGuardReason, wordsContained } from '../remember/near-duplicate.js';
import type { Settings } from '../kernel/settings.js';
import { isAging } from '../maintenance/age-memories.js';
import { rewriteRefusal, subjectRefusal } from './model-step-bounds.js';
import { checkProposal, refuse, type DreamProposal } from './dream-proposal.js';

/**
 * A dream's plan is data: proposals (what the offline rules or the model want done) are checked
 * against the memories as they are and resolved into steps, each with the memory's state before
 * and after. A bad proposal is dropped with its reason; the others stand. Nothing here writes:
 * `apply-dream.ts` writes the final states as one change set.
 */

export type DreamStepKind = DreamProposal['kind'] | 'supersede';

/** One resolved step: one memory, its state before the step and after it. */
export interface DreamStep {
  kind: DreamStepKind;
  memoryId: string;
  scope: Scope;
  reason: string;
  /** The other memories the step names (a merge's duplicates, the memory that superseded this one). */
  relatedIds: string[];
  before: Memory;
  after: Memory;
  /** Who proposed it. */
  by: 'rules' | 'model';
}

/** A proposal that was refused, and why. */
export interface DroppedProposal {
  proposal: unknown;
  by: 'rules' | 'model';
  reason: string;
}

/** What a plan changes in one memory, from its state before the dream to its state after. */
export interface DreamMemoryDiff {
  memoryId: string;
  scope: Scope;
  kinds: DreamStepKind[];
  before: Memory;
  after: Memory;
}

export interface ResolvedPlan {
  steps: DreamStep[];
  dropped: DroppedProposal[];
  /** One entry per memory the plan changes, in the order first touched. */
  diffs: DreamMemoryDiff[];
}

export interface ResolveInput {
  /** Every memory of the scopes being consolidated, archived and invalid ones too. */
  memories: readonly Memory[];
  /** The scopes being consolidated: a proposal that names a memory elsewhere is dropped. */
  scopes: readonly Scope[];
  /** Ids known to exist in other scopes (so the report can say "another scope", not "unknown"). */
  foreignIds?: ReadonlySet<string>;
  proposals: ReadonlyArray<{ proposal: unknown; by: 'rules' | 'model' }>;
  /** The dream's time: duplicates are invalidated at it, and every changed memory is stamped with it (or later). */
  now: string;
  limits?: MemoryLimits;
  /** The aging rules: a model may archive only what they archive (none given: a model archives nothing). */
  aging?: Pick<Settings['aging'], 'archiveAfterDays' | 'archiveBelowImportance'>;
}

/**
 * Checks every proposal against the memories and the steps before it, and resolves the valid ones
 * into steps. Dropped: unknown ids, ids of another scope, edits of archived or already invalid
 * memories, merges the guards refuse (negation, numbers, word order), a second change to a memory
 * a step already invalidated, content that is no memory's (empty, too large, control characters),
 * condensed text that is not shorter or loses a number, and proposals that are not proposals.
 * A model's step is bounded further (`model-step-bounds.ts`): it merges or invalidates only memories
 * that share a subject, writes no text that drops a number, a list item or a name, adds no
 * instruction and says no more than its memories; it archives only what the aging rules archive and
 * never annotates (the rules do, quoting the instruction file).
 */
export function resolvePlan(input: ResolveInput): ResolvedPlan {
  const scopes = new Set(input.scopes);
  const limits = input.limits ?? DEFAULT_MEMORY_LIMITS;
  const original = new Map(input.memories.filter((memory) => scopes.has(memory.scope)).map((m) => [m.id, m]));
  const current = new Map(original);
  const steps: DreamStep[] = [];
  const dropped: DroppedProposal[] = [];
  const stamp = stampTime(input.now, input.memories);

  for (const { proposal, by } of input.proposals) {
    try {
      const made = resolveOne(checkProposal(proposal), { current, original, input, limits, stamp, by });
      steps.push(...made);
      for (const step of made) current.set(step.memoryId, step.after);
    } catch (error) {
      if (!isEngramError(error) || error.code !== 'INVALID_INPUT') throw error;
      dropped.push({ proposal, by, reason: error.message });
    }
  }
  const diffs: DreamMemoryDiff[] = [];
  const seen = new Set<string>();
  for (const step of steps) {
    if (seen.has(step.memoryId)) continue;
    seen.add(step.memoryId);
    const before = original.get(step.memoryId)!;
    const after = { ...current.get(step.memoryId)!, updatedAt: stamp };
    if (sameMemoryState(before, after)) continue;
    diffs.push({
      memoryId: step.memoryId,
      scope: before.scope,
      kinds: [...new Set(steps.filter((other) => other.memoryId === step.memoryId).map((other) => other.kind))],
      before,
      after,
    });
  }
  return { steps, dropped, diffs };
}

/**
 * The time every memory a dream changes is stamped with: now, or 1 ms past the latest change of any
 * of them when the clock has not moved past it, so `updatedAt` still only grows. One time for the
 * whole change set is what lets undo find its history entries.
 */
function stampTime(now: string, memories: readonly Memory[]): string {
  let latest = Date.parse(now);
  for (const memory of memories) latest = Math.max(latest, Date.parse(memory.updatedAt) + 1);
  return new Date(latest).toISOString();
}

interface ResolveContext {
  current: Map<string, Memory>;
  original: ReadonlyMap<string, Memory>;
  input: ResolveInput;
  limits: MemoryLimits;
  stamp: string;
  by: 'rules' | 'model';
}

function resolveOne(proposal: DreamProposal, context: ResolveContext): DreamStep[] {
  const { stamp, by } = context;
  const step = (
    kind: DreamStepKind,
    before: Memory,
    after: Memory,
    reason: string,
    relatedIds: string[],
  ): DreamStep => ({
    kind,
    memoryId: before.id,
    scope: before.scope,
    reason,
    relatedIds,
    before,
    after: { ...after, updatedAt: stamp },
    by,
  });
  switch (proposal.kind) {
    case 'merge': {
      const keeper = editable(proposal.keeperId, context);
      const duplicates = [...new Set(proposal.duplicateIds)].map((id) => editable(id, context));
      if (duplicates.length === 0) throw refuse('a merge names at least one duplicate');
      const keeperProfile = lexicalProfile(keeper.content);
      let merged: Memory = keeper;
      for (const duplicate of duplicates) {
        if (duplicate.id === keeper.id) throw refuse(`a memory cannot merge into itself (${keeper.id})`);
        if (duplicate.scope !== keeper.scope)
          throw refuse(`${duplicate.id} is in ${duplicate.scope}, not in ${keeper.scope} with ${keeper.id}`);
        const guard = mergeGuardReason(keeperProfile, lexicalProfile(duplicate.content));
        if (guard) throw refuse(`${duplicate.id} and ${keeper.id} must stay apart (${guard})`);
        merged = { ...merged, importance: Math.max(merged.importance, duplicate.importance) };
        // The richer text wins: a duplicate that says everything the keeper says and more lends its wording.
        const profile = lexicalProfile(duplicate.content);
        const mergedProfile = lexicalProfile(merged.content);
        if (profile.words.size > mergedProfile.words.size && wordsContained(mergedProfile, profile))
          merged = withContent(merged, duplicate.content);
      }
      if (proposal.content !== undefined) {
        const content = checkContent(proposal.content, context.limits);
        for (const memory of [keeper, ...duplicates]) {
          const guard = mergeGuardReason(lexicalProfile(memory.content), lexicalProfile(content));
          if (guard) throw refuse(`the merged wording contradicts ${memory.id} (${guard})`);
        }
        merged = withContent(merged, content);
      }
      if (by === 'model') {
        for (const duplicate of duplicates) {
          const apart = subjectRefusal(keeper.content, duplicate.content);
          if (apart) throw refuse(`${duplicate.id} cannot merge into ${keeper.id}: ${apart}`);
        }
        const lost = rewriteRefusal(
          [keeper, ...duplicates].map((memory) => memory.content),
          merged.content,
          'merge',
        );
        if (lost) throw refuse(`the merge into ${keeper.id} ${lost}`);
      }
      const reason = proposal.reason ?? `near-duplicates merged into ${keeper.id}`;
      const ids = duplicates.map((memory) => memory.id);
      return [
        step('merge', keeper, merged, reason, ids),
        ...duplicates.map((duplicate) =>
          step(
            'supersede',
            duplicate,
            { ...duplicate, invalidAt: stamp, supersededBy: keeper.id },
            `merged into ${keeper.id}`,
            [keeper.id],
          ),
        ),
      ];
    }
    case 'invalidate': {
      const memory = editable(proposal.memoryId, context);
      const newer = editable(proposal.supersededBy, context);
      if (newer.id === memory.id) throw refuse('a memory cannot supersede itself');
      if (newer.scope !== memory.scope) throw refuse(`${newer.id} is in another scope than ${memory.id}`);
      if (!(newer.validFrom > memory.validFrom))
        throw refuse(`${newer.id} is not newer than ${memory.id}: only a newer fact overturns an older one`);
      if (by === 'model') {
        const apart = subjectRefusal(memory.content, newer.content);
        if (apart) throw refuse(`${newer.id} does not overturn ${memory.id}: ${apart}`);
      }
      return [
        step(
          'invalidate',
          memory,
          { ...memory, invalidAt: newer.validFrom, supersededBy: newer.id },
          proposal.reason ?? `overturned by ${newer.id}`,
          [newer.id],
        ),
      ];
    }
    case 'rewrite-dates': {
      const memory = editable(proposal.memoryId, context);
      const content = checkContent(proposal.content, context.limits);
      if (by === 'model') {
        const changed = rewriteRefusal([memory.content], content, 'rewrite-dates');
        if (changed) throw refuse(`the dated text of ${memory.id} ${changed}`);
      }
      let after = withContent(memory, content);
      if (proposal.description !== undefined) after = { ...after, description: checkLine(proposal.description) };
      return [step('rewrite-dates', memory, after, proposal.reason ?? 'relative dates made absolute', [])];
    }
    case 'condense': {
      const memory = editable(proposal.memoryId, context);
      const content = checkContent(proposal.content, context.limits);
      if (content.length >= memory.content.length) throw refuse(`the condensed text of ${memory.id} is not shorter`);
      const kept = new Set(lexicalProfile(content).values);
      const lost = lexicalProfile(memory.content).values.filter((value) => !kept.has(value));
      if (lost.length > 0) throw refuse(`the condensed text of ${memory.id} loses ${lost.slice(0, 3).join(', ')}`);
      // As many negations as before; a shorter wording may move one ("do not want praise" → "no praise").
      if (lexicalProfile(memory.content).negations.length !== lexicalProfile(content).negations.length)
        throw refuse(`the condensed text of ${memory.id} changes a negation`);
      if (by === 'model') {
        const changed = rewriteRefusal([memory.content], content, 'condense');
        if (changed) throw refuse(`the condensed text of ${memory.id} ${changed}`);
      }
      return [step('condense', memory, withContent(memory, content), proposal.reason ?? 'condensed', [])];
    }
    case 'archive': {
      const memory = editable(proposal.memoryId, context);
      const { aging } = context.input;
      if (
        by === 'model' &&
        !(aging && isAging(memory, context.input.now, aging.archiveAfterDays, aging.archiveBelowImportance))
      )
        throw refuse(
          `${memory.id} is in use: a dream archives only what the aging rules archive (unimportant and unused for ${aging?.archiveAfterDays ?? 'many'} days)`,
        );
      return [step('archive', memory, { ...memory, archived: true }, proposal.reason ?? 'aging', [])];
    }
    case 'annotate': {
      if (by === 'model')
        throw refuse('only the rules annotate a memory (quoting the instruction file it contradicts)');
      const memory = editable(proposal.memoryId, context);
      const note = checkLine(proposal.note);
      if (memory.content.includes(note)) throw refuse(`${memory.id} already carries this note`);
      const content = checkContent(`${memory.content.trimEnd()}\n\n> ${note}`, context.limits);
      return [
        step('annotate', memory, { ...memory, content }, proposal.reason ?? 'contradicts an instruction file', []),
      ];
    }
  }
}

/** The memory's current state in the plan, if a step may still change it. */
function editable(id: string, context: ResolveContext): Memory {
  const memory = context.current.get(id);
  if (memory === undefined) {
    if (context.input.foreignIds?.has(id)) throw refuse(`${id} is in another scope`);
    throw refuse(`no memory ${JSON.stringify(id.slice(0, 80))} in ${context.input.scopes.join(', ')}`);
  }
  const before = context.original.get(id)!;
  if (before.archived) throw refuse(`${id} is archived: a dream does not edit archived memories`);
  if (before.invalidAt !== null) throw refuse(`${id} is already invalid`);
  if (memory.invalidAt !== null || memory.archived)
    throw refuse(`${id} was invalidated or archived by an earlier step`);
  return memory;
}

function withContent(memory: Memory, content: string): Memory {
  // A description derived from the old text follows the new one; a hand-written one stays.
  const description =
    memory.description === deriveDescription(memory.content) ? deriveDescription(content) : memory.description;
  return { ...memory, content, description };
}

function checkContent(value: unknown, limits: MemoryLimits): string {
  try {
    return assertContent(value, limits);
  } catch (error) {
    if (isEngramError(error)) throw refuse(error.message);
    throw error;
  }
}

function checkLine(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.trim() === '' ||
    value.length > 500 ||
    /[\u0000-\u001F\u007F-\u009F]/.test(value)
  )
    throw refuse('a note or description is one line of at most 500 characters');
  return value.trim();
}
