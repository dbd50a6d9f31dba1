import type { Memory } from '../memory/memory.js';
import type { Settings } from '../kernel/settings.js';
import { groupDuplicatePairs, keeperOrder, lexicalDuplicatePairs } from '../maintenance/duplicate-groups.js';
import { isAging } from '../maintenance/age-memories.js';
import { lexicalProfile, sameOrder, type LexicalProfile } from '../remember/near-duplicate.js';
import { rewriteRelativeDates } from './relative-dates.js';
import type { DreamProposal } from './dream-plan.js';

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

// Statements this short ("uses tabs") say too little to call one an overturned version of another.
const MIN_CONTRADICTION_WORDS = 3;

// A number right after one of these words (or after "#") names which of
// several things is meant ("step 3", "note 4:", "#12"), not a value of one thing: "note 3" and
// "note 4" are two notes, while "PostgreSQL 15" → "16" is one fact changed.
const LABEL_WORDS = new Set(
  `note notes item items step steps part parts chapter section issue issues ticket tickets task tasks phase stage
  room floor lane slot track test tests case cases example question questions rule rules point points no number
  entry entries episode round level day week sprint milestone pr prs page pages line lines figure table appendix
  todo bug bugs story stories`.split(/\s+/),
);

/**
 * The dream without a model (SPEC §3, issue 15): rules only, each a proposal `resolvePlan` checks.
 * - near-duplicates (dedupe's lexical rules and threshold, its guards included) merge into the richer memory;
 * - a newer statement of the same words with a negation or a value changed ("PostgreSQL 15" → "16")
 *   overturns the older: invalid from the newer one's time, linked to it;
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

  // Overturned facts: same words but for a negation or a value, the newer one standing.
  for (const group of sameStatementGroups(
    active.filter((memory) => !touched.has(memory.id)),
    profiles,
  )) {
    const byTime = [...group].sort((a, b) => (a.validFrom < b.validFrom ? -1 : a.validFrom > b.validFrom ? 1 : 0));
    for (const [position, older] of byTime.entries()) {
      const newer = byTime
        .slice(position + 1)
        .find((candidate) => candidate.validFrom > older.validFrom && overturns(profiles, older, candidate));
      if (!newer) continue;
      proposals.push({
        kind: 'invalidate',
        memoryId: older.id,
        supersededBy: newer.id,
        reason: `overturned by the newer ${newer.id}`,
      });
      touched.add(older.id);
    }
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

/** A text's lexical profile plus the numbers in it that are labels (see LABEL_WORDS). */
interface StatementProfile extends LexicalProfile {
  labels: ReadonlySet<string>;
}

function statementProfile(text: string): StatementProfile {
  return { ...lexicalProfile(text), labels: labelNumbers(text) };
}

/** The tokens holding digits that label a thing: right after a LABEL_WORDS word or "#". */
export function labelNumbers(text: string): Set<string> {
  const labels = new Set<string>();
  let previous = '';
  for (const [match] of text
    .normalize('NFKC')
    .toLowerCase()
    .matchAll(/#?[\p{L}\p{N}]+/gu)) {
    const token = match.replace(/^#/, '');
    if (/\p{N}/u.test(token) && (match.startsWith('#') || LABEL_WORDS.has(previous))) labels.add(token);
    previous = token;
  }
  return labels;
}

/** The content words of a text without the words holding digits: what two versions of one fact share. */
function statementKey(profile: LexicalProfile): string | undefined {
  const words = [...profile.words].filter((word) => !/\p{N}/u.test(word));
  return words.length >= MIN_CONTRADICTION_WORDS ? words.sort().join(' ') : undefined;
}

/** Memories that say the same words but perhaps for a negation or values: candidates for "overturned". */
function sameStatementGroups(memories: readonly Memory[], profiles: ReadonlyMap<string, StatementProfile>): Memory[][] {
  const groups = new Map<string, Memory[]>();
  for (const memory of memories) {
    const key = statementKey(profiles.get(memory.id)!);
    if (key === undefined) continue;
    const group = groups.get(key);
    if (group) group.push(memory);
    else groups.set(key, [memory]);
  }
  return [...groups.values()].filter((group) => group.length > 1);
}

/** Whether `newer` states the fact of `older` with its negation flipped or its values changed (in the same order). */
function overturns(profiles: ReadonlyMap<string, StatementProfile>, older: Memory, newer: Memory): boolean {
  return contradiction(profiles.get(older.id)!, profiles.get(newer.id)!) !== undefined;
}

function contradiction(a: StatementProfile, b: StatementProfile): 'negation-differs' | 'values-differ' | undefined {
  if (!sameOrder(a, b)) return undefined;
  if (a.negated !== b.negated) return 'negation-differs';
  if (a.values.length > 0 && a.values.length === b.values.length && a.values.join(' ') !== b.values.join(' ')) {
    // Only labels changed ("note 3" / "note 4"): two numbered things, not one fact overturned.
    const onlyLabels =
      a.values.every((value) => b.values.includes(value) || a.labels.has(value)) &&
      b.values.every((value) => a.values.includes(value) || b.labels.has(value));
    return onlyLabels ? undefined : 'values-differ';
  }
  return undefined;
}

/** Memories stating a line of an instruction file with a negation or a value changed. */
function instructionConflicts(
  memories: readonly Memory[],
  profiles: ReadonlyMap<string, StatementProfile>,
  instructions: readonly InstructionText[],
): InstructionConflict[] {
  const lines = new Map<string, { path: string; line: string; profile: StatementProfile }>();
  for (const file of instructions) {
    for (const raw of file.text.split('\n')) {
      const line = raw.replace(/^\s*(?:[-*+]|\d+\.)\s+/, '').trim();
      if (line.length === 0 || line.startsWith('#')) continue;
      const profile = statementProfile(line);
      const key = statementKey(profile);
      if (key !== undefined && !lines.has(key)) lines.set(key, { path: file.path, line, profile });
    }
  }
  if (lines.size === 0) return [];
  const conflicts: InstructionConflict[] = [];
  for (const memory of memories) {
    const profile = profiles.get(memory.id)!;
    const key = statementKey(profile);
    const found = key === undefined ? undefined : lines.get(key);
    if (!found) continue;
    const reason = contradiction(found.profile, profile);
    if (reason) conflicts.push({ memoryId: memory.id, path: found.path, line: found.line, reason });
  }
  return conflicts;
}
