import type { Memory } from '../memory/memory.js';
import type { Settings } from '../kernel/settings.js';
import { groupDuplicatePairs, keeperOrder, lexicalDuplicatePairs } from '../maintenance/duplicate-groups.js';
import { isAging } from '../maintenance/age-memories.js';
import {
  compareStatements,
  statementProfile,
  subjectKeyOf,
  type StatementComparison,
  type StatementProfile,
} from '../remember/statement-relation.js';
import { rewriteRelativeDates } from './relative-dates.js';
import type { DreamProposal } from './dream-proposal.js';

/** One instruction file's text (CLAUDE.md and the rest): read to find contradictions, never written. */
export interface InstructionText {
  path: string;
  text: string;
}

export interface OfflinePlanInput {
  /** The memories of one scope, every state (only active ones are proposed for change). */
  memories: readonly Memory[];
  settings: Pick<Settings, 'dedupe' | 'aging'>;
  now: string;
  instructions?: readonly InstructionText[];
}

/** A memory that contradicts a line of an instruction file: listed in the report, and annotated. */
export interface InstructionConflict {
  memoryId: string;
  path: string;
  line: string;
  reason: 'negation-differs' | 'values-differ';
}

// A statement of one word ("Vim.") says too little to call another its overturned version.
const MIN_CONTRADICTION_WORDS = 2;

/**
 * The dream without a model (SPEC §3, issue 15): rules only, each a proposal `resolvePlan` checks.
 * - near-duplicates (dedupe's lexical rules and threshold, its guards included) merge into the richer memory;
 * - a newer statement that the shared comparison reads as the same subject with a new value
 *   (`compareStatements` → `updated`: "PostgreSQL 15" → "16", "does not use", "is now Helix", "moved
 *   from X to Y") overturns the older: invalid from the newer one's time, linked to it. Two facts
 *   (another id, host, person, version or date in the subject, another event) are never overturned;
 *   when the comparison is unsure, both stay;
 * - relative dates become absolute, counted from the memory's creation;
 * - a memory that contradicts an instruction file the same way gets a note (the file is never edited);
 * - what the aging rules archive is archived.
 */
export function planOffline(input: OfflinePlanInput): { proposals: DreamProposal[]; conflicts: InstructionConflict[] } {
  const active = input.memories.filter((memory) => !memory.archived && memory.invalidAt === null).sort(keeperOrder);
  const proposals: DreamProposal[] = [];
  const touched = new Set<string>();

  // Merges: the keeper is the richer memory (more content words), so nothing said is lost.
  const profiles = new Map(active.map((memory) => [memory.id, statementProfile(memory.content)]));
  const richerFirst = (a: Memory, b: Memory): number =>
    profiles.get(b.id)!.words.size - profiles.get(a.id)!.words.size ||
    b.content.length - a.content.length ||
    keeperOrder(a, b);
  const pairs = lexicalDuplicatePairs(active, input.settings.dedupe.lexicalThreshold);
  for (const group of groupDuplicatePairs(active, pairs, richerFirst)) {
    const duplicateIds = group.duplicates.map(({ memory }) => memory.id);
    proposals.push({
      kind: 'merge',
      keeperId: group.keeper.id,
      duplicateIds,
      reason: `near-duplicates (${group.duplicates.map(({ verdict }) => verdict.similarity.toFixed(2)).join(', ')}) merged into the richer memory`,
    });
    touched.add(group.keeper.id);
    for (const id of duplicateIds) touched.add(id);
  }

  // Overturned facts: the same subject with a new value, the newer one standing.
  const threshold = input.settings.dedupe.lexicalThreshold;
  const untouched = active.filter((memory) => !touched.has(memory.id));
  for (const [older, newer] of overturnCandidates(untouched, profiles)) {
    if (touched.has(older.id) || !(newer.validFrom > older.validFrom)) continue;
    const comparison = compareStatements(profiles.get(older.id)!, profiles.get(newer.id)!, {
      method: 'lexical',
      threshold,
    });
    if (comparison.relation !== 'updated') continue;
    proposals.push({
      kind: 'invalidate',
      memoryId: older.id,
      supersededBy: newer.id,
      reason: `overturned by the newer ${newer.id} (${comparison.reason})`,
    });
    touched.add(older.id);
  }

  for (const memory of active) {
    if (touched.has(memory.id)) continue;
    const content = rewriteRelativeDates(memory.content, memory.createdAt);
    if (content.rewrites.length === 0) continue;
    const description = rewriteRelativeDates(memory.description, memory.createdAt);
    proposals.push({
      kind: 'rewrite-dates',
      memoryId: memory.id,
      content: content.text,
      ...(description.rewrites.length > 0 && { description: description.text }),
      reason: content.rewrites.map((rewrite) => `"${rewrite.from}" → "${rewrite.to}"`).join(', '),
    });
  }

  const conflicts = instructionConflicts(
    active.filter((memory) => !touched.has(memory.id)),
    profiles,
    input.instructions ?? [],
    threshold,
  );
  for (const conflict of conflicts) {
    proposals.push({
      kind: 'annotate',
      memoryId: conflict.memoryId,
      note: `Note (dream): this contradicts ${conflict.path} ("${conflict.line.slice(0, 200)}"); the instruction file wins.`,
      reason: `contradicts ${conflict.path} (${conflict.reason})`,
    });
    touched.add(conflict.memoryId);
  }

  const { archiveAfterDays, archiveBelowImportance } = input.settings.aging;
  for (const memory of active) {
    if (touched.has(memory.id)) continue;
    if (isAging(memory, input.now, archiveAfterDays, archiveBelowImportance))
      proposals.push({ kind: 'archive', memoryId: memory.id, reason: `not used for ${archiveAfterDays} days` });
  }
  return { proposals, conflicts };
}

