import type { Settings } from '../kernel/settings.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { buildMemoryIndex } from '../memory/memory-index.js';
import type { LanguageModelUsage } from '../contracts/language-model.js';
import type { InstructionConflict } from './offline-plan.js';
import type { DreamMemoryDiff, DreamStep, DroppedProposal } from './dream-plan.js';
import type { GatherSummary } from './gather.js';
import type { DreamSkipReason } from './dream-gates.js';
import type { DreamOptions } from './dream-inputs.js';

/** The index a dream rebuilt for one scope: within its caps, without archived or invalid memories. */
export interface DreamIndexReport {
  scope: Scope;
  shown: number;
  total: number;
  truncated: boolean;
  /** Pointers the index no longer holds: memories the dream archived or invalidated. */
  droppedPointers: number;
}

export interface DreamReport {
  status: 'applied' | 'planned' | 'unchanged' | 'skipped';
  skipped?: DreamSkipReason;
  /** When the gate that stopped an automatic run opens. */
  nextAt?: string;
  trigger: 'manual' | 'automatic';
  dryRun: boolean;
  scopes: Scope[];
  /** `engram undo <changeSetId>` reverts the whole run. */
  changeSetId?: string;
  steps: DreamStep[];
  /** Proposals refused, and steps not applied because their memories changed while the dream ran. */
  dropped: DroppedProposal[];
  diffs: DreamMemoryDiff[];
  /** Memories a person or another process changed while the dream ran: their steps were dropped, the edits stand. */
  changedDuringRun?: string[];
  /** Memories that contradict an instruction file: annotated, listed here; the files are never edited. */
  instructionConflicts: InstructionConflict[];
  index: DreamIndexReport[];
  model?: { calls: number; usage: Required<LanguageModelUsage>; malformed: string[] };
  /** What the gather phase gave the helper, summed over the scopes (with a model and a reader only). */
  gathered?: GatherSummary;
  /** Memories of the scopes, invalid and archived included, before and after: a dream never lowers it. */
  countBefore: number;
  countAfter: number;
  improved: number;
  /** SPEC's one-line report: "improved N memories". */
  summary: string;
  warnings: string[];
}

/** A report of a run that has planned nothing yet. */
export function emptyReport(options: DreamOptions, scopes: Scope[]): DreamReport {
  return {
    status: 'unchanged',
    trigger: options.trigger,
    dryRun: options.dryRun === true,
    scopes,
    steps: [],
    dropped: [],
    diffs: [],
    instructionConflicts: [],
    index: [],
    countBefore: 0,
    countAfter: 0,
    improved: 0,
    summary: 'improved 0 memories',
    warnings: [],
  };
}

/** The report of a run a gate or the lock stopped. */
export function skipReport(report: DreamReport, reason: DreamSkipReason, nextAt?: string): DreamReport {
  return { ...report, status: 'skipped', skipped: reason, ...(nextAt !== undefined && { nextAt }) };
}

/** The index of one scope once the plan's diffs are applied: within its caps, without archived or invalid memories. */
export function indexAfter(
  scope: Scope,
  memories: readonly Memory[],
  diffs: readonly DreamMemoryDiff[],
  settings: Settings,
): DreamIndexReport {
  const after = new Map(memories.map((memory) => [memory.id, memory]));
  for (const diff of diffs) after.set(diff.memoryId, diff.after);
  const isActive = (memory: Memory): boolean => !memory.archived && memory.invalidAt === null;
  const active = [...after.values()].filter(isActive);
  const index = buildMemoryIndex(active, settings.index);
  return {
    scope,
    shown: index.shown,
    total: index.total,
    truncated: index.truncated,
    droppedPointers: memories.filter(isActive).length - active.length,
  };
}
