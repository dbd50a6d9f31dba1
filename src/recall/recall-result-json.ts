import type { WarningCode } from '../kernel/warnings.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { ageNote, type AgeNote, type AgeNoteOptions } from './age-notes.js';
import type { RecallResult } from './recall-memories.js';
import type { ScoreParts } from './ranking.js';

/** One recalled memory as JSON: the memory itself, its score, the score's parts and its age note. */
export interface RecalledMemoryJson {
  memory: Memory;
  score: number;
  parts: ScoreParts;
  age: AgeNote;
}

/**
 * A recall result as JSON: the one shape `engram recall --json` prints and `POST /v1/recall`
 * answers (README, "Recall results as JSON"), so a script can move from one to the other.
 */
export interface RecallResultJson {
  query: string;
  terms: string[];
  scopes: Scope[];
  warnings: WarningCode[];
  memories: RecalledMemoryJson[];
}

/** Shapes a recall result for the wire; pure: `now` (ISO-8601) dates the age notes. */
export function recallResultJson(result: RecallResult, now: string, ageOptions: AgeNoteOptions = {}): RecallResultJson {
  return {
    query: result.query,
    terms: result.terms,
    scopes: result.scopes,
    warnings: result.warnings,
    memories: result.memories.map(({ memory, parts }) => ({
      memory,
      score: parts.score,
      parts,
      age: ageNote(memory, now, ageOptions),
    })),
  };
}
