import {
  contextTokenCount,
  contextUsage,
  estimateMessageTokens,
  estimatePrefixTokens,
  type ContextUsage,
} from './context-budget.js';
import type { Settings } from '../kernel/settings.js';
import type { SystemBlock, ToolDefinition } from '../contracts/language-model.js';
import type { SessionMessage } from '../contracts/session-message.js';

/**
 * A session's token accounting (SPEC §2): the usage the provider reported for the latest request
 * plus an estimate of the messages after it (`contextTokenCount` of context-budget.ts, the one implementation),
 * the fixed prefix (system + tools) estimated while there is no report, and the warning level
 * already announced. Estimates are cached per message: messages are frozen, so they never change.
 */
export class SessionAccounting {
  readonly window: number;
  /** Estimated tokens of system + tools (what every request starts with). */
  readonly prefixTokens: number;
  readonly #settings: Settings;
  readonly #estimates = new WeakMap<SessionMessage, number>();
  /** Reports recorded before this index counted messages that a (micro)compaction or resume replaced. */
  #usageValidFrom = 0;
  #warnedLevel = 0;

  constructor(options: {
    settings: Settings;
    window: number;
    prefix: { system: readonly SystemBlock[]; tools: readonly ToolDefinition[] };
  }) {
    this.#settings = options.settings;
    this.window = options.window;
    this.prefixTokens = estimatePrefixTokens(options.prefix);
  }

  /** Estimated tokens of one message (cached). */
  estimate(message: SessionMessage): number {
    let tokens = this.#estimates.get(message);
    if (tokens === undefined) this.#estimates.set(message, (tokens = estimateMessageTokens(message, this.#settings)));
    return tokens;
  }

  /** The next request's input: the latest valid report (input, cache, output) plus the estimate since; prefix + every message when there is none. */
  tokens(messages: readonly SessionMessage[]): number {
    const count = contextTokenCount(messages, this.#settings, {
      usageValidFrom: this.#usageValidFrom,
      measure: (message) => this.estimate(message),
    });
    return count.reportedInputTokens === undefined
      ? this.prefixTokens + count.estimatedSinceReport
      : count.reportedInputTokens + count.estimatedSinceReport;
  }

  /** Where the context stands against the window. */
  usage(messages: readonly SessionMessage[]): ContextUsage {
    return contextUsage(
      { reportedInputTokens: this.tokens(messages), estimatedSinceReport: 0, window: this.window },
      this.#settings,
    );
  }

  /**
   * The messages were replaced (compaction, microcompaction) or read back (resume): reports recorded
   * in the first `messageCount` counted a context that is gone. `resetWarnings` after a compaction.
   */
  forgetReports(messageCount: number, options: { resetWarnings?: boolean } = {}): void {
    this.#usageValidFrom = messageCount;
    if (options.resetWarnings) this.#warnedLevel = 0;
  }

  /** The warning level `tokens` reaches when it is higher than any announced since the last compaction (else undefined). */
  newWarning(tokens: number): { level: 1 | 2 | 3; usage: ContextUsage } | undefined {
    const usage = contextUsage(
      { reportedInputTokens: tokens, estimatedSinceReport: 0, window: this.window },
      this.#settings,
    );
    if (usage.level <= this.#warnedLevel) return undefined;
    this.#warnedLevel = usage.level;
    return { level: usage.level as 1 | 2 | 3, usage };
  }
}
