import { describe, expect, it } from 'vitest';
import { EngramError } from '../../../src/kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { shouldUpdateSessionNotes, type NotesTriggerState } from '../../../src/session/notes/session-notes-trigger.js';

// SPEC §2 layer 3: context above the init threshold AND growth since the last update ≥ min growth (always)
// AND (tool calls since the last update ≥ min OR the last assistant turn made no tool call).
const settings = { notes: DEFAULT_SETTINGS.notes }; // 40K init, 5K growth, 3 tool calls
const state = (overrides: Partial<NotesTriggerState>): NotesTriggerState => ({
  contextTokens: 50_000,
  toolCallsSinceLastUpdate: 0,
  lastAssistantTurnHadToolCall: true,
  ...overrides,
});

describe('the session notes trigger', () => {
  it('waits until the context is above the initial threshold: 40,000 no, 40,001 yes', () => {
    expect(
      shouldUpdateSessionNotes(state({ contextTokens: 40_000, lastAssistantTurnHadToolCall: false }), settings),
    ).toEqual({ update: false, reason: 'below-init-threshold' });
    expect(
      shouldUpdateSessionNotes(state({ contextTokens: 40_001, lastAssistantTurnHadToolCall: false }), settings),
    ).toEqual({ update: true, reason: 'natural-break' });
    // At or below the threshold even many tool calls do nothing.
    expect(
      shouldUpdateSessionNotes(state({ contextTokens: 40_000, toolCallsSinceLastUpdate: 50 }), settings).update,
    ).toBe(false);
  });

  it('requires growth since the last update: just below no, at the threshold yes', () => {
    const base = { tokensAtLastUpdate: 45_000, lastAssistantTurnHadToolCall: false };
    expect(shouldUpdateSessionNotes(state({ ...base, contextTokens: 49_999 }), settings)).toEqual({
      update: false,
      reason: 'not-enough-growth',
    });
    expect(shouldUpdateSessionNotes(state({ ...base, contextTokens: 50_000 }), settings)).toEqual({
      update: true,
      reason: 'natural-break',
    });
  });

  it('always requires growth, even with many tool calls and a natural break', () => {
    expect(
      shouldUpdateSessionNotes(
        state({
          contextTokens: 60_000,
          tokensAtLastUpdate: 58_000,
          toolCallsSinceLastUpdate: 40,
          lastAssistantTurnHadToolCall: false,
        }),
        settings,
      ),
    ).toEqual({
      update: false,
      reason: 'not-enough-growth',
    });
    // Shrunk context (after a compaction) is no growth.
    expect(
      shouldUpdateSessionNotes(
        state({ contextTokens: 45_000, tokensAtLastUpdate: 90_000, toolCallsSinceLastUpdate: 10 }),
        settings,
      ).update,
    ).toBe(false);
  });

  it('with growth, mid tool work: 2 tool calls no, 3 yes', () => {
    expect(shouldUpdateSessionNotes(state({ toolCallsSinceLastUpdate: 2 }), settings)).toEqual({
      update: false,
      reason: 'mid-tool-work',
    });
    expect(shouldUpdateSessionNotes(state({ toolCallsSinceLastUpdate: 3 }), settings)).toEqual({
      update: true,
      reason: 'tool-calls',
    });
  });

  it('with growth, a natural break (no tool call in the last turn) fires with fewer tool calls', () => {
    expect(
      shouldUpdateSessionNotes(state({ toolCallsSinceLastUpdate: 0, lastAssistantTurnHadToolCall: false }), settings),
    ).toEqual({ update: true, reason: 'natural-break' });
    expect(
      shouldUpdateSessionNotes(state({ toolCallsSinceLastUpdate: 2, lastAssistantTurnHadToolCall: false }), settings)
        .update,
    ).toBe(true);
  });

  it('counts growth from zero before the first update', () => {
    const custom = { notes: { ...DEFAULT_SETTINGS.notes, initThresholdTokens: 1_000, minGrowthTokens: 8_000 } };
    expect(
      shouldUpdateSessionNotes(state({ contextTokens: 7_999, lastAssistantTurnHadToolCall: false }), custom).reason,
    ).toBe('not-enough-growth');
    expect(
      shouldUpdateSessionNotes(state({ contextTokens: 8_000, lastAssistantTurnHadToolCall: false }), custom).update,
    ).toBe(true);
  });

  it.each([
    ['a null state', null],
    ['NaN tokens', { contextTokens: Number.NaN, toolCallsSinceLastUpdate: 0, lastAssistantTurnHadToolCall: false }],
    ['negative tool calls', { contextTokens: 1, toolCallsSinceLastUpdate: -1, lastAssistantTurnHadToolCall: false }],
    [
      'a string baseline',
      { contextTokens: 1, tokensAtLastUpdate: '5', toolCallsSinceLastUpdate: 0, lastAssistantTurnHadToolCall: false },
    ],
    ['infinite tokens', { contextTokens: Infinity, toolCallsSinceLastUpdate: 0, lastAssistantTurnHadToolCall: false }],
    ['a missing flag', { contextTokens: 1, toolCallsSinceLastUpdate: 0 }],
  ])('refuses %s with INVALID_INPUT', (_, bad) => {
    expect(() => shouldUpdateSessionNotes(bad as NotesTriggerState, settings)).toThrowError(EngramError);
    expect(() => shouldUpdateSessionNotes(bad as NotesTriggerState, settings)).toThrowError(/notes trigger/);
  });
});
