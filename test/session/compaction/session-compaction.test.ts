import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../../src/adapters/models/anthropic-language-model.js';
import { STANDING_RULES_HEADING } from '../../../src/session/compaction/compaction-standing-rules.js';
import { COMPACTION_SUMMARY_PROMPT } from '../../../src/session/compaction/compaction-summary.js';
import { estimateMessageTokens } from '../../../src/session/context-budget.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/kernel/settings.js';
import type { LanguageModelMessage, SystemBlock, ToolDefinition } from '../../../src/contracts/language-model.js';
import { Compactor, type CompactorOptions } from '../../../src/session/compaction/compaction.js';
import type { CompactionInput, CompactionNotes } from '../../../src/session/compaction/compaction-input.js';
import type { SessionMessage } from '../../../src/contracts/session-message.js';
import { numberedMessages, toolPairsIntact } from '../../support/session-support.js';
import { SessionNotes } from '../../../src/session/notes/session-notes.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { nodeNotesFiles } from '../../../src/session/node/session-notes-files.js';

const SYSTEM: SystemBlock[] = [{ text: 'You are a coding agent working in /repo.', cache: true }];
const TOOLS: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'write_file',
    description: 'Writes a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
  },
];
const ANALYSIS_SECRET = 'PRIVATE-CHAIN-OF-THOUGHT';
const GOOD_SUMMARY = [
  `<analysis>\n${ANALYSIS_SECRET}: the user wants a parser refactor.\n</analysis>\n\n<summary>`,
  '1. Primary Request and Intent: refactor src/parser.ts and add tests.',
  '2. Key Technical Concepts: CSV parsing, vitest.',
  '3. Files and Code Sections: src/parser.ts, test/parser.test.ts.',
  '4. Errors and fixes: None.',
  '5. Problem Solving: None.',
  '6. All user messages: asked for the refactor, tests, and a run.',
  '7. Pending Tasks: run the tests.',
  '8. Current Work: running the tests.',
  '9. Optional Next Step: run vitest.',
  '</summary>',
].join('\n');
// The parser as the session read it: enough text that a summary is smaller than the conversation.
const PARSER_SOURCE = Array.from(
  { length: 60 },
  (_, index) => `export function parseField${index}(text) {\n\treturn text.split(',')[${index}]?.trim() ?? '';\n}\n`,
).join('');

let server: LanguageModelServer;
let directory: string;
beforeEach(async () => {
  server = await startAnthropicMessagesServer();
  directory = await mkdtemp(join(tmpdir(), 'engram-compaction-'));
});
afterEach(async () => {
  await server.close();
  await rm(directory, { recursive: true, force: true });
});

const model = (): AnthropicLanguageModel =>
  new AnthropicLanguageModel({ model: 'claude-haiku-5-5', baseUrl: server.url, apiKey: 'sk-ant-test', maxRetries: 0 });

let clock = 0;
function compactor(options: Partial<CompactorOptions> = {}): Compactor {
  let id = 0;
  return new Compactor({
    settings: DEFAULT_SETTINGS,
    model: model(),
    generateId: () => `gen-${++id}`,
    now: () => new Date(Date.UTC(2025, 0, 1) + clock++ * 1_000),
    ...options,
  });
}

const message = numberedMessages('msg-', (index) => new Date(Date.UTC(2025, 0, 1, 0, index)).toISOString());

