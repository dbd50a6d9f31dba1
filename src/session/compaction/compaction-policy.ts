import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';

/**
 * When layer 4 compaction fires (SPEC §2): once the estimated context passes the effective window
 * (window − output reserve) minus a buffer, or a share of the whole window, whichever comes first;
 * and never again after too many failures in a row (the circuit breaker), until one succeeds.
 */

/** The state the breaker reads: how many compactions failed one after another. */
export interface CompactionBreakerState {
  failuresInARow: number;
}

/**
 * Tokens of context at which automatic compaction fires: the lower of (window − output reserve −
 * buffer) and floor(thresholdRatio × window). Never below 1, so a tiny window still compacts.
 * @example
 * autoCompactThreshold(200_000, DEFAULT_SETTINGS) // min(200K − 20K − 13K, 184K) = 167_000
 */
export function autoCompactThreshold(window: number, settings: Pick<Settings, 'session' | 'compaction'>): number {
  if (typeof window !== 'number' || !Number.isFinite(window) || window <= 0) {
    throw new EngramError(
      'INVALID_INPUT',
      `A context window is a positive number of tokens, got ${String(window)}; check session.contextWindow / session.modelContextWindows.`,
    );
  }
  const effective = window - settings.session.outputReserve - settings.compaction.bufferTokens;
  const byRatio = Math.floor(settings.compaction.thresholdRatio * window);
  return Math.max(1, Math.min(effective, byRatio));
}

/** True once the breaker has seen `circuitBreakerFailures` failed compactions in a row. */
export function compactionTripped(state: CompactionBreakerState, settings: Pick<Settings, 'compaction'>): boolean {
  return state.failuresInARow >= settings.compaction.circuitBreakerFailures;
}

/** Whether automatic compaction should run now: the context is past (above) the threshold and the breaker is not tripped. */
export function shouldAutoCompact(
  tokens: number,
  window: number,
  settings: Pick<Settings, 'session' | 'compaction'>,
  state: CompactionBreakerState,
): boolean {
  if (typeof tokens !== 'number' || !Number.isFinite(tokens) || tokens < 0) return false;
  if (compactionTripped(state, settings)) return false;
  // SPEC: compaction fires when the context "passes" the threshold; at it, the request still goes out.
  return tokens > autoCompactThreshold(window, settings);
}
