import { randomUUID } from 'node:crypto';
import { checkCompactionInput, type CompactionInput } from './compaction-input.js';
import {
  aborted,
  countsAsFailure,
  describe,
  failed,
  groupsToDrop,
  isPromptTooLong,
  notSmaller,
} from './compaction-errors.js';
import { autoCompactThreshold, compactionTripped } from './compaction-policy.js';
import {
  compactionHead,
  compactionResult,
  type CompactionResult,
  type CompactionResultContext,
} from './compaction-result.js';
import { standingRules, withStandingRules } from './compaction-standing-rules.js';
import {
  droppableGroupCount,
  dropOldestGroups,
  missingSummarySections,
  stripAnalysis,
  stripBulkyContent,
  summaryInstruction,
  summaryRetryInstruction,
} from './compaction-summary.js';
import { keptTail } from './compaction-tail.js';
import {
  contextWindowFor,
  estimateMessageTokens,
  estimateMessagesTokens,
  estimatePrefixTokens,
} from '../context-budget.js';
import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import { estimateTextTokens } from '../../kernel/token-estimate.js';
import type { LanguageModel, LanguageModelMessage } from '../../contracts/language-model.js';
import { runForkedHelper, type ForkPrefix } from '../forked-helper.js';
import type { SessionMessage } from '../../contracts/session-message.js';
import { copyMessage, wireMessage } from '../session-message-helpers.js';

/**
 * Layer 4 (SPEC §2): replaces a session's messages by a summary when the context is nearly full or
 * the user asks. The fast path uses the session notes and calls no model; otherwise a forked helper
 * (the parent's system and tools, then the conversation) writes the nine-part summary, dropping the
 * oldest message groups when that request is itself too long; a summary lacking any of the nine
 * parts is asked for once more, then refused. The result is new messages (summary, re-injected
 * files and plan, kept recent messages) and a boundary, always smaller than the messages it
 * replaces (else it is refused); the input is never changed, so a failed compaction leaves the
 * session as it was. A circuit breaker stops automatic
 * compaction after `compaction.circuitBreakerFailures` failures in a row.
 */

/** A user pre-compact hook: told a compaction is coming; text it returns is added to the summarizer's instructions. */
export type PreCompactHook = (input: {
  trigger: 'auto' | 'manual';
  messages: readonly SessionMessage[];
}) => Promise<string | void>;

export interface CompactorOptions {
  settings: Pick<Settings, 'session' | 'compaction' | 'tokens'>;
  /** The session's model (its prompt cache serves the summarizer's prefix); none: only the fast path works. */
  model?: LanguageModel;
  generateId?: () => string;
  now?: () => Date;
  preCompactHooks?: PreCompactHook[];
}

/** Runs compactions for one session and keeps its circuit breaker. */
export class Compactor {
  readonly #settings: CompactorOptions['settings'];
  readonly #model: LanguageModel | undefined;
  readonly #resultContext: CompactionResultContext;
  readonly #hooks: PreCompactHook[];
  #failuresInARow = 0;
  #running = false;