/** A short coding session: the user states a standing rule in the first message; three tool rounds. */
function conversation(bigResult = ''): SessionMessage[] {
  return [
    message('user', 'Please refactor the parser in src/parser.ts. Always use tabs for indentation.'),
    message('assistant', [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/parser.ts' } }]),
    message('user', [
      {
        type: 'tool_result',
        toolUseId: 'toolu_1',
        content: `export function parse(text) {\n\treturn text.split(',');\n}\n${PARSER_SOURCE}${bigResult}`,
      },
    ]),
    message('assistant', [{ type: 'text', text: 'I read the parser; it splits on commas.' }]),
    message('user', 'Now add tests.'),
    message('assistant', [
      {
        type: 'tool_use',
        id: 'toolu_2',
        name: 'write_file',
        input: { path: 'test/parser.test.ts', content: "test('parse', () => {});" },
      },
    ]),
    message('user', [{ type: 'tool_result', toolUseId: 'toolu_2', content: 'Wrote test/parser.test.ts' }]),
    message('assistant', [{ type: 'text', text: 'Tests added.' }]),
    message('user', 'Run them.'),
    message('assistant', [{ type: 'tool_use', id: 'toolu_3', name: 'read_file', input: { path: 'package.json' } }]),
    message('user', [{ type: 'tool_result', toolUseId: 'toolu_3', content: '{"scripts":{"test":"vitest"}}' }]),
  ];
}

const wire = (messages: readonly SessionMessage[]): LanguageModelMessage[] =>
  messages.map((item) => ({ role: item.role, content: item.content }));

/** The model's next answer to the conversation as it stands, under the session's own prefix. */
const continueWith = (messages: readonly SessionMessage[]) =>
  model().generate({ system: SYSTEM, tools: TOOLS, messages: wire(messages), maxOutputTokens: 100 });

function input(messages: SessionMessage[], extra: Partial<CompactionInput> = {}): CompactionInput {
  return {
    trigger: 'auto',
    messages,
    prefix: { system: SYSTEM, tools: TOOLS, messages: wire(messages) },
    preTokens: 170_000,
    reinject: {
      recentFiles: [
        { path: 'src/parser.ts', content: "export function parse(text) {\n\treturn text.split(',');\n}\n" },
      ],
      plan: 'Refactor, then test.',
    },
    metadata: { filesEdited: ['test/parser.test.ts'], gitBranch: 'feature/parser' },
    ...extra,
  };
}

const textOf = (item: SessionMessage): string =>
  typeof item.content === 'string' ? item.content : JSON.stringify(item.content);
const body = (index: number): Record<string, any> => server.requests[index]!.body as Record<string, any>;
const lastUserText = (index: number): string => {
  const content = body(index).messages.at(-1).content;
  return typeof content === 'string' ? content : content.map((block: { text?: string }) => block.text ?? '').join('\n');
};

/** Real SessionNotes over a file in the temp dir, updated once through the loopback server. */
async function notesUpdatedAt(
  messages: SessionMessage[],
  uuid: string,
  sections: string,
  delayMs?: number,
): Promise<SessionNotes> {
  const notes = new SessionNotes({
    path: join(directory, 'session-notes.md'),
    files: nodeNotesFiles,
    model: model(),
    settings: DEFAULT_SETTINGS,
  });
  server.script({ message: { text: sections }, ...(delayMs !== undefined && { delayMs }) });
  const upTo = messages.findIndex((item) => item.uuid === uuid) + 1;
  await notes.update(
    { system: SYSTEM, tools: TOOLS, messages: wire(messages.slice(0, upTo)) },
    { lastMessageUuid: uuid },
  );
  return notes;
}

describe('fast path: compaction from the session notes', () => {
  it('uses the notes with zero model calls and keeps the messages after the last summarized one, pairs intact', async () => {
    const messages = conversation();
    // The notes end on the write_file tool_use: its result must not be kept without it.
    const notes = await notesUpdatedAt(
      messages,
      messages[5]!.uuid,
      '<section name="Current State">\nAdding tests to the parser refactor.\n</section>',
    );
    await notes.waitForIdle();
    expect(notes.lastSummarizedUuid).toBe(messages[5]!.uuid);
    const before = JSON.stringify(messages);
    const requests = server.requests.length;

    const result = await compactor().compact(input(messages, { notes }));

    expect(server.requests.length).toBe(requests);
    expect(result.modelCalls).toBe(0);
    expect(JSON.stringify(messages)).toBe(before);
    const [summary, file, plan, ...kept] = result.messages;
    expect(summary!.compactSummary).toBe(true);
    expect(summary!.meta).toBe(true);
    expect(textOf(summary!)).toMatch(
      /^This session is being continued from a previous conversation that ran out of context\./,
    );
    expect(textOf(summary!)).toContain('Adding tests to the parser refactor.');
    // The standing rule stated in the conversation survives even though the notes did not record it.
    expect(textOf(summary!)).toContain(`${STANDING_RULES_HEADING}\n- Always use tabs for indentation.`);
    expect(textOf(file!)).toContain('<file path="src/parser.ts">');
    expect(textOf(plan!)).toContain('Refactor, then test.');
    expect(kept.map((item) => item.uuid)).toEqual(messages.slice(5).map((item) => item.uuid));
    expect(toolPairsIntact(result.messages)).toBe(true);
    expect(result.boundary).toMatchObject({
      method: 'notes',
      trigger: 'auto',
      lastSummarizedUuid: messages[4]!.uuid,
      preTokens: 170_000,
      gitBranch: 'feature/parser',
    });

    // The provider accepts the compacted list as it is (the loopback server refuses orphaned tool results).
    expect((await continueWith(result.messages)).text).toBe('OK');
  });

  it('waits for a running notes update and uses what it wrote', async () => {
    const messages = conversation();
    const notes = await notesUpdatedAt(
      messages,
      messages[7]!.uuid,
      '<section name="Current State">\nTests written; about to run them. The user wants tabs, always.\n</section>',
      150,
    );
    expect(await notes.hasContent()).toBe(false);

    const result = await compactor().compact(input(messages, { notes }));

    expect(result.boundary.method).toBe('notes');
    expect(result.summary).toContain('about to run them');
    expect(result.messages.slice(-3).map((item) => item.uuid)).toEqual(messages.slice(8).map((item) => item.uuid));
    expect(server.requests.length).toBe(1);
  });

  it('keeps fewer whole groups when the kept messages alone would pass the threshold', async () => {
    const messages = [
      ...conversation(),
      message('user', 'Read the fixtures.'),
      message('assistant', [{ type: 'tool_use', id: 'toolu_9', name: 'read_file', input: { path: 'fixtures.txt' } }]),
      message('user', [{ type: 'tool_result', toolUseId: 'toolu_9', content: 'f'.repeat(160_000) }]),
      message('assistant', [{ type: 'text', text: 'Fixtures read.' }]),
      message('user', 'Thanks, go on.'),
    ];
    const notes = await notesUpdatedAt(
      messages,
      messages[0]!.uuid,
      '<section name="Task Specification">\nRefactor the parser.\n</section>',
    );
    await notes.waitForIdle();
    // A 60K window: threshold min(60K − 33K, 55.2K) = 27K; the 40K-token fixture result cannot stay.
    const result = await compactor().compact(input(messages, { notes, window: 60_000 }));
    const keptUuids = result.messages.filter((item) => !item.meta).map((item) => item.uuid);
    expect(keptUuids).toEqual([messages.at(-2)!.uuid, messages.at(-1)!.uuid]);
    expect(toolPairsIntact(result.messages)).toBe(true);
    expect(result.postTokens).toBeLessThan(27_000);
    expect(result.warnings.join(' ')).toMatch(/too large to keep/);
    expect(result.modelCalls).toBe(0);
  });

  it('offline, with notes that do not say what they cover, still compacts from them', async () => {
    // A long tool result early on: the recent messages kept after the notes leave it out.
    const messages = conversation('log line\n'.repeat(20_000));
    const notes: CompactionNotes = {
      hasContent: async () => true,
      waitForIdle: async () => undefined,
      read: async () => '# Session Title\nParser work',
      lastSummarizedUuid: undefined,
    };
    const result = await compactor({ model: undefined }).compact(input(messages, { notes }));
    expect(result.boundary.method).toBe('notes');
    expect(result.modelCalls).toBe(0);
    expect(toolPairsIntact(result.messages)).toBe(true);
    expect(server.requests.length).toBe(0);
  });
});

describe('summary path: a forked summarizer', () => {
  it('sends the parent prefix then the nine-part prompt, strips <analysis>, and builds the summary message', async () => {
    const messages = conversation();
    expect((await continueWith(messages)).text).toBe('OK');
    server.script({ message: { text: GOOD_SUMMARY } });

    const result = await compactor().compact(input(messages, { customInstructions: 'Keep the test names.' }));

    expect(result.modelCalls).toBe(1);
    expect(server.requests).toHaveLength(2);
    // Same system, tools and messages as the parent's request, byte for byte, then the instruction.
    expect(JSON.stringify(body(1).system)).toBe(JSON.stringify(body(0).system));
    expect(JSON.stringify(body(1).tools)).toBe(JSON.stringify(body(0).tools));
    expect(JSON.stringify(body(1).messages.slice(0, -1))).toBe(JSON.stringify(body(0).messages));
    const instruction = lastUserText(1);
    expect(instruction).toContain(COMPACTION_SUMMARY_PROMPT);
    expect(instruction).toContain('- Always use tabs for indentation.');
    expect(instruction).toContain('Keep the test names.');

    expect(result.summary).not.toContain(ANALYSIS_SECRET);
    expect(result.summary).toContain('1. Primary Request and Intent: refactor src/parser.ts');
    expect(result.summary).toContain(`${STANDING_RULES_HEADING}\n- Always use tabs for indentation.`);
    const [summary, ...rest] = result.messages;
    expect(textOf(summary!)).toMatch(
      /^This session is being continued from a previous conversation that ran out of context\./,
    );
    expect(textOf(summary!)).not.toContain(ANALYSIS_SECRET);
    expect(rest.every((item) => item.meta === true)).toBe(true);
    expect(result.boundary).toMatchObject({ method: 'summary', lastSummarizedUuid: messages.at(-1)!.uuid });

    expect((await continueWith(result.messages)).text).toBe('OK');
  });

  it('keeps a standing rule through two compactions whose summarizer forgot it', async () => {
    // All nine parts, and no word of the rule.
    const forgetful = { message: { text: GOOD_SUMMARY } };
    expect(GOOD_SUMMARY).not.toMatch(/tabs/i);
    server.script(forgetful, forgetful);
    const subject = compactor();
    const first = await subject.compact(input(conversation()));
    const later = [
      ...first.messages,
      message('user', 'Now rename parse to parseCsv.'),
      message('assistant', [{ type: 'text', text: 'Renamed.' }]),
    ];
    const second = await subject.compact(input(later));
    expect(lastUserText(1)).toContain('- Always use tabs for indentation.');
    expect(textOf(second.messages[0]!)).toContain(`${STANDING_RULES_HEADING}\n- Always use tabs for indentation.`);
    expect(textOf(second.messages[0]!).split(STANDING_RULES_HEADING)).toHaveLength(2);
  });

  it('strips bulky content before summarizing', async () => {
    const messages = conversation(`data:image/png;base64,${'Q'.repeat(20_000)}\n${'log line\n'.repeat(5_000)}`);
    server.script({ message: { text: GOOD_SUMMARY } });
    await compactor().compact(input(messages));
    const sent = server.requests[0]!.rawBody;
    expect(sent).not.toContain('Q'.repeat(1_000));
    expect(sent).toContain('[image data removed]');
    expect(sent).toMatch(/characters cut for the summary/);
    expect(server.requests[0]!.bytes).toBeLessThan(30_000);
  });

  it('drops the oldest groups and retries when the request is too long, at most maxRetries times', async () => {
    const messages = [
      ...conversation(),
      message('assistant', [{ type: 'text', text: 'All 3 tests pass.' }]),
      message('user', 'Great, commit it.'),
    ];
    const tooLong = {
      error: { kind: 'invalid_request' as const, message: 'prompt is too long: 210000 tokens > 200000 maximum' },
    };
    server.script(tooLong, tooLong, { message: { text: GOOD_SUMMARY } });

    const result = await compactor().compact(input(messages));

    expect(result.modelCalls).toBe(3);
    expect(server.requests).toHaveLength(3);
    const counts = server.requests.map((request) => (request.body as { messages: unknown[] }).messages.length);
    expect(counts[1]).toBeLessThan(counts[0]!);
    expect(counts[2]).toBeLessThan(counts[1]!);
    expect(lastUserText(2)).toContain(COMPACTION_SUMMARY_PROMPT);
    expect(JSON.stringify(body(2).messages[0])).toContain('oldest part of this conversation was left out');
    expect(result.droppedGroups).toBeGreaterThanOrEqual(2);
    // The standing rule from a dropped group is still asked for and kept.
    expect(lastUserText(2)).toContain('- Always use tabs for indentation.');
    expect(result.summary).toContain('Always use tabs for indentation.');
  });

  it('gives up after maxRetries retries of a too-long request, counting one failure and changing nothing', async () => {
    const messages = [
      ...conversation(),
      message('user', 'Continue.'),
      message('assistant', 'Continuing.'),
      message('user', 'And more.'),
    ];
    const before = JSON.stringify(messages);
    const tooLong = {
      error: { kind: 'invalid_request' as const, message: 'prompt is too long: 999999 tokens > 200000 maximum' },
    };
    server.script(tooLong, tooLong, tooLong, tooLong, tooLong, tooLong);
    const subject = compactor();
    const error = await subject.compact(input(messages)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngramError);
    expect((error as EngramError).code).toBe('COMPACTION_FAILED');
    expect((error as EngramError).message).toMatch(/after dropping the 3 oldest message groups.*prompt is too long/s);
    expect(server.requests).toHaveLength(1 + DEFAULT_SETTINGS.compaction.maxRetries);
    expect(subject.failuresInARow).toBe(1);
    expect(JSON.stringify(messages)).toBe(before);
  });

  it('passes pre-compact hook text to the summarizer; a failing hook does not stop the compaction', async () => {
    const seen: Array<{ trigger: string; count: number }> = [];
    const hooks = [
      async ({ trigger, messages }: { trigger: 'auto' | 'manual'; messages: readonly SessionMessage[] }) => {
        seen.push({ trigger, count: messages.length });
        (messages as SessionMessage[]).length = 0; // a hostile hook cannot change the session's messages
        return 'Mention ticket ENG-42 in the summary.';
      },
      async () => {
        throw new Error('hook crashed');
      },
      async () => undefined,
    ];
    const messages = conversation();
    server.script({ message: { text: GOOD_SUMMARY } });
    const result = await compactor({ preCompactHooks: hooks }).compact(input(messages, { trigger: 'manual' }));
    expect(seen).toEqual([{ trigger: 'manual', count: messages.length }]);
    expect(messages).toHaveLength(11);
    expect(lastUserText(0)).toContain('Mention ticket ENG-42 in the summary.');
    expect(result.warnings.join(' ')).toMatch(/pre-compact hook failed \(hook crashed\)/);
    expect(result.boundary.trigger).toBe('manual');
  });

  it('counts a summarizer answer with no summary as a failure and changes nothing', async () => {
    const messages = conversation();
    const before = JSON.stringify(messages);
    server.script(
      { message: { text: `<analysis>${ANALYSIS_SECRET}</analysis>` } },
      { message: { text: '' } },
      { message: { content: [{ type: 'tool_use', id: 'toolu_x', name: 'read_file', input: { path: 'a' } }] } },
    );
    const subject = compactor();
    for (const expected of [1, 2, 3]) {
      const error = await subject.compact(input(messages)).catch((caught: unknown) => caught);
      expect((error as EngramError).code).toBe('COMPACTION_FAILED');
      expect(subject.failuresInARow).toBe(expected);
    }
    expect(JSON.stringify(messages)).toBe(before);
  });
});

describe('circuit breaker', () => {
  it('after 3 failures in a row refuses automatic compaction with no model call; a manual success resets it', async () => {
    const messages = conversation();
    const broken = { error: { kind: 'invalid_request' as const, message: 'messages: something the provider refused' } };
    server.script(broken, broken, broken);
    const subject = compactor();
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      await expect(subject.compact(input(messages))).rejects.toMatchObject({ code: 'COMPACTION_FAILED' });
    }
    expect(subject.tripped).toBe(true);
    expect(server.requests).toHaveLength(3);

    const refused = await subject.compact(input(messages)).catch((caught: unknown) => caught);
    expect(refused).toBeInstanceOf(EngramError);
    expect((refused as EngramError).code).toBe('COMPACTION_DISABLED');
    expect((refused as EngramError).message).toMatch(/failed in a row.*\/compact/s);
    expect(server.requests).toHaveLength(3);
    expect(subject.failuresInARow).toBe(3);

    server.script({ message: { text: GOOD_SUMMARY } });
    await subject.compact(input(messages, { trigger: 'manual' }));
    expect(subject.failuresInARow).toBe(0);
    expect(subject.tripped).toBe(false);
  });

  it('is reset by a success before it trips', async () => {
    const broken = { error: { kind: 'invalid_request' as const, message: 'refused' } };
    server.script(broken, broken, { message: { text: GOOD_SUMMARY } }, broken);
    const subject = compactor();
    await subject.compact(input(conversation())).catch(() => undefined);
    await subject.compact(input(conversation())).catch(() => undefined);
    expect(subject.failuresInARow).toBe(2);
    await subject.compact(input(conversation()));
    expect(subject.failuresInARow).toBe(0);
    await subject.compact(input(conversation())).catch(() => undefined);
    expect(subject.failuresInARow).toBe(1);
  });
});

describe('boundary and re-injection', () => {
  it('records files edited, plan, skills, branch, preTokens and trigger, and re-injects recent files and the plan within caps', async () => {
    const settings: Settings = { ...DEFAULT_SETTINGS };
    const line = 'const value = compute(input);\n';
    const recentFiles = [
      { path: 'src/a.ts', content: line.repeat(2_000) }, // ~15K tokens: cut to 5K
      { path: 'src/b.ts', content: line.repeat(10) },
      { path: 'src/a.ts', content: 'an older read of a.ts' },
      { path: 'src/c.ts', content: line.repeat(2_000) },
      { path: 'src/d.ts', content: line.repeat(2_000) },
      { path: 'src/e.ts', content: line.repeat(2_000) },
      { path: 'src/f.ts', content: line.repeat(10) },
      { path: 'src/g.ts', content: line.repeat(10) },
    ];
    server.script({ message: { text: GOOD_SUMMARY } });
    // A conversation larger than what is re-injected, so the compaction shrinks it.
    const result = await compactor({ settings }).compact(
      input(conversation('log line\n'.repeat(20_000)), {
        trigger: 'manual',
        preTokens: 123_456,
        reinject: {
          recentFiles,
          plan: 'Refactor the parser, then test it.',
          todos: [
            { content: 'Refactor', status: 'completed' },
            { content: 'Test', status: 'in_progress', activeForm: 'Testing' },
          ],
        },
        metadata: {
          filesEdited: ['src/parser.ts', 'test/parser.test.ts', 'src/parser.ts'],
          gitBranch: 'feature/parser',
          activeSkills: ['tdd'],
        },
      }),
    );
    expect(result.boundary).toEqual({
      uuid: expect.any(String),
      timestamp: expect.stringMatching(/^2025-01-01T/),
      trigger: 'manual',
      method: 'summary',
      preTokens: 123_456,
      lastSummarizedUuid: expect.any(String),
      filesEdited: ['src/parser.ts', 'test/parser.test.ts'],
      plan: 'Refactor the parser, then test it.\n\nTodo list:\n- [x] Refactor\n- [~] Testing',
      activeSkills: ['tdd'],
      gitBranch: 'feature/parser',
    });
    const files = result.messages.filter((item) => textOf(item).includes('<file path='));
    const paths = files.map((item) => /<file path="([^"]+)"/.exec(textOf(item))![1]);
    expect(paths.length).toBeLessThanOrEqual(DEFAULT_SETTINGS.compaction.reinjectMaxFiles);
    expect(paths.slice(0, 2)).toEqual(['src/a.ts', 'src/b.ts']);
    expect(new Set(paths).size).toBe(paths.length);
    const overhead = 80;
    for (const item of files)
      expect(estimateMessageTokens(item)).toBeLessThanOrEqual(
        DEFAULT_SETTINGS.compaction.reinjectFileMaxTokens + overhead,
      );
    const total = files.reduce((sum, item) => sum + estimateMessageTokens(item), 0);
    expect(total).toBeLessThanOrEqual(DEFAULT_SETTINGS.compaction.reinjectMaxTokens + overhead * files.length);
    expect(textOf(files[0]!)).toMatch(/read the file again for the rest/);
    const plan = result.messages.find((item) => textOf(item).includes('<plan>'));
    expect(textOf(plan!)).toContain('- [~] Testing');
    expect(result.messages.every((item) => item.meta)).toBe(true);
  });
});

