import { describe, expect, it } from 'vitest';
import {
  autoCompactThreshold,
  compactionTripped,
  shouldAutoCompact,
} from '../../../src/session/compaction/compaction-policy.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/kernel/settings.js';

function settingsWith(
  compaction: Partial<Settings['compaction']> = {},
  session: Partial<Settings['session']> = {},
): Settings {
  return {
    ...DEFAULT_SETTINGS,
    compaction: { ...DEFAULT_SETTINGS.compaction, ...compaction },
    session: { ...DEFAULT_SETTINGS.session, ...session },
  };
}

describe('compaction threshold (SPEC §2 layer 4)', () => {
  it('is window − reserve − buffer on a 200K window, where that is lower than 92%', () => {
    // 200,000 − 20,000 − 13,000 = 167,000 < floor(0.92 × 200,000) = 184,000
    expect(autoCompactThreshold(200_000, DEFAULT_SETTINGS)).toBe(167_000);
    expect(shouldAutoCompact(167_000, 200_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(false);
    expect(shouldAutoCompact(167_001, 200_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(true);
  });

  it('is 92% of a 1M window, where that is lower than window − reserve − buffer', () => {
    // floor(0.92 × 1,000,000) = 920,000 < 1,000,000 − 33,000 = 967,000
    expect(autoCompactThreshold(1_000_000, DEFAULT_SETTINGS)).toBe(920_000);
    expect(shouldAutoCompact(920_000, 1_000_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(false);
    expect(shouldAutoCompact(920_001, 1_000_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(true);
  });

  it('follows the settings: ratio, buffer and reserve', () => {
    expect(autoCompactThreshold(200_000, settingsWith({ thresholdRatio: 0.5 }))).toBe(100_000);
    expect(autoCompactThreshold(200_000, settingsWith({ bufferTokens: 0 }, { outputReserve: 0 }))).toBe(184_000);
    expect(autoCompactThreshold(128_000, settingsWith({}, { outputReserve: 8_000 }))).toBe(107_000);
    // floor, not round: 0.92 × 1,234,567 = 1,135,801.64
    expect(autoCompactThreshold(1_234_567, DEFAULT_SETTINGS)).toBe(1_135_801);
  });

  it('never falls below one token, even when the reserve and buffer eat the window', () => {
    expect(autoCompactThreshold(30_000, DEFAULT_SETTINGS)).toBe(1);
    expect(shouldAutoCompact(1, 30_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(false);
    expect(shouldAutoCompact(2, 30_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(true);
  });

  it('stops once circuitBreakerFailures compactions failed in a row', () => {
    expect(shouldAutoCompact(199_000, 200_000, DEFAULT_SETTINGS, { failuresInARow: 2 })).toBe(true);
    expect(shouldAutoCompact(199_000, 200_000, DEFAULT_SETTINGS, { failuresInARow: 3 })).toBe(false);
    expect(compactionTripped({ failuresInARow: 2 }, DEFAULT_SETTINGS)).toBe(false);
    expect(compactionTripped({ failuresInARow: 3 }, DEFAULT_SETTINGS)).toBe(true);
    expect(compactionTripped({ failuresInARow: 1 }, settingsWith({ circuitBreakerFailures: 1 }))).toBe(true);
  });

  it('answers hostile numbers without compacting or with a clear error', () => {
    for (const tokens of [Number.NaN, -1, Number.POSITIVE_INFINITY, '200000' as unknown as number]) {
      expect(shouldAutoCompact(tokens, 200_000, DEFAULT_SETTINGS, { failuresInARow: 0 })).toBe(false);
    }
    for (const window of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, undefined as unknown as number]) {
      expect(() => autoCompactThreshold(window, DEFAULT_SETTINGS)).toThrow(EngramError);
      expect(() => shouldAutoCompact(10, window, DEFAULT_SETTINGS, { failuresInARow: 0 })).toThrow(/context window/);
    }
  });
});
