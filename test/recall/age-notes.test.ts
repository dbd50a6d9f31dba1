import { describe, expect, it } from 'vitest';
import { ageNote, formatAgeNote } from '../../src/recall/age-notes.js';
import {
  estimateJsonTokens,
  estimateTextTokens,
  tokensForBytes,
  utf8ByteLength,
} from '../../src/kernel/token-estimate.js';
import { ageLegend, memoryState } from '../../src/surfaces/cli/memory-view.js';
import type { Memory } from '../../src/memory/memory.js';

const NOW = '2026-07-01T00:00:00.000Z';
const daysAgo = (days: number): string => new Date(Date.parse(NOW) - days * 86_400_000).toISOString();

describe('ageNote', () => {
  it('is silent up to 2 days, gives the age and "may be out of date" past 2, and marks stale past 30', () => {
    expect(ageNote({ updatedAt: daysAgo(0) }, NOW)).toEqual({ state: 'fresh', days: 0 });
    expect(ageNote({ updatedAt: daysAgo(2) }, NOW)).toEqual({ state: 'fresh', days: 2 });
    expect(ageNote({ updatedAt: daysAgo(2.01) }, NOW)).toEqual({
      state: 'aging',
      days: 2,
      age: '2 days old',
      note: 'may be out of date',
    });
    expect(formatAgeNote(ageNote({ updatedAt: daysAgo(12) }, NOW))).toBe('12 days old, may be out of date');
    expect(ageNote({ updatedAt: daysAgo(30) }, NOW).state).toBe('aging');
    const stale = ageNote({ updatedAt: daysAgo(31) }, NOW);
    expect(stale).toMatchObject({ state: 'stale', days: 31, age: '31 days old' });
    expect(formatAgeNote(stale)).toBe('31 days old, stale: may be out of date, verify before relying on it');
    expect(formatAgeNote(ageNote({ updatedAt: daysAgo(1) }, NOW))).toBe('');
  });

  it('follows the configured thresholds and treats a future date as new', () => {
    expect(ageNote({ updatedAt: daysAgo(1.5) }, NOW, { ageNoteDays: 1 })).toMatchObject({
      state: 'aging',
      age: '1 day old',
    });
    expect(ageNote({ updatedAt: daysAgo(8) }, NOW, { ageNoteDays: 2, staleDays: 7 }).state).toBe('stale');
    expect(ageNote({ updatedAt: daysAgo(-5) }, NOW)).toEqual({ state: 'fresh', days: 0 });
  });

  it('drives the CLI state column and its legend', () => {
    const memory = (updatedAt: string, extra: Partial<Memory> = {}) =>
      ({ updatedAt, invalidAt: null, archived: false, ...extra }) as Memory;
    const now = Date.parse(NOW);
    const ages = { ageNoteDays: 2, staleDays: 30 };
    expect(memoryState(memory(daysAgo(1)), ages, now)).toBe('active');
    expect(memoryState(memory(daysAgo(5)), ages, now)).toBe('aging');
    expect(memoryState(memory(daysAgo(45)), ages, now)).toBe('stale');
    expect(memoryState(memory(daysAgo(45), { archived: true }), ages, now)).toBe('archived');
    expect(ageLegend([memory(daysAgo(1))], ages, now)).toBe('');
    expect(ageLegend([memory(daysAgo(5)), memory(daysAgo(45))], ages, now)).toBe(
      'aging: not updated for over 2 days, may be out of date; stale: not updated for over 30 days, verify before relying on it',
    );
  });
});

describe('token estimate', () => {
  it('counts about 4 UTF-8 bytes per text token and 2 per JSON token, rounding up', () => {
    expect(estimateTextTokens('')).toBe(0);
    expect(estimateTextTokens('abcd')).toBe(1);
    expect(estimateTextTokens('abcde')).toBe(2);
    expect(estimateTextTokens('🙂')).toBe(1);
    expect(estimateTextTokens('é'.repeat(4))).toBe(2);
    expect(estimateJsonTokens('{"a":1}')).toBe(4);
    expect(estimateTextTokens('x'.repeat(12), { bytesPerToken: 3 })).toBe(4);
    expect(() => tokensForBytes(10, 0)).toThrow(RangeError);
  });

  it('measures UTF-8 exactly as an encoder does, lone surrogates included', () => {
    for (const text of [
      '',
      'plain',
      'é漢字🙂👩‍👩‍👧',
      '\u0000\u007f\u0080\u07ff\u0800\uffff',
      '\uD800',
      'a\uDC00b',
      '\uD83D\uDE42\uD83D',
    ]) {
      expect(utf8ByteLength(text)).toBe(Buffer.byteLength(text, 'utf8'));
    }
  });
});