  constructor(options: CompactorOptions) {
    if (
      options === null ||
      typeof options !== 'object' ||
      !options.settings?.compaction ||
      !options.settings.session ||
      !options.settings.tokens
    ) {
      throw new EngramError(
        'INVALID_INPUT',
        'Compactor takes an options object with settings (session, compaction and tokens sections).',
      );
    }
    if (options.model !== undefined && typeof options.model?.generate !== 'function')
      throw new EngramError('INVALID_INPUT', 'Compactor: model must be a LanguageModel.');
    if (
      options.preCompactHooks !== undefined &&
      (!Array.isArray(options.preCompactHooks) || options.preCompactHooks.some((hook) => typeof hook !== 'function'))
    ) {
      throw new EngramError('INVALID_INPUT', 'Compactor: preCompactHooks is an array of async functions.');
    }
    this.#settings = options.settings;
    this.#model = options.model;
    this.#resultContext = {
      settings: options.settings,
      generateId: options.generateId ?? randomUUID,
      now: options.now ?? (() => new Date()),
    };
    this.#hooks = [...(options.preCompactHooks ?? [])];
  }

  /** Compactions that failed one after another (0 after a success). */
  get failuresInARow(): number {
    return this.#failuresInARow;
  }

  /** True once the circuit breaker stopped automatic compaction. */
  get tripped(): boolean {
    return compactionTripped({ failuresInARow: this.#failuresInARow }, this.#settings);
  }

  /** Closes the circuit breaker again (for a user who fixed the cause). */
  reset(): void {
    this.#failuresInARow = 0;
  }

  /**
   * Compacts the messages. Throws COMPACTION_DISABLED for an automatic compaction once the breaker
   * is tripped (a manual one still runs and, on success, resets it); COMPACTION_FAILED or
   * MODEL_NOT_CONFIGURED when no summary could be made (counted by the breaker); INVALID_INPUT for
   * malformed input and MODEL_ABORTED when aborted (not counted). The input is never changed.
   */
  async compact(input: CompactionInput): Promise<CompactionResult> {
    checkCompactionInput(input);
    if (input.trigger === 'auto' && this.tripped) {
      throw new EngramError(
        'COMPACTION_DISABLED',
        `Automatic compaction is off: the last ${this.#failuresInARow} compactions failed in a row (circuit breaker, compaction.circuitBreakerFailures). Compact by hand (/compact) once the cause is fixed, or start a new session.`,
        { details: { failuresInARow: this.#failuresInARow } },
      );
    }
    if (this.#running)
      throw new EngramError('CONFLICT', 'A compaction is already running for this session; await it first.');
    if (input.signal?.aborted) throw aborted();
    this.#running = true;
    try {
      const result = await this.#compact(input);
      this.#failuresInARow = 0;
      return result;
    } catch (error) {
      if (countsAsFailure(error, input.signal)) this.#failuresInARow += 1;
      throw error;
    } finally {
      this.#running = false;
    }
  }

  async #compact(input: CompactionInput): Promise<CompactionResult> {
    const window = input.window ?? contextWindowFor(this.#model?.modelId, this.#settings);
    const rules = standingRules(input.messages);
    const warnings: string[] = [];
    if (input.notes) {
      const fast = await this.#fromNotes(input, window, rules, warnings);
      if (fast) return fast;
    }
    if (!this.#model) {
      throw new EngramError(
        'MODEL_NOT_CONFIGURED',
        `Compaction needs the session notes or a model: ${warnings.length > 0 ? warnings.join(' ').replace(/; summarizing instead\./g, '.') : 'the session notes are still empty'}, and no model is configured. Configure a model (ANTHROPIC_API_KEY, or OPENAI_API_KEY with OPENAI_BASE_URL) or continue until the session notes have content. Nothing was changed.`,
        { details: { warnings } },
      );
    }
    return this.#summarize(input, this.#model, window, rules, warnings);
  }

  /** The fast path: the notes are the summary; messages after the last one they cover are kept. Undefined when the notes cannot serve. */
  async #fromNotes(
    input: CompactionInput,
    window: number,
    rules: string[],
    warnings: string[],
  ): Promise<CompactionResult | undefined> {
    const notes = input.notes!;
    let text: string;
    try {
      // A running update may be the one that gives the notes content: wait for it before looking.
      await notes.waitForIdle();
      if (!(await notes.hasContent())) return undefined;
      text = (await notes.read()).trim();
    } catch (error) {
      warnings.push(`The session notes could not be read (${describe(error)}); summarizing instead.`);
      return undefined;
    }
    if (text === '') return undefined;
    const lastUuid = notes.lastSummarizedUuid;
    const anchored = lastUuid !== undefined && input.messages.some((message) => message.uuid === lastUuid);
    if (!anchored && this.#model) {
      warnings.push(
        'The session notes do not say which messages they cover (for example after a resume); summarizing instead.',
      );
      return undefined;
    }
    const summary = withStandingRules(text, rules);
    const threshold = autoCompactThreshold(window, this.#settings);
    const headTokens = estimateTextTokens(
      compactionHead(input, summary, 'notes', [], this.#settings).texts.join('\n\n'),
    );
    // Room under the threshold once the prefix, the summary and re-injection are in, less a buffer so the next turns fit.
    const room = threshold - estimatePrefixTokens(input.prefix) - headTokens - this.#settings.compaction.bufferTokens;
    if (room < 0) {
      warnings.push(
        `The session notes (about ${estimateTextTokens(summary)} tokens) are too large to serve as the summary; summarizing instead.`,
      );
      return undefined;
    }
    const tail = keptTail(input.messages, {
      lastSummarizedUuid: lastUuid,
      softMaxTokens: this.#settings.compaction.keepRecentMaxTokens,
      hardMaxTokens: room,
      measure: (message) => estimateMessageTokens(message, this.#settings),
    });
    if (tail.droppedUncovered > 0)
      warnings.push(`${tail.droppedUncovered} recent messages the notes do not cover were too large to keep.`);
    const kept = input.messages.slice(tail.start).map(copyMessage);
    const lastSummarized = tail.start > 0 ? input.messages[tail.start - 1]!.uuid : lastUuid;
    const result = compactionResult(
      input,
      {
        summary,
        head: compactionHead(input, summary, 'notes', kept, this.#settings),
        kept,
        method: 'notes',
        lastSummarizedUuid: lastSummarized,
        modelCalls: 0,
        droppedGroups: 0,
        warnings,
      },
      this.#resultContext,
    );
    const before = estimateMessagesTokens(input.messages, this.#settings);
    if (result.postTokens < before) return result;
    const grows = `The session notes with what they keep (about ${result.postTokens} tokens) would not make the context smaller than it is (about ${before} tokens)`;
    if (!this.#model) throw notSmaller(grows, 0, 0);
    warnings.push(`${grows}; summarizing instead.`);
    return undefined;
  }

  /** The summary path: pre-compact hooks, then a forked summarizer, retried with fewer groups while the request is too long. */
  async #summarize(
    input: CompactionInput,
    model: LanguageModel,
    window: number,
    rules: string[],
    warnings: string[],
  ): Promise<CompactionResult> {
    const { compaction } = this.#settings;
    const hookInstructions: string[] = [];
    for (const hook of this.#hooks) {
      try {
        const text = await hook({ trigger: input.trigger, messages: input.messages.map(copyMessage) });
        if (typeof text === 'string' && text.trim() !== '') hookInstructions.push(text);
      } catch (error) {
        warnings.push(`A pre-compact hook failed (${describe(error)}); compacting without it.`);
      }
    }
    if (input.signal?.aborted) throw aborted();
    const instruction = summaryInstruction({
      customInstructions: input.customInstructions,
      hookInstructions,
      standingRules: rules,
    });
    const stripped = stripBulkyContent(input.messages, { toolResultMaxChars: compaction.toolResultMaxChars });
    const unchanged = JSON.stringify(stripped.map(wireMessage)) === JSON.stringify(input.messages.map(wireMessage));
    // Leave room for the answer; groups that cannot fit are dropped before the first call, not after a refusal.
    const fixed = estimateTextTokens(instruction) + estimatePrefixTokens(input.prefix);
    const room = window - compaction.summaryMaxOutputTokens - fixed;
    let messages: SessionMessage[] = stripped;
    let droppedGroups = 0;
    while (estimateMessagesTokens(messages, this.#settings) > room && droppableGroupCount(messages) > 0) {
      messages = dropOldestGroups(messages, 1);
      droppedGroups += 1;
    }
    let modelCalls = 0;
    // Sections the previous answer lacked: asked for once more, naming them, then refused.
    let missingBefore: string[] | undefined;
    for (let tooLongRetries = 0; ;) {
      const sameAsParent = droppedGroups === 0 && unchanged && input.prefix.messages.length === input.messages.length;
      const prefix: ForkPrefix = {
        system: input.prefix.system,
        tools: input.prefix.tools,
        messages: sameAsParent ? input.prefix.messages : summarizerMessages(messages, droppedGroups > 0),
      };
      let answer: Awaited<ReturnType<typeof runForkedHelper>>;
      try {
        modelCalls += 1;
        answer = await runForkedHelper({
          model,
          prefix,
          instruction: missingBefore ? summaryRetryInstruction(instruction, missingBefore) : instruction,
          maxOutputTokens: compaction.summaryMaxOutputTokens,
          maxTurns: 1,
          ...(input.signal && { parentSignal: input.signal }),
        });
      } catch (error) {
        const droppable = droppableGroupCount(messages);
        if (isPromptTooLong(error) && tooLongRetries < compaction.maxRetries && droppable > 0) {
          tooLongRetries += 1;
          const count = groupsToDrop(messages, error as EngramError, this.#settings);
          messages = dropOldestGroups(messages, count);
          droppedGroups += Math.min(count, droppable);
          continue;
        }
        throw failed(
          error,
          modelCalls,
          droppedGroups,
          isPromptTooLong(error)
            ? ` even after dropping the ${droppedGroups} oldest message groups (compaction.maxRetries: ${compaction.maxRetries})`
            : '',
        );
      }
      if (answer.aborted) throw aborted();
      const summary = stripAnalysis(answer.text);
      if (summary === '') {
        throw new EngramError(
          'COMPACTION_FAILED',
          `The summarizer answered ${answer.text.trim() === '' ? 'no text' : 'no summary (only an <analysis> block)'}; nothing was changed. Try again, or compact by hand with instructions.`,
          {
            details: { modelCalls, droppedGroups, stoppedBy: answer.stoppedBy },
          },
        );
      }
      const missing = missingSummarySections(summary);
      if (missing.length > 0) {
        if (missingBefore === undefined) {
          missingBefore = missing;
          continue;
        }
        throw new EngramError(
          'COMPACTION_FAILED',
          `The summarizer's summary lacks ${missing.length} of the nine parts (${missing.join(', ')}), twice; nothing was changed, the session goes on uncompacted. Try again, or compact by hand with instructions.`,
          { details: { modelCalls, droppedGroups, missingSections: missing } },
        );
      }
      const full = withStandingRules(summary, rules);
      const last = input.messages.at(-1)!.uuid;
      const result = compactionResult(
        input,
        {
          summary: full,
          head: compactionHead(input, full, 'summary', [], this.#settings),
          kept: [],
          method: 'summary',
          lastSummarizedUuid: last,
          modelCalls,
          droppedGroups,
          warnings,
        },
        this.#resultContext,
      );
      const before = estimateMessagesTokens(input.messages, this.#settings);
      if (result.postTokens >= before) {
        throw notSmaller(
          `The summary with what is re-injected after it (about ${result.postTokens} tokens) would not make the context smaller than it is (about ${before} tokens)`,
          modelCalls,
          droppedGroups,
        );
      }
      return result;
    }
  }
}

/** The summarizer's messages: a note when older groups were left out (and so the list starts with a user message). */
function summarizerMessages(messages: readonly SessionMessage[], dropped: boolean): LanguageModelMessage[] {
  const list: LanguageModelMessage[] = messages.map(wireMessage);
  if (dropped || list[0]?.role !== 'user')
    list.unshift({
      role: 'user',
      content: '[The oldest part of this conversation was left out so the summary request fits the context window.]',
    });
  return list;
}
