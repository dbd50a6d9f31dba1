import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../../src/adapters/models/anthropic-language-model.js';
import {
  COMPACTION_SUMMARY_SECTIONS,
  missingSummarySections,
} from '../../../src/session/compaction/compaction-summary.js';
import { estimateMessagesTokens } from '../../../src/session/context-budget.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { Compactor } from '../../../src/session/compaction/compaction.js';
import type { CompactionInput, CompactionNotes } from '../../../src/session/compaction/compaction-input.js';
import type { SessionMessage } from '../../../src/contracts/session-message.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';

/**
 * Layer 4's two guarantees on what a compaction produces (SPEC §2): the summary has the nine parts
 * (a summary lacking any is asked for once more, then refused), and the compacted context is smaller
 * than the one it replaces (else refused). A refusal changes nothing and says why. The summarizer is
 * the real Anthropic SDK against the loopback Messages server.
 */

const NINE_PARTS = COMPACTION_SUMMARY_SECTIONS.map((title, index) => `${index + 1}. ${title}: about the parser.`);
const summaryOf = (parts: readonly string[]): string =>
  `<analysis>thinking</analysis>\n<summary>\n${parts.join('\n')}\n</summary>`;

let server: LanguageModelServer;
beforeEach(async () => {
  server = await startAnthropicMessagesServer();
});
afterEach(async () => {
  await server.close();
});

let counter = 0;
function message(role: 'user' | 'assistant', content: string): SessionMessage {
  counter += 1;
  return { uuid: `m-${counter}`, role, content, timestamp: new Date(Date.UTC(2025, 0, 1, 0, counter)).toISOString() };
}

/** A conversation of about `tokens` estimated tokens, in question and answer rounds. */
function conversation(rounds = 6, answerBytes = 2_000): SessionMessage[] {
  return Array.from({ length: rounds }, (_, index) => [
    message('user', `Question ${index} about src/parser.ts?`),
    message('assistant', `Answer ${index}: ${'the parser splits fields on commas. '.repeat(answerBytes / 36)}`),
  ]).flat();
}

function input(messages: SessionMessage[], extra: Partial<CompactionInput> = {}): CompactionInput {
  return {
    trigger: 'manual',
    messages,
    prefix: {
      system: [{ text: 'You are a coding agent.' }],
      tools: [],
      messages: messages.map(({ role, content }) => ({ role, content })),
    },
    preTokens: 10_000,
    reinject: { recentFiles: [] },
    metadata: { filesEdited: [], gitBranch: 'main' },
    ...extra,
  };
}

const compactor = (withModel = true): Compactor =>
  new Compactor({
    settings: DEFAULT_SETTINGS,
    ...(withModel && {
      model: new AnthropicLanguageModel({ model: 'claude-haiku-5-5', baseUrl: server.url, apiKey: 'k', maxRetries: 0 }),
    }),
  });

const instructionOf = (index: number): string =>
  JSON.stringify((server.requests[index]!.body as { messages: unknown[] }).messages.at(-1));

