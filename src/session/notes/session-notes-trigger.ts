import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';

/** What the notes trigger looks at, accumulated by the session turn by turn. */
export interface NotesTriggerState {
  /** The context's size now, in tokens. */
  contextTokens: number;
  /** The context's size when the notes were last updated (undefined before the first update). */
  tokensAtLastUpdate?: number;
  /** Tool calls the model made since the last update. */
  toolCallsSinceLastUpdate: number;
  /** Whether the model's latest turn called a tool (false: a natural break). */
  lastAssistantTurnHadToolCall: boolean;
}

/** Why the trigger fired or held back (stable strings, for logs and tests). */
export type NotesTriggerReason =
  'below-init-threshold' | 'not-enough-growth' | 'mid-tool-work' | 'tool-calls' | 'natural-break';

/**
 * SPEC §2 layer 3's update trigger: the context is above the initial threshold, AND it grew by at
 * least `notes.minGrowthTokens` since the last update (always required), AND either enough tool
 * calls happened since then or the model's latest turn made none (a natural break).
 */
export function shouldUpdateSessionNotes(
  state: NotesTriggerState,
  settings: Pick<Settings, 'notes'>,
): { update: boolean; reason: NotesTriggerReason } {
  checkState(state);
  const { initThresholdTokens, minGrowthTokens, minToolCalls } = settings.notes;
  // SPEC: the context must be "above" the initial threshold; at it, no update yet.
  if (state.contextTokens <= initThresholdTokens) return { update: false, reason: 'below-init-threshold' };
  const growth = state.contextTokens - (state.tokensAtLastUpdate ?? 0);
  if (growth < minGrowthTokens) return { update: false, reason: 'not-enough-growth' };
  if (state.toolCallsSinceLastUpdate >= minToolCalls) return { update: true, reason: 'tool-calls' };
  if (!state.lastAssistantTurnHadToolCall) return { update: true, reason: 'natural-break' };
  return { update: false, reason: 'mid-tool-work' };
}

function checkState(state: NotesTriggerState): void {
  if (state === null || typeof state !== 'object')
    throw new EngramError(
      'INVALID_INPUT',
      'The notes trigger takes a state object { contextTokens, toolCallsSinceLastUpdate, lastAssistantTurnHadToolCall }.',
    );
  const count = (value: unknown, field: string, optional = false): void => {
    if (optional && value === undefined) return;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new EngramError(
        'INVALID_INPUT',
        `The notes trigger's ${field} must be a finite number from 0, got ${JSON.stringify(value) ?? String(value)}.`,
      );
    }
  };
  count(state.contextTokens, 'contextTokens');
  count(state.tokensAtLastUpdate, 'tokensAtLastUpdate', true);
  count(state.toolCallsSinceLastUpdate, 'toolCallsSinceLastUpdate');
  if (typeof state.lastAssistantTurnHadToolCall !== 'boolean') {
    throw new EngramError('INVALID_INPUT', "The notes trigger's lastAssistantTurnHadToolCall must be true or false.");
  }
}