/**
 * The pairs (older, newer) worth comparing, each once, oldest pair first: memories whose words are
 * the same but for numbers, negations and words of change (a value changed, a negation flipped), and
 * memories that a newer one saying "now", "no longer", "moved from … to …" names (their subject, or
 * the old value after "from"). Everything else shares too little to be one fact overturned.
 */
function overturnCandidates(
  memories: readonly Memory[],
  profiles: ReadonlyMap<string, StatementProfile>,
): Array<[Memory, Memory]> {
  const byTime = [...memories].sort(
    (a, b) => (a.validFrom < b.validFrom ? -1 : a.validFrom > b.validFrom ? 1 : 0) || (a.id < b.id ? -1 : 1),
  );
  const position = new Map(byTime.map((memory, index) => [memory.id, index]));
  const pairs = new Map<string, [Memory, Memory]>();
  const add = (a: Memory, b: Memory): void => {
    const [older, newer] = position.get(a.id)! < position.get(b.id)! ? [a, b] : [b, a];
    pairs.set(`${older.id}\u0000${newer.id}`, [older, newer]);
  };
  const groups = new Map<string, Memory[]>();
  const postings = new Map<string, Memory[]>();
  for (const memory of byTime) {
    const profile = profiles.get(memory.id)!;
    const key = statementKey(profile);
    if (key !== undefined) {
      const group = groups.get(key);
      if (group) group.push(memory);
      else groups.set(key, [memory]);
    }
    for (const stem of contentStems(profile)) {
      const list = postings.get(stem);
      if (list) list.push(memory);
      else postings.set(stem, [memory]);
    }
  }
  for (const group of groups.values())
    for (const [index, a] of group.entries()) for (const b of group.slice(index + 1)) add(a, b);
  for (const memory of byTime) {
    const { parts } = profiles.get(memory.id)!;
    if (!parts.change.marked || parts.change.additive) continue;
    const named =
      parts.change.from.length > 0
        ? parts.change.from
        : parts.tokens
            .slice(0, parts.head ?? 0)
            .filter((token) => token.kind === 'word' || token.kind === 'value' || token.kind === 'identifier')
            .map((token) => token.stem);
    if (named.length === 0) continue;
    const lists = named.map((stem) => postings.get(stem) ?? []).sort((a, b) => a.length - b.length);
    const others = lists.slice(1).map((list) => new Set(list.map((other) => other.id)));
    for (const other of lists[0]!)
      if (other.id !== memory.id && others.every((set) => set.has(other.id))) add(other, memory);
  }
  return [...pairs.values()].sort(
    ([a, b], [c, d]) => position.get(a.id)! - position.get(c.id)! || position.get(b.id)! - position.get(d.id)!,
  );
}

/**
 * The words of a statement without its numbers, negations and words of change, and its subject:
 * what two versions of one fact share (10,000 "Customer N is on plan X" are 10,000 subjects, not one group).
 */
function statementKey(profile: StatementProfile): string | undefined {
  const words = [...new Set(profile.parts.tokens.filter((token) => token.kind === 'word').map((token) => token.stem))];
  const subject = subjectKeyOf(profile);
  if (words.length < MIN_CONTRADICTION_WORDS || subject === undefined) return undefined;
  return `${words.sort().join(' ')}\u0000${subject}`;
}

/** The words of a statement without numbers, negations and words of change: how an instruction file's line is found again. */
function lineKey(profile: StatementProfile): string | undefined {
  const words = [...new Set(profile.parts.tokens.filter((token) => token.kind === 'word').map((token) => token.stem))];
  return words.length >= MIN_CONTRADICTION_WORDS ? words.sort().join(' ') : undefined;
}

function contentStems(profile: StatementProfile): Set<string> {
  return new Set(
    profile.parts.tokens
      .filter((token) => token.kind === 'word' || token.kind === 'value' || token.kind === 'identifier')
      .map((token) => token.stem),
  );
}

/** Memories stating a line of an instruction file with a negation or a value changed (the shared comparison's `updated`). */
function instructionConflicts(
  memories: readonly Memory[],
  profiles: ReadonlyMap<string, StatementProfile>,
  instructions: readonly InstructionText[],
  threshold: number,
): InstructionConflict[] {
  const lines = new Map<string, { path: string; line: string; profile: StatementProfile }>();
  for (const file of instructions) {
    for (const raw of file.text.split('\n')) {
      const line = raw.replace(/^\s*(?:[-*+]|\d+\.)\s+/, '').trim();
      if (line.length === 0 || line.startsWith('#')) continue;
      const profile = statementProfile(line);
      const key = lineKey(profile);
      if (key !== undefined && !lines.has(key)) lines.set(key, { path: file.path, line, profile });
    }
  }
  if (lines.size === 0) return [];
  const conflicts: InstructionConflict[] = [];
  for (const memory of memories) {
    const profile = profiles.get(memory.id)!;
    const key = lineKey(profile);
    const found = key === undefined ? undefined : lines.get(key);
    if (!found) continue;
    // The file's line stands as the older statement: a memory that gives its subject another value contradicts it.
    const comparison = compareStatements(found.profile, profile, { method: 'lexical', threshold });
    const reason = conflictReason(comparison);
    if (reason) conflicts.push({ memoryId: memory.id, path: found.path, line: found.line, reason });
  }
  return conflicts;
}

function conflictReason(comparison: StatementComparison): InstructionConflict['reason'] | undefined {
  if (comparison.relation !== 'updated') return undefined;
  return comparison.reason === 'negation-flipped' ? 'negation-differs' : 'values-differ';
}
