import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/node/load-settings.js';
import {
  contextTokenCount,
  contextTokensFromUsage,
  contextUsage,
  contextWindowFor,
  estimateMessageTokens,
  estimateMessagesTokens,
  parseModelContextWindows,
  warningLevel,
} from '../../src/session/context-budget.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { LanguageModelUsage } from '../../src/contracts/language-model.js';
import { totalInputTokens } from '../../src/contracts/language-model-content.js';
import { expectEngramErrorSync } from '../support/expect-engram-error.js';

function withSession(session: Partial<Settings['session']>): Settings {
  return { ...DEFAULT_SETTINGS, session: { ...DEFAULT_SETTINGS.session, ...session } };
}

describe('estimateMessageTokens', () => {
  it('counts text at 4 bytes a token and JSON at 2, plus framing', () => {
    const text = 'abcd'.repeat(100); // 400 bytes
    const plain = estimateMessageTokens({ content: text });
    expect(plain - estimateMessageTokens({ content: '' })).toBe(100);

    const input = { path: 'src/index.ts', lines: [1, 2, 3] };
    const json = JSON.stringify(input);
    const withToolUse = estimateMessageTokens({ content: [{ type: 'tool_use', id: 'toolu_1', name: 'read', input }] });
    const withEmptyInput = estimateMessageTokens({
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'read', input: {} }],
    });
    expect(withToolUse - withEmptyInput).toBe(Math.ceil(json.length / 2) - Math.ceil(2 / 2));

    // A tool result holding a JSON document is counted as JSON, prose as text.
    const jsonResult = JSON.stringify({ rows: Array.from({ length: 50 }, (_, index) => ({ index })) });
    const asJson = estimateMessageTokens({ content: [{ type: 'tool_result', toolUseId: 't', content: jsonResult }] });
    const asText = estimateMessageTokens({
      content: [{ type: 'tool_result', toolUseId: 't', content: `x${jsonResult}` }],
    });
    expect(asJson).toBeGreaterThan(asText);
  });

  it('counts UTF-8 bytes, not characters, and follows the tokens settings', () => {
    const accented = 'é'.repeat(400); // 800 bytes
    expect(estimateMessageTokens({ content: accented }) - estimateMessageTokens({ content: '' })).toBe(200);
    const denser = { ...DEFAULT_SETTINGS, tokens: { bytesPerTextToken: 2, bytesPerJsonToken: 1 } };
    expect(estimateMessageTokens({ content: accented }, denser) - estimateMessageTokens({ content: '' }, denser)).toBe(
      400,
    );
  });

  it('sums several messages and counts a block type it does not know by its JSON', () => {
    const messages = [{ content: 'hello there' }, { content: [{ type: 'text' as const, text: 'answer' }] }];
    expect(estimateMessagesTokens(messages)).toBe(
      estimateMessageTokens(messages[0]!) + estimateMessageTokens(messages[1]!),
    );
    const unknown = { content: [{ type: 'image', source: 'x'.repeat(100) }] } as never;
    expect(estimateMessageTokens(unknown)).toBeGreaterThan(50);
  });

  it('refuses a message without content', () => {
    expectEngramErrorSync(() => estimateMessageTokens({} as never), 'INVALID_INPUT');
    expectEngramErrorSync(() => estimateMessageTokens({ content: 42 } as never), 'INVALID_INPUT');
    expectEngramErrorSync(() => estimateMessageTokens(null as never), 'INVALID_INPUT');
  });
});