describe('failures and bad input', () => {
  it('offline with no notes content: a clear error, messages unchanged, counted once', async () => {
    const messages = conversation();
    const before = JSON.stringify(messages);
    const notes = new SessionNotes({
      path: join(directory, 'none', 'session-notes.md'),
      files: nodeNotesFiles,
      settings: DEFAULT_SETTINGS,
    });
    const subject = compactor({ model: undefined });
    const error = await subject.compact(input(messages, { notes })).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngramError);
    expect((error as EngramError).code).toBe('MODEL_NOT_CONFIGURED');
    expect((error as EngramError).message).toMatch(/session notes or a model.*ANTHROPIC_API_KEY/s);
    expect(JSON.stringify(messages)).toBe(before);
    expect(subject.failuresInARow).toBe(1);
  });

  it('notes too large to serve: summarized instead with a model, a clear error without one', async () => {
    const messages = conversation();
    const huge: CompactionNotes = {
      hasContent: async () => true,
      waitForIdle: async () => undefined,
      read: async () => 'n'.repeat(800_000),
      lastSummarizedUuid: messages[3]!.uuid,
    };
    server.script({ message: { text: GOOD_SUMMARY } });
    const online = await compactor().compact(input(messages, { notes: huge }));
    expect(online.boundary.method).toBe('summary');
    expect(online.warnings.join(' ')).toMatch(/too large to serve/);
    const offline = await compactor({ model: undefined })
      .compact(input(messages, { notes: huge }))
      .catch((caught: unknown) => caught);
    expect((offline as EngramError).code).toBe('MODEL_NOT_CONFIGURED');
    expect((offline as EngramError).message).toMatch(/too large to serve as the summary\..*no model is configured/s);
  });

  it('refuses malformed input with INVALID_INPUT before doing anything, without counting a failure', async () => {
    const subject = compactor();
    const good = input(conversation());
    const duplicate = conversation();
    duplicate[1] = { ...duplicate[1]!, uuid: duplicate[0]!.uuid };
    const hostile: unknown[] = [
      null,
      {},
      { ...good, trigger: 'sometimes' },
      { ...good, messages: [] },
      { ...good, messages: duplicate },
      { ...good, messages: [{ uuid: 'x', role: 'system', content: 'hi' }] },
      { ...good, messages: [{ uuid: 'x', role: 'user', content: 42 }] },
      {
        ...good,
        messages: [
          { uuid: 'x', role: 'user', content: [{ type: 'tool_result', toolUseId: 'a', content: { nested: true } }] },
        ],
      },
      { ...good, prefix: { system: 'text' } },
      { ...good, preTokens: -1 },
      { ...good, preTokens: Number.NaN },
      { ...good, window: 0 },
      { ...good, notes: { read: 'no' } },
      { ...good, reinject: { recentFiles: [{ path: '', content: 'x' }] } },
      { ...good, reinject: { recentFiles: [], todos: [{ content: 'x', status: 'done' }] } },
      { ...good, metadata: { filesEdited: [1], gitBranch: 'main' } },
      { ...good, metadata: { filesEdited: [], gitBranch: null } },
      { ...good, customInstructions: 'x'.repeat(100_000) },
      { ...good, signal: 'abort' },
    ];
    for (const value of hostile) {
      const error = await subject.compact(value as CompactionInput).catch((caught: unknown) => caught);
      expect(error, JSON.stringify(value)?.slice(0, 120)).toBeInstanceOf(EngramError);
      expect((error as EngramError).code).toBe('INVALID_INPUT');
    }
    expect(subject.failuresInARow).toBe(0);
    expect(server.requests).toHaveLength(0);
    expect(() => new Compactor({} as CompactorOptions)).toThrow(EngramError);
  });

  it('an aborted compaction is MODEL_ABORTED, not counted, and a second one at the same time is refused', async () => {
    server.script({ hang: true });
    const subject = compactor();
    const controller = new AbortController();
    const running = subject.compact(input(conversation(), { signal: controller.signal }));
    await expect(subject.compact(input(conversation()))).rejects.toMatchObject({ code: 'CONFLICT' });
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await expect(running).rejects.toMatchObject({ code: 'MODEL_ABORTED' });
    expect(subject.failuresInARow).toBe(0);
    const early = new AbortController();
    early.abort();
    await expect(subject.compact(input(conversation(), { signal: early.signal }))).rejects.toMatchObject({
      code: 'MODEL_ABORTED',
    });
  });
});
