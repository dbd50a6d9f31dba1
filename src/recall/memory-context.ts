import type { WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import {
  packMemoryContext,
  formatStaticMemoryPart,
  type ContextCandidate,
  type PackedMemory,
} from './memory-context-format.js';
import { buildMemoryIndex } from '../memory/memory-index.js';
import type { MemoryPlacement } from '../privacy/injected-markers.js';
import type { Scope } from '../memory/scope.js';
import { estimateTextTokens } from '../kernel/token-estimate.js';
import type { LanguageModel, LanguageModelUsage } from '../contracts/language-model.js';
import { selectMemoriesWithModel, type LlmSelection } from './llm-selection.js';
import {
  recallMemories,
  recordHits,
  type RecallDependencies,
  type RecallOptions,
  type RecallResult,
} from './recall-memories.js';

export interface MemoryContextOptions extends Omit<RecallOptions, 'recordAccess'> {
  /** Token budget of the `<memory_context>` block, wrapper included; default `injection.maxTokens` (3,000). */
  maxTokens?: number;
  /** When given, an LLM retriever also picks memories from the manifest (at most `recall.llmMaxPicks`). */
  model?: LanguageModel;
  /** Tools used recently in the session, shown to the LLM retriever. */
  recentTools?: readonly string[];
  /** Ids the LLM retriever must not pick again: memories already surfaced in this session (the caller keeps the set). */
  surfaced?: ReadonlySet<string>;
  /**
   * Ids left out of the block altogether, ranked or picked: memories whose text the model has in its
   * context already. Ranked recall looks that many further, so top_k still counts memories it can give.
   */
  exclude?: ReadonlySet<string>;
  /** Aborts the LLM retriever (ranked recall still answers). */
  signal?: AbortSignal;
  /** Update hit count and last accessed of the memories put in the block (default true). */
  recordAccess?: boolean;
  /** Build the static part too (default true); a caller that keeps it for the session can skip the work. */
  includeStaticPart?: boolean;
}

/** What a model would receive: a static part for the start of the system prompt and a block for its end. */
export interface MemoryContext {
  query: string;
  /** The one instant of the build (ISO-8601): ranking, age notes and hits use it. */
  at: string;
  scopes: Scope[];
  /** Instructions and the MEMORY.md index: byte-stable while the memories themselves do not change. */
  staticPart: string;
  /** `<memory_context>…</memory_context>` for the end of the system prompt, or '' when nothing was recalled. */
  block: string;
  /** Memories in the block, in block order. */
  included: PackedMemory[];
  /** Memories recalled but left out because the block was full. */
  omitted: PackedMemory[];
  tokens: { staticPart: number; block: number; budget: number };
  warnings: WarningCode[];
  /** What the LLM retriever did, when a model was given. */
  selection?: { status: LlmSelection['status']; picked: string[]; manifestSize: number; usage?: LanguageModelUsage };
}

/**
 * Builds the memory context for one turn (SPEC §3, injection): ranked recall, plus an LLM
 * retriever's picks when a model is given, packed greedily into at most `maxTokens` estimated tokens
 * as a `<memory_context>` block (the retriever's picks first, in its order, then ranked memories by
 * score), and the static part (the MEMORY.md index of the read scopes) for the start of the prompt.
 * Each memory put in the block has its hit count and last access updated once.
 */
export async function buildMemoryContext(
  dependencies: RecallDependencies,
  query: string,
  scopes: Scope[],
  options: MemoryContextOptions = {},
): Promise<MemoryContext> {
  if (typeof query !== 'string') throw new EngramError('INVALID_INPUT', 'A memory context query is a string.');
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'Memory context options are an object.');
  const { settings, store } = dependencies;
  const maxTokens = options.maxTokens ?? settings.injection.maxTokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 0 || maxTokens > 10_000_000) {
    throw new EngramError('INVALID_INPUT', `Invalid maxTokens ${JSON.stringify(maxTokens)}: a whole number from 0.`);
  }
  if (options.model !== undefined && typeof options.model?.generate !== 'function') {
    throw new EngramError('INVALID_INPUT', 'model must be a LanguageModel with a generate() method.');
  }
  const {
    maxTokens: _budget,
    model,
    recentTools,
    surfaced,
    exclude,
    signal,
    recordAccess,
    includeStaticPart,
    ...recallOptions
  } = options;
  // One instant for the whole turn, so ranking, age notes and hits agree.
  const instant = dependencies.now();
  const fixed: RecallDependencies = { ...dependencies, now: () => instant };
  const now = instant.toISOString();

  const left = exclude !== undefined && exclude.size > 0 ? exclude : undefined;
  const ranked = await recallWithout(fixed, query, scopes, recallOptions, left);
  const warnings = [...ranked.warnings];
  let selection: LlmSelection | undefined;
  if (model) {
    const known = left && surfaced ? new Set([...surfaced, ...left]) : (left ?? surfaced);
    selection = await selectMemoriesWithModel(fixed, ranked.scopes, {
      model,
      query,
      ...(recentTools && { recentTools }),
      ...(known && { surfaced: known }),
      ...(signal && { signal }),
      ...(recallOptions.types && { types: recallOptions.types }),
    });
    warnings.push(...selection.warnings);
  }

  const rankedById = new Map(ranked.memories.map((entry) => [entry.memory.id, entry]));
  const candidates: ContextCandidate[] = [];
  const offered = new Set<string>();
  // A memory a newer one contradicts carries that in the block (recall ranked the newer first).
  const newer = (id: string) => {
    const found = rankedById.get(id)?.parts.signals?.disagrees?.newer;
    return found === undefined ? {} : { newer: found };
  };
  for (const memory of selection?.memories ?? []) {
    const rankedEntry = rankedById.get(memory.id);
    candidates.push({
      memory,
      score: rankedEntry?.parts.score ?? null,
      source: rankedEntry ? 'both' : 'selected',
      ...newer(memory.id),
    });
    offered.add(memory.id);
  }
  for (const entry of ranked.memories) {
    if (!offered.has(entry.memory.id))
      candidates.push({ memory: entry.memory, score: entry.parts.score, source: 'ranked', ...newer(entry.memory.id) });
  }
  const packed = packMemoryContext(candidates, {
    maxTokens,
    now,
    ageNoteDays: settings.recall.ageNoteDays,
    staleDays: settings.recall.staleDays,
    bytesPerToken: settings.tokens.bytesPerTextToken,
  });

  const staticPart = includeStaticPart === false ? '' : await buildStaticPart(dependencies, ranked.scopes);
  if (recordAccess !== false)
    warnings.push(
      ...(await recordHits(
        store,
        packed.included.map((entry) => entry.memory.id),
        now,
      )),
    );
  return {
    query,
    at: now,
    scopes: ranked.scopes,
    staticPart,
    block: packed.block,
    included: packed.included,
    omitted: packed.omitted,
    tokens: {
      staticPart: estimateTextTokens(staticPart, { bytesPerToken: settings.tokens.bytesPerTextToken }),
      block: packed.tokens,
      budget: maxTokens,
    },
    warnings,
    ...(selection && {
      selection: {
        status: selection.status,
        picked: selection.memories.map((memory) => memory.id),
        manifestSize: selection.manifest.length,
        ...(selection.usage && { usage: selection.usage }),
      },
    }),
  };
}