describe('reported versus estimated tokens', () => {
  const usage: LanguageModelUsage = {
    inputTokens: 1_200,
    outputTokens: 500,
    cacheReadTokens: 150_000,
    cacheWriteTokens: 3_000,
  };

  it('counts every input token of the request (uncached + cache read + cache write) plus the answer', () => {
    expect(totalInputTokens(usage)).toBe(154_200);
    expect(contextTokensFromUsage(usage)).toBe(totalInputTokens(usage) + 500);
    expect(contextTokensFromUsage({ inputTokens: 10, outputTokens: 5 })).toBe(15);
  });

  it('takes the latest reported usage and estimates only the messages after it', () => {
    const big = 'word '.repeat(4_000); // 20,000 bytes: ~5,000 tokens estimated
    const after = { role: 'user', content: 'and now this, please' };
    const messages = [
      { role: 'user', content: big },
      { role: 'assistant', content: 'first', usage: { inputTokens: 9, outputTokens: 1 } },
      { role: 'user', content: big },
      { role: 'assistant', content: 'second', usage },
      after,
    ];
    const count = contextTokenCount(messages);
    expect(count.reportedInputTokens).toBe(154_700);
    expect(count.estimatedSinceReport).toBe(estimateMessageTokens(after));
    // The estimate of the whole list is far below what the provider counted (system prompt, tools, cache): reported wins.
    expect(estimateMessagesTokens(messages)).toBeLessThan(20_000);
    const used = contextUsage({ ...count, window: 200_000 }, DEFAULT_SETTINGS);
    expect(used.tokens).toBe(154_700 + estimateMessageTokens(after));
    expect(used.level).toBe(1); // 77% of the window
  });

  it('ignores usage recorded before usageValidFrom (messages a compaction removed) and estimates instead', () => {
    const messages = [
      { role: 'user', content: 'summary of earlier work' },
      { role: 'assistant', content: 'kept', usage },
      { role: 'user', content: 'next' },
    ];
    const stale = contextTokenCount(messages, DEFAULT_SETTINGS, { usageValidFrom: 2 });
    expect(stale.reportedInputTokens).toBeUndefined();
    expect(stale.estimatedSinceReport).toBe(estimateMessagesTokens(messages));
    expect(contextTokenCount([]).estimatedSinceReport).toBe(0);
  });

  it('refuses malformed usage', () => {
    expectEngramErrorSync(() => contextTokensFromUsage({ inputTokens: -1, outputTokens: 0 }), 'INVALID_INPUT');
    expectEngramErrorSync(() => contextTokensFromUsage({ inputTokens: Number.NaN, outputTokens: 0 }), 'INVALID_INPUT');
    expectEngramErrorSync(
      () => contextTokensFromUsage({ inputTokens: 1, outputTokens: 1, cacheReadTokens: Number.POSITIVE_INFINITY }),
      'INVALID_INPUT',
    );
    expectEngramErrorSync(() => contextTokensFromUsage(undefined as never), 'INVALID_INPUT');
  });
});

describe('warning levels', () => {
  const cases: Array<[number, Array<[number, 0 | 1 | 2 | 3]>]> = [
    [
      200_000,
      [
        [0, 0],
        [139_999, 0],
        [140_000, 1],
        [169_999, 1],
        [170_000, 2],
        [183_999, 2],
        [184_000, 3],
        [199_999, 3],
        [260_000, 3],
      ],
    ],
    [
      1_000_000,
      [
        [699_999, 0],
        [700_000, 1],
        [849_999, 1],
        [850_000, 2],
        [919_999, 2],
        [920_000, 3],
      ],
    ],
    [
      128_000,
      [
        [89_599, 0],
        [89_600, 1],
        [108_799, 1],
        [108_800, 2],
        [117_759, 2],
        [117_760, 3],
      ],
    ],
  ];
  for (const [window, steps] of cases) {
    it(`steps exactly at 70%, 85% and 92% of a ${window}-token window`, () => {
      for (const [tokens, level] of steps)
        expect([tokens, warningLevel(tokens, window, DEFAULT_SETTINGS)]).toEqual([tokens, level]);
    });
  }

  it('follows session.warnRatios, in any order, and never passes level 3', () => {
    const unsorted = withSession({ warnRatios: [0.9, 0.5] });
    expect(warningLevel(49, 100, unsorted)).toBe(0);
    expect(warningLevel(50, 100, unsorted)).toBe(1);
    expect(warningLevel(90, 100, unsorted)).toBe(2);
    const many = withSession({ warnRatios: [0.1, 0.2, 0.3, 0.4] });
    expect(warningLevel(100, 100, many)).toBe(3);
  });

  it('refuses a window or token count that is not a count', () => {
    for (const window of [0, -5, Number.NaN, Number.POSITIVE_INFINITY])
      expectEngramErrorSync(() => warningLevel(10, window, DEFAULT_SETTINGS), 'INVALID_INPUT');
    for (const tokens of [-1, Number.NaN])
      expectEngramErrorSync(() => warningLevel(tokens, 100, DEFAULT_SETTINGS), 'INVALID_INPUT');
  });
});

