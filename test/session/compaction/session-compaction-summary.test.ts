import { describe, expect, it } from 'vitest';
import { planText, reinjection } from '../../../src/session/compaction/compaction-reinjection.js';
import {
  missingRules,
  STANDING_RULES_HEADING,
  standingRules,
  withStandingRules,
} from '../../../src/session/compaction/compaction-standing-rules.js';
import {
  COMPACT_SUMMARY_OPENING,
  COMPACTION_SUMMARY_PROMPT,
  COMPACTION_SUMMARY_SECTIONS,
  compactSummaryText,
  droppableGroupCount,
  dropOldestGroups,
  messageGroups,
  stripAnalysis,
  stripBulkyContent,
  summaryInstruction,
} from '../../../src/session/compaction/compaction-summary.js';
import { keptTail } from '../../../src/session/compaction/compaction-tail.js';
import { estimateMessageTokens } from '../../../src/session/context-budget.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import type { ContentBlock } from '../../../src/contracts/language-model.js';
import type { SessionMessage } from '../../../src/contracts/session-message.js';
import { numberedMessages, toolPairsIntact } from '../../support/session-support.js';

const message = numberedMessages('m', () => '2025-01-01T00:00:00.000Z');
const user = (text: string, extra: Partial<SessionMessage> = {}): SessionMessage => message('user', text, extra);
const assistant = (text: string): SessionMessage => message('assistant', [{ type: 'text', text }]);
const toolCall = (id: string, name = 'read_file', input: Record<string, unknown> = { path: 'a.ts' }): SessionMessage =>
  message('assistant', [{ type: 'tool_use', id, name, input }]);
const toolResult = (id: string, content: string): SessionMessage =>
  message('user', [{ type: 'tool_result', toolUseId: id, content }]);

describe('the nine-part summary prompt', () => {
  it('names the nine sections in order, allows <analysis>, and asks for user instructions verbatim', () => {
    expect(COMPACTION_SUMMARY_SECTIONS).toHaveLength(9);
    let at = -1;
    for (const section of COMPACTION_SUMMARY_SECTIONS) {
      const found = COMPACTION_SUMMARY_PROMPT.indexOf(`. ${section}`);
      expect(found, section).toBeGreaterThan(at);
      at = found;
    }
    expect(COMPACTION_SUMMARY_PROMPT).toContain('<analysis>');
    expect(COMPACTION_SUMMARY_PROMPT).toMatch(/VERBATIM/);
  });

  it('adds the standing rules, hook text and the user instructions after the prompt', () => {
    const text = summaryInstruction({
      standingRules: ['Always use tabs.'],
      hookInstructions: ['  ', 'Mention the ticket id.'],
      customInstructions: 'Focus on the parser.',
    });
    expect(text.startsWith(COMPACTION_SUMMARY_PROMPT)).toBe(true);
    expect(text).toContain('- Always use tabs.');
    expect(text).toContain('Mention the ticket id.');
    expect(text).toContain('Focus on the parser.');
    expect(summaryInstruction()).toBe(COMPACTION_SUMMARY_PROMPT);
  });
});

describe('stripAnalysis', () => {
  it('removes the analysis and keeps the summary body', () => {
    expect(
      stripAnalysis(
        '<analysis>\nthinking about tabs\n</analysis>\n\n<summary>\n1. Primary Request: fix it\n</summary>',
      ),
    ).toBe('1. Primary Request: fix it');
    expect(stripAnalysis('<ANALYSIS>a</ANALYSIS>plain summary\n\n\n\nmore')).toBe('plain summary\n\nmore');
    expect(stripAnalysis('<analysis>one</analysis><analysis>two</analysis><summary>S</summary>')).toBe('S');
  });

  it('treats an unclosed analysis as thinking up to <summary>, or as nothing usable', () => {
    expect(stripAnalysis('<analysis>cut off thinking <summary>kept</summary>')).toBe('kept');
    expect(stripAnalysis('<analysis>the model ran out of tokens here')).toBe('');
    expect(stripAnalysis('<analysis>only thinking</analysis>')).toBe('');
    expect(stripAnalysis('   ')).toBe('');
    expect(stripAnalysis('<summary>unclosed summary text')).toBe('unclosed summary text');
  });
});

describe('the summary message', () => {
  it('opens with the continuation sentence of FORMATS §2.3 and carries the summary', () => {
    const auto = compactSummaryText('THE SUMMARY', { transcriptPath: '/t/s.jsonl', recentMessagesKept: true });
    expect(auto.startsWith(COMPACT_SUMMARY_OPENING)).toBe(true);
    expect(auto).toMatch(/^This session is being continued from a previous conversation that ran out of context\./);
    expect(auto).toContain('THE SUMMARY');
    expect(auto).toContain('/t/s.jsonl');
    expect(auto).toContain('Recent messages are preserved verbatim');
    expect(auto).toContain('without asking the user any further questions');
    const manual = compactSummaryText('S', { trigger: 'manual', fromNotes: true });
    expect(manual).not.toContain('without asking');
    expect(manual).toContain('session notes');
  });
});