/** Ranked recall without the excluded ids, asked for as many more so that top_k counts the others. */
async function recallWithout(
  dependencies: RecallDependencies,
  query: string,
  scopes: Scope[],
  options: RecallOptions,
  exclude: ReadonlySet<string> | undefined,
): Promise<RecallResult> {
  const topK = options.topK ?? dependencies.settings.recall.topK;
  // An invalid top_k goes to recallMemories unchanged, which refuses it.
  if (!exclude || !Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K)
    return recallMemories(dependencies, query, scopes, { ...options, recordAccess: false });
  const wider = await recallMemories(dependencies, query, scopes, {
    ...options,
    topK: Math.min(MAX_TOP_K, topK + exclude.size),
    recordAccess: false,
  });
  return { ...wider, memories: wider.memories.filter((entry) => !exclude.has(entry.memory.id)).slice(0, topK) };
}

/** recallMemories' largest top_k. */
const MAX_TOP_K = 1_000;

/** Lines of the index line cap kept free for its header and the "lists N of M" note. */
const INDEX_RESERVED_LINES = 4;

/**
 * The static part alone: instructions and the MEMORY.md index of the active memories in `scopes`.
 * Past the index's line cap it lists the most important memories (ties: most recently written) and
 * says how many it leaves to recall. Nothing in it depends on hits or access times, so recalls
 * never change it; reads are bounded (a count and one page), whatever the store's size.
 */
export async function buildStaticPart(
  dependencies: Pick<RecallDependencies, 'store' | 'settings'>,
  scopes: readonly Scope[],
  placement: MemoryPlacement = 'system-end',
): Promise<string> {
  const { store, settings } = dependencies;
  const active = { scopes, archived: 'exclude', invalid: 'exclude' } as const;
  const limit = Math.max(1, settings.index.maxLines - INDEX_RESERVED_LINES);
  const memories = await store.list({ ...active, order: 'importance-desc', limit });
  if (memories.length === 0) return '';
  const total = memories.length < limit ? memories.length : await store.count(active);
  const index = buildMemoryIndex(memories, {
    maxLines: settings.index.maxLines,
    maxBytes: settings.index.maxBytes,
    entryMaxChars: settings.index.entryMaxChars,
  });
  const note =
    total > memories.length
      ? `\n> This index lists the ${memories.length} most important of ${total} memories; recall finds the others.\n`
      : '';
  return formatStaticMemoryPart(`${index.text}${note}`, placement);
}