describe('contextUsage', () => {
  it('adds the reported tokens and the estimate, and leaves the output reserve out of the effective window', () => {
    const used = contextUsage(
      { reportedInputTokens: 100_000, estimatedSinceReport: 40_000, window: 200_000 },
      DEFAULT_SETTINGS,
    );
    expect(used).toEqual({ tokens: 140_000, window: 200_000, effectiveWindow: 180_000, ratio: 0.7, level: 1 });
    const estimateOnly = contextUsage({ estimatedSinceReport: 5_000, window: 200_000 }, DEFAULT_SETTINGS);
    expect(estimateOnly).toMatchObject({ tokens: 5_000, level: 0, ratio: 0.025 });
  });

  it('refuses negative or missing numbers', () => {
    expectEngramErrorSync(
      () => contextUsage({ reportedInputTokens: -1, estimatedSinceReport: 0, window: 200_000 }, DEFAULT_SETTINGS),
      'INVALID_INPUT',
    );
    expectEngramErrorSync(
      () => contextUsage({ estimatedSinceReport: Number.NaN, window: 200_000 }, DEFAULT_SETTINGS),
      'INVALID_INPUT',
    );
    expectEngramErrorSync(() => contextUsage({ estimatedSinceReport: 1 } as never, DEFAULT_SETTINGS), 'INVALID_INPUT');
  });
});

describe('contextWindowFor', () => {
  const settings = withSession({
    modelContextWindows: 'claude-sonnet-4-5=1m, claude-*=200k; claude-haiku*=150_000\ngpt-4o*=128k,gpt-4o-mini=64000',
  });

  it('uses session.contextWindow when no entry names the model', () => {
    expect(contextWindowFor(undefined, DEFAULT_SETTINGS)).toBe(200_000);
    expect(contextWindowFor('any-model', DEFAULT_SETTINGS)).toBe(200_000);
    expect(contextWindowFor('llama3', withSession({ contextWindow: 32_768 }))).toBe(32_768);
    expect(contextWindowFor('mistral-large', settings)).toBe(200_000);
  });

  it('prefers the exact entry, then the longest matching prefix', () => {
    expect(contextWindowFor('claude-sonnet-4-5', settings)).toBe(1_000_000);
    expect(contextWindowFor('claude-sonnet-4-5-20250929', settings)).toBe(200_000);
    expect(contextWindowFor('claude-haiku-4-5', settings)).toBe(150_000);
    expect(contextWindowFor('gpt-4o-mini', settings)).toBe(64_000);
    expect(contextWindowFor('gpt-4o-2024-08-06', settings)).toBe(128_000);
  });

  it('parses the entries it documents', () => {
    expect(parseModelContextWindows(' a=1k , b*=2M ')).toEqual([
      { pattern: 'a', prefix: false, tokens: 1_000 },
      { pattern: 'b', prefix: true, tokens: 2_000_000 },
    ]);
    expect(parseModelContextWindows('')).toEqual([]);
  });

  it('refuses malformed entries and windows no larger than the output reserve, saying what to fix', () => {
    for (const text of ['claude', 'x=abc', '=5', 'x=0', 'a*b=5', 'x=1.5m', 'x = -3', 'x=99999999999999999999']) {
      const error = expectEngramErrorSync(
        () => contextWindowFor('x', withSession({ modelContextWindows: text })),
        'CONFIG_INVALID',
      );
      expect(error.message).toContain('session.modelContextWindows');
    }
    const tooSmall = expectEngramErrorSync(
      () => contextWindowFor('tiny', withSession({ modelContextWindows: 'tiny=8k' })),
      'CONFIG_INVALID',
    );
    expect(tooSmall.message).toContain('session.outputReserve');
    expect(contextWindowFor('tiny', withSession({ modelContextWindows: 'tiny=8k', outputReserve: 2_000 }))).toBe(8_000);
  });
});

describe('the settings loader holds the per-model windows', () => {
  let directory: string | undefined;
  afterEach(async () => {
    if (directory) await rm(directory, { recursive: true, force: true });
    directory = undefined;
  });

  it('reads session.modelContextWindows from a config file and from ENGRAM_MODEL_CONTEXT_WINDOWS', async () => {
    directory = await mkdtemp(join(tmpdir(), 'engram-budget-'));
    await writeFile(
      join(directory, 'config.json'),
      JSON.stringify({ session: { modelContextWindows: 'big-model=1m' } }),
    );
    const fromFile = loadSettings({ cwd: directory, env: { ENGRAM_HOME: directory } }).settings;
    expect(contextWindowFor('big-model', fromFile)).toBe(1_000_000);
    const fromEnv = loadSettings({
      cwd: directory,
      env: { ENGRAM_HOME: directory, ENGRAM_MODEL_CONTEXT_WINDOWS: 'big-model=400k' },
    }).settings;
    expect(contextWindowFor('big-model', fromEnv)).toBe(400_000);
  });
});