describe('message groups', () => {
  it('starts a group at each user turn and at each new API round, keeping tool pairs together', () => {
    const list = [
      user('fix the bug'),
      toolCall('t1'),
      toolResult('t1', 'file'),
      toolCall('t2'),
      toolResult('t2', 'file 2'),
      assistant('done'),
      user('thanks'),
      assistant('welcome'),
    ];
    const groups = messageGroups(list);
    expect(groups.map((group) => group.map((item) => item.uuid))).toEqual([
      [list[0]!.uuid, list[1]!.uuid, list[2]!.uuid],
      [list[3]!.uuid, list[4]!.uuid],
      [list[5]!.uuid],
      [list[6]!.uuid, list[7]!.uuid],
    ]);
    expect(groups.flat()).toEqual(list);
  });

  it('drops the oldest groups, never the newest or an earlier summary, and never orphans a tool result', () => {
    const summary = user('This session is being continued…', { compactSummary: true, meta: true });
    const list = [
      summary,
      user('one'),
      toolCall('a'),
      toolResult('a', 'x'),
      user('two'),
      toolCall('b'),
      toolResult('b', 'y'),
      user('three'),
    ];
    expect(droppableGroupCount(list)).toBe(2);
    const once = dropOldestGroups(list, 1);
    expect(once.map((item) => item.uuid)).toEqual([summary, ...list.slice(4)].map((item) => item.uuid));
    const all = dropOldestGroups(list, 99);
    expect(all.map((item) => item.uuid)).toEqual([summary.uuid, list.at(-1)!.uuid]);
    for (let count = 0; count < 5; count += 1) expect(toolPairsIntact(dropOldestGroups(list, count))).toBe(true);
    expect(dropOldestGroups(list, 0)).toEqual(list);
    expect(dropOldestGroups(list, -3)).toEqual(list);
    expect(list).toHaveLength(8);
  });
});

describe('stripBulkyContent', () => {
  it('replaces inline images, cuts long tool results to head and tail, and leaves the input alone', () => {
    const image = `data:image/png;base64,${'A'.repeat(5_000)}`;
    const long = `HEAD${'x'.repeat(50_000)}TAIL`;
    const list = [
      user(`look ${image}`),
      toolCall('t1', 'write_file', { path: 'a', content: long }),
      toolResult('t1', long),
      message('user', [{ type: 'image', source: {} } as unknown as ContentBlock]),
    ];
    const before = JSON.stringify(list);
    const stripped = stripBulkyContent(list, { toolResultMaxChars: 1_000 });
    expect(JSON.stringify(list)).toBe(before);
    expect(stripped[0]!.content).toBe('look [image data removed]');
    const result = (stripped[2]!.content as ContentBlock[])[0] as { content: string };
    expect(result.content.length).toBeLessThan(1_100);
    expect(result.content.startsWith('HEAD')).toBe(true);
    expect(result.content.endsWith('TAIL')).toBe(true);
    expect(
      ((stripped[1]!.content as ContentBlock[])[0] as unknown as { input: { content: string } }).input.content.length,
    ).toBeLessThan(1_100);
    expect(stripped[3]!.content).toEqual([{ type: 'text', text: '[image removed for the summary]' }]);
    expect(stripped.map((item) => item.uuid)).toEqual(list.map((item) => item.uuid));
  });
});

describe('standing rules', () => {
  it('finds the rules the user stated, not those in meta messages, code or questions', () => {
    const list = [
      user('Please fix the parser. Always use tabs.'),
      user('From now on, never push to main.'),
      user('Always use tabs!'),
      user('Do you always use tabs?'),
      user('```\nalways rm -rf\n```'),
      user('Always run the migrations first.', { meta: true }),
      assistant('Always use spaces.'),
    ];
    expect(standingRules(list)).toEqual(['Always use tabs.', 'Never push to main.']);
  });

  it('carries the rules through a summary section that the next compaction reads back', () => {
    const rules = ['Always use tabs.', 'Never push to main.'];
    const summary = withStandingRules('1. Primary Request: the parser.', rules);
    expect(summary).toContain(`${STANDING_RULES_HEADING}\n- Always use tabs.\n- Never push to main.`);
    expect(missingRules(summary, rules)).toEqual([]);
    expect(missingRules('the user said: always use TABS', rules)).toEqual(['Never push to main.']);
    const next = standingRules([
      user(compactSummaryText(summary), { compactSummary: true, meta: true }),
      user('I prefer pnpm over npm.'),
    ]);
    expect(next).toEqual(['Always use tabs.', 'Never push to main.', 'The user prefers pnpm over npm.']);
    // Applying it twice keeps one section.
    expect(withStandingRules(summary, rules).split(STANDING_RULES_HEADING)).toHaveLength(2);
    expect(withStandingRules('S', [])).toBe('S');
  });

  it('ignores a pasted message too long to be a statement', () => {
    expect(standingRules([user(`Always use tabs. ${'x'.repeat(200_000)}`)])).toEqual([]);
  });
});