describe('the nine-part summary', () => {
  it('finds the nine parts however a summarizer writes their headings, and only at a line start', () => {
    const styles = COMPACTION_SUMMARY_SECTIONS.map(
      (title, index) =>
        [`${index + 1}. ${title}:`, `## ${title}`, `**${title}**`, `- ${index + 1}) ${title.toUpperCase()}`][index % 4],
    );
    expect(missingSummarySections(styles.join('\nsomething\n'))).toEqual([]);
    expect(missingSummarySections(NINE_PARTS.join('\n').replace('Errors and fixes', 'Errors & Fixes'))).toEqual([]);
    expect(missingSummarySections('')).toEqual([...COMPACTION_SUMMARY_SECTIONS]);
    // Named inside prose is not a section.
    expect(missingSummarySections(`We covered the ${COMPACTION_SUMMARY_SECTIONS.join(', the ')}.`)).toHaveLength(9);
    expect(missingSummarySections(NINE_PARTS.filter((part) => !part.includes('Pending Tasks')).join('\n'))).toEqual([
      'Pending Tasks',
    ]);
  });

  it('asks once more, naming the missing parts, when the summary has none of them, and uses the second answer', async () => {
    server.script(
      { message: { text: '<summary>The user asked about the parser and got answers.</summary>' } },
      { message: { text: summaryOf(NINE_PARTS) } },
    );
    const result = await compactor().compact(input(conversation()));
    expect(result.modelCalls).toBe(2);
    expect(instructionOf(0)).not.toContain('could not be used');
    expect(instructionOf(1)).toContain('lacked the sections \\"Primary Request and Intent\\"');
    expect(instructionOf(1)).toContain('\\"Optional Next Step\\"');
    expect(result.summary).toContain('9. Optional Next Step');
    expect(server.requests).toHaveLength(2);
  });

  it('refuses a summary that still lacks parts after the second ask: nothing changes, the breaker counts it', async () => {
    const eight = NINE_PARTS.filter((part) => !part.includes('Current Work'));
    server.script({ message: { text: summaryOf(eight) } }, { message: { text: summaryOf(eight) } });
    const subject = compactor();
    const messages = conversation();
    const before = structuredClone(messages);
    const error = await subject.compact(input(messages)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'COMPACTION_FAILED',
      details: { missingSections: ['Current Work'], modelCalls: 2 },
    });
    expect((error as Error).message).toMatch(/lacks 1 of the nine parts \(Current Work\).*nothing was changed/);
    expect(instructionOf(1)).toContain('lacked the section \\"Current Work\\"');
    expect(messages).toEqual(before);
    expect(subject.failuresInARow).toBe(1);
  });

  it('refuses a summary of only an <analysis> block or plain text without sections, after one more ask', async () => {
    for (const bad of ['Sure, here is a summary: parser work.', '1. Primary Request and Intent: only this.']) {
      server.script({ message: { text: bad } }, { message: { text: bad } });
      await expect(compactor().compact(input(conversation()))).rejects.toMatchObject({ code: 'COMPACTION_FAILED' });
    }
    expect(server.requests).toHaveLength(4);
  });
});

describe('a compaction never grows the context', () => {
  it('refuses a summary longer than the conversation it would replace', async () => {
    const messages = conversation(2, 400);
    const long = NINE_PARTS.map((part) => `${part} ${'every detail repeated at length. '.repeat(80)}`);
    server.script({ message: { text: summaryOf(long) } });
    const subject = compactor();
    const before = structuredClone(messages);
    const error = await subject.compact(input(messages)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'COMPACTION_FAILED', details: { grows: true, modelCalls: 1 } });
    expect((error as Error).message).toMatch(
      /would not make the context smaller than it is \(about \d+ tokens\); nothing was changed/,
    );
    expect(messages).toEqual(before);
    expect(subject.failuresInARow).toBe(1);
  });

  it('refuses when what is re-injected after a good summary outweighs the conversation', async () => {
    const messages = conversation(2, 400);
    server.script({ message: { text: summaryOf(NINE_PARTS) } });
    const recentFiles = [{ path: 'src/big.ts', content: 'export const value = 1;\n'.repeat(1_500) }];
    await expect(compactor().compact(input(messages, { reinject: { recentFiles } }))).rejects.toMatchObject({
      code: 'COMPACTION_FAILED',
      details: { grows: true },
    });
  });

  it('with notes larger than the conversation: summarizes instead with a model, refuses without one', async () => {
    const messages = conversation(2, 400);
    const notes: CompactionNotes = {
      hasContent: async () => true,
      waitForIdle: async () => undefined,
      read: async () => `# Session Title\nParser\n# Worklog\n${'- looked at the parser again\n'.repeat(400)}`,
      lastSummarizedUuid: messages.at(-1)!.uuid,
    };
    server.script({ message: { text: summaryOf(NINE_PARTS) } });
    const summarized = await compactor().compact(input(messages, { notes }));
    expect(summarized.boundary.method).toBe('summary');
    expect(summarized.warnings.join(' ')).toMatch(/would not make the context smaller.*summarizing instead/);
    expect(summarized.postTokens).toBeLessThan(estimateMessagesTokens(messages, DEFAULT_SETTINGS));

    const offline = await compactor(false)
      .compact(input(messages, { notes }))
      .catch((caught: unknown) => caught);
    expect(offline).toMatchObject({ code: 'COMPACTION_FAILED', details: { grows: true, modelCalls: 0 } });
  });

  it('a good summary of a long conversation compacts, and is smaller than before', async () => {
    const messages = conversation(8, 3_000);
    server.script({ message: { text: summaryOf(NINE_PARTS) } });
    const result = await compactor().compact(input(messages));
    expect(result.modelCalls).toBe(1);
    expect(result.postTokens).toBeLessThan(estimateMessagesTokens(messages, DEFAULT_SETTINGS));
  });
});
