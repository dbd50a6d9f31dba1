import type { WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import {
  detectExplicitMemory,
  type ExplicitIntent,
  type ForgetIntent,
  type RememberIntent,
} from './explicit-memory.js';
import type { Memory, MemorySource } from '../memory/memory.js';
import { lexicalProfile } from './near-duplicate.js';
import { assertScope, type Scope } from '../memory/scope.js';
import type { Engram } from '../engram.js';

/** Recorded in history for explicit writes that name no actor. */
export const EXPLICIT_MEMORY_ACTOR = 'explicit-memory';

export interface ExplicitMemoryWriteOptions {
  /** Where remembered statements go and where "forget" looks; default the Engram's default scope. */
  scope?: Scope;
  /** Recorded in history; default `explicit-memory`. */
  actor?: string;
  /** The session and turn the message came from; `origin` defaults to `explicit`. */
  source?: MemorySource;
  /** Report what would happen without writing anything. */
  dryRun?: boolean;
}

/** A memory close to a "forget" statement, with how much of the statement it holds. */
export interface ForgetCandidate {
  id: string;
  name: string;
  /** Share of the statement's content words the memory holds, 0..1. */
  coverage: number;
  /** Jaccard index of the two word sets, 0..1 (breaks ties between memories holding all the words). */
  overlap: number;
}

/** What one statement did: a memory created or merged into its near-duplicate, one archived, or nothing and why. */
export type ExplicitMemoryOutcome =
  | { intent: RememberIntent; action: 'created' | 'merged' | 'would-save'; memory?: Memory; warnings: WarningCode[] }
  | { intent: ForgetIntent; action: 'archived' | 'would-archive'; memory: Memory; candidates: ForgetCandidate[] }
  | { intent: ForgetIntent; action: 'no-match' | 'ambiguous'; candidates: ForgetCandidate[] };

export interface ExplicitMemoryResult {
  outcomes: ExplicitMemoryOutcome[];
}

/**
 * Captures what a user message asks to remember or forget, at once and without a model (SPEC §3,
 * explicit writes). "Remember …" statements are saved through `engram.save` (dedupe applies: a
 * restatement updates the memory it repeats); "forget …" archives the one memory of the write scope
 * that clearly matches (see `findForgetTarget`), or reports `no-match` / `ambiguous` and changes nothing.
 * @example
 * await applyExplicitMemory(engram, 'From now on, use pnpm instead of npm.');
 * // outcomes: [{ action: 'created', memory: { type: 'feedback', content: 'Use pnpm instead of npm.', … } }]
 */
export async function applyExplicitMemory(
  engram: Engram,
  message: string,
  options: ExplicitMemoryWriteOptions = {},
): Promise<ExplicitMemoryResult> {
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'Explicit-memory options are an object.');
  const scope = assertScope(options.scope ?? engram.defaultScope);
  const actor = options.actor ?? EXPLICIT_MEMORY_ACTOR;
  if (typeof actor !== 'string' || actor.trim() === '' || actor.length > 200) {
    throw new EngramError('INVALID_INPUT', 'actor is a non-empty string of at most 200 characters.');
  }
  const intents = detectExplicitMemory(message, { settings: engram.settings });
  const outcomes: ExplicitMemoryOutcome[] = [];
  for (const intent of intents) outcomes.push(await applyIntent(engram, intent, { ...options, scope, actor }));
  return { outcomes };
}

async function applyIntent(
  engram: Engram,
  intent: ExplicitIntent,
  options: ExplicitMemoryWriteOptions & { scope: Scope; actor: string },
): Promise<ExplicitMemoryOutcome> {
  if (intent.kind === 'remember') {
    if (options.dryRun) return { intent, action: 'would-save', warnings: [] };
    const result = await engram.save(
      {
        scope: options.scope,
        type: intent.type,
        name: intent.name,
        description: intent.description,
        content: intent.content,
        importance: intent.importance,
        source: { origin: 'explicit', ...options.source },
      },
      { actor: options.actor },
    );
    return { intent, action: result.action, memory: result.memory, warnings: result.warnings };
  }
  const target = await findForgetTarget(engram, intent.query, options.scope);
  if (target.status !== 'match') return { intent, action: target.status, candidates: target.candidates };
  if (options.dryRun) return { intent, action: 'would-archive', memory: target.memory, candidates: target.candidates };
  const archived = await engram.forget(target.memory.id, { actor: options.actor, scopes: [options.scope] });
  return { intent, action: 'archived', memory: archived ?? target.memory, candidates: target.candidates };
}

/**
 * The memory a "forget …" statement points at, among the active memories of one scope. Candidates
 * come from recall; each is scored by coverage (the share of the statement's content words, stemmed,
 * that the memory holds) and overlap (Jaccard of the two word sets). A match is CLEAR when the best
 * candidate's coverage reaches `explicitMemory.forgetMinCoverage` (0.75) and no other candidate
 * reaching it is within `explicitMemory.forgetMinLead` (0.2) of its overlap; otherwise nothing is
 * archived: `ambiguous` when several qualify, `no-match` when none does.
 */
export async function findForgetTarget(
  engram: Engram,
  query: string,
  scope: Scope,
): Promise<
  | { status: 'match'; memory: Memory; candidates: ForgetCandidate[] }
  | { status: 'no-match' | 'ambiguous'; candidates: ForgetCandidate[] }
> {
  if (typeof query !== 'string' || query.trim() === '')
    throw new EngramError('INVALID_INPUT', 'A forget query is a non-empty string.');
  const settings = engram.settings.explicitMemory;
  const wanted = lexicalProfile(query).words;
  if (wanted.size === 0) return { status: 'no-match', candidates: [] };
  const recalled = await engram.recall(query, {
    scopes: [scope],
    topK: settings.forgetCandidates,
    minScore: 0,
    recordAccess: false,
  });
  const scored = recalled.memories
    .map(({ memory }) => ({
      memory,
      ...wordMatch(
        wanted,
        lexicalProfile(`${memory.name.replace(/-/g, ' ')} ${memory.description} ${memory.content}`).words,
      ),
    }))
    .sort((a, b) => b.coverage - a.coverage || b.overlap - a.overlap);
  const candidates = scored.slice(0, 5).map(({ memory, coverage, overlap }) => ({
    id: memory.id,
    name: memory.name,
    coverage: round(coverage),
    overlap: round(overlap),
  }));
  const qualified = scored
    .filter((entry) => entry.coverage >= settings.forgetMinCoverage)
    .sort((a, b) => b.overlap - a.overlap || b.coverage - a.coverage);
  const [best, second] = qualified;
  if (!best) return { status: 'no-match', candidates };
  if (second && best.overlap - second.overlap < settings.forgetMinLead) return { status: 'ambiguous', candidates };
  return { status: 'match', memory: best.memory, candidates };
}

function wordMatch(wanted: ReadonlySet<string>, held: ReadonlySet<string>): { coverage: number; overlap: number } {
  let shared = 0;
  for (const word of wanted) if (held.has(word)) shared += 1;
  const union = wanted.size + held.size - shared;
  return { coverage: shared / wanted.size, overlap: union === 0 ? 0 : shared / union };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