describe('the kept tail of a compaction from notes', () => {
  const measure = (item: SessionMessage): number => estimateMessageTokens(item);
  /** The kept tail of `list` after the message `lastSummarized` (an index, or none), within these caps. */
  const tailAfter = (
    list: SessionMessage[],
    lastSummarized: number | undefined,
    softMaxTokens = 1e6,
    hardMaxTokens = 1e6,
  ) =>
    keptTail(list, {
      lastSummarizedUuid: lastSummarized === undefined ? undefined : list.at(lastSummarized)!.uuid,
      softMaxTokens,
      hardMaxTokens,
      measure,
    });

  it('keeps what follows the last summarized message, moved back onto the tool_use of a split pair', () => {
    const list = [
      user('one'),
      toolCall('a'),
      toolResult('a', 'r'),
      assistant('ok'),
      user('two'),
      toolCall('b'),
      toolResult('b', 'r2'),
    ];
    expect(tailAfter(list, 3)).toEqual({ start: 4, anchored: true, droppedUncovered: 0 });
    // The notes end on the tool_use: the result must not be kept without it.
    const split = tailAfter(list, 1);
    expect(split.start).toBe(1);
    expect(toolPairsIntact(list.slice(split.start))).toBe(true);
    expect(tailAfter(list, -1).start).toBe(list.length);
  });

  it('keeps fewer whole groups when the tail is too large, the newest group unless even it is over the hard cap', () => {
    const big = 'y'.repeat(40_000);
    const list = [
      user('one'),
      toolCall('a'),
      toolResult('a', big),
      user('two'),
      toolCall('b'),
      toolResult('b', big),
      user('three'),
    ];
    const soft = tailAfter(list, 0, 12_000);
    expect(soft.start).toBe(3);
    expect(soft.droppedUncovered).toBe(2);
    expect(toolPairsIntact(list.slice(soft.start))).toBe(true);
    const onlyNewest = tailAfter(list, 0, 10);
    expect(onlyNewest.start).toBe(6);
    const hard = tailAfter([user('a'), user(big)], undefined, 10, 100);
    expect(hard.start).toBe(2);
  });

  it('without an anchor, skips an earlier summary and its re-injected messages', () => {
    const list = [
      user('summary', { compactSummary: true, meta: true }),
      user('file', { meta: true }),
      user('next'),
      assistant('ok'),
    ];
    expect(keptTail(list, { lastSummarizedUuid: 'unknown', softMaxTokens: 1e6, hardMaxTokens: 1e6, measure })).toEqual({
      start: 2,
      anchored: false,
      droppedUncovered: 0,
    });
  });
});

describe('re-injection after a compaction', () => {
  const settings = {
    ...DEFAULT_SETTINGS,
    compaction: {
      ...DEFAULT_SETTINGS.compaction,
      reinjectMaxFiles: 3,
      reinjectFileMaxTokens: 100,
      reinjectMaxTokens: 250,
    },
  };

  it('re-injects the newest files within the per-file, count and total caps, then the plan', () => {
    const files = [
      { path: 'new.ts', content: 'const a = 1;\n'.repeat(100) },
      { path: 'old.ts', content: 'short' },
      { path: 'new.ts', content: 'older copy' },
      { path: 'seen.ts', content: 'ALREADY IN CONTEXT' },
      { path: 'third.ts', content: 'z'.repeat(2_000) },
      { path: 'fourth.ts', content: 'w' },
    ];
    const result = reinjection(
      {
        recentFiles: files,
        plan: 'Fix the parser',
        todos: [
          { content: 'write test', status: 'completed' },
          { content: 'fix', status: 'in_progress', activeForm: 'Fixing' },
          { content: 'ship', status: 'pending' },
        ],
      },
      settings,
      (content) => content === 'ALREADY IN CONTEXT',
    );
    expect(result.files).toEqual(['new.ts', 'old.ts', 'third.ts']);
    const [first, second, third, plan] = result.texts;
    expect(first).toContain('<file path="new.ts">');
    expect(first).toMatch(/cut after \d+ of 1300 bytes: read the file again/);
    expect(first!.length).toBeLessThan(400 + 200);
    expect(second).toContain('short');
    // 250 total − 100 − 2 tokens used: the third file gets at most the rest.
    expect(third).toMatch(/cut after/);
    expect(plan).toContain('<plan>\nFix the parser\n\nTodo list:\n- [x] write test\n- [~] Fixing\n- [ ] ship\n</plan>');
    expect(result.plan).toBe(
      planText({
        plan: 'Fix the parser',
        todos: [
          { content: 'write test', status: 'completed' },
          { content: 'fix', status: 'in_progress', activeForm: 'Fixing' },
          { content: 'ship', status: 'pending' },
        ],
      }),
    );
  });

  it('re-injects nothing when there are no files and no plan', () => {
    expect(reinjection({ recentFiles: [] }, settings)).toEqual({ texts: [], files: [] });
  });
});
