import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXTRACTION_QUEUE, type ExtractionJobPayload } from '../../../src/extraction/extraction-job-payload.js';
import { readTranscriptFile } from '../../../src/extraction/node/read-transcript.js';
import { Extractor } from '../../../src/extraction/extractor.js';
import { parseClaudeCodeTranscript } from '../../../src/extraction/transcripts/claude-code-transcript.js';
import { stripPrivateContent } from '../../../src/privacy/private-content.js';
import { openExtractionFixture, type ExtractionFixture } from '../../support/extraction-support.js';

// Issue 26 item 13: engram's own hook output (the SessionStart index and memories, the per-prompt
// <memory_context>) read back from Claude Code's transcript in every form the CLI writes it there.
// The fixture is a real Claude Code 2.1.332 session with the plugin installed
// (test/fixtures/record-claude-code-plugin-transcript.ts): SessionStart at startup and after a
// compaction, UserPromptSubmit, a Bash tool result printing the transcript itself.

const FIXTURE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'fixtures',
  'claude-code-2.1.332-plugin.jsonl',
);
const FIXTURE_TEXT = readFileSync(FIXTURE, 'utf8');
const records = FIXTURE_TEXT.split('\n')
  .filter((line) => line !== '')
  .map((line) => JSON.parse(line) as Record<string, any>);
/** What engram's hooks gave Claude Code in that session, as Claude Code kept it (hook_additional_context). */
const injectedContexts: string[] = records
  .filter((record) => record.attachment?.type === 'hook_additional_context')
  .flatMap((record) => record.attachment.content as string[])
  .filter((text) => text !== '');
/** The SessionStart context after the compaction: the index and a <memory_context> block. */
const FULL_CONTEXT = injectedContexts.find((text) => text.includes('# Memory index') && text.includes('<memory '))!;
const MEMORY_TEXTS = ['heron-7', 'Fridays after the code freeze', 'tabs over spaces'];
const ENGRAM_WORDS = ['Long-term memory', 'Memory index', 'memory_context', 'Notes recalled'];

function leaks(text: string): string[] {
  return [...MEMORY_TEXTS, ...ENGRAM_WORDS].filter((word) => text.includes(word));
}

function payloadsText(payloads: ExtractionJobPayload[]): string {
  return JSON.stringify(payloads.map((payload) => payload.messages));
}

describe("engram's injected context in a real Claude Code 2.1.332 transcript", () => {
  let fixture: ExtractionFixture;
  beforeEach(async () => {
    fixture = await openExtractionFixture();
  });
  afterEach(async () => fixture.close());

  async function queue(path: string | undefined, text?: string): Promise<ExtractionJobPayload[]> {
    const transcript = path
      ? await readTranscriptFile(path, { format: 'claude' })
      : { conversation: parseClaudeCodeTranscript(text!).conversation };
    const extractor = new Extractor({ engram: fixture.engram, autoStart: false });
    await extractor.afterTurn(transcript.conversation);
    const jobs = await fixture.store.jobs.list({ queue: EXTRACTION_QUEUE });
    return jobs.map((job) => job.payload as ExtractionJobPayload);
  }

  it('the recorded session holds the context in its hook lines, escaped in their stdout and twice in a tool result', () => {
    expect(FULL_CONTEXT).toBeDefined();
    const stdouts = records
      .filter((record) => record.attachment?.type === 'hook_success')
      .map((r) => r.attachment.stdout);
    expect(stdouts.some((stdout: string) => stdout.includes('# Long-term memory\\n\\nYou have'))).toBe(true);
    expect(FIXTURE_TEXT).toContain('# Long-term memory\\\\n\\\\nYou have');
  });

  it("queues the user's words and none of the index or memories, and knows which memories were recalled", async () => {
    const payloads = await queue(FIXTURE);
    const text = payloadsText(payloads);
    expect(leaks(text)).toEqual([]);
    for (const prompt of [
      'What is the staging database called?',
      'And when do deploys happen?',
      'release train leaves on Thursdays',
    ])
      expect(text).toContain(prompt);
    // No message is left that only held a hook's JSON wrapper.
    expect(text).not.toContain('"additionalContext\\":\\"\\"');
    const recalledIds = new Set(payloads.flatMap((payload) => payload.recalled.map((memory) => memory.id)));
    const injectedIds = new Set([...injectedContexts.join('\n').matchAll(/<memory id="([^"]+)"/g)].map((m) => m[1]));
    expect(injectedIds.size).toBe(2);
    for (const id of injectedIds) expect(recalledIds).toContain(id);
  });

  it('strips the context from the tool result that printed the transcript (the hook JSON escaped twice, cut off mid-line)', () => {
    const { conversation } = parseClaudeCodeTranscript(FIXTURE_TEXT);
    const results = conversation.messages.flatMap((message) => message.toolResults ?? []);
    expect(results).toHaveLength(1);
    const raw = results[0]!.content;
    expect(leaks(raw).length).toBeGreaterThan(0);
    const stripped = stripPrivateContent(raw);
    expect(leaks(stripped.text)).toEqual([]);
    expect(stripped.injectedBlocks).toBeGreaterThan(0);
    // The rest of the printed lines is kept, still JSON where it was whole.
    const lines = stripped.text.split('\n');
    expect(lines.length).toBe(raw.split('\n').length);
    expect(JSON.parse(lines[2]!).attachment.type).toBe('hook_success');
  });
});

describe('every shape a hook output takes in a transcript, by class', () => {
  let fixture: ExtractionFixture;
  beforeEach(async () => {
    fixture = await openExtractionFixture();
  });
  afterEach(async () => fixture.close());

  const base = { sessionId: 'sess-x', version: '2.1.332', isSidechain: false, timestamp: '2026-12-05T10:00:00.000Z' };
  const attachment = (uuid: string, parent: string | null, body: Record<string, unknown>) =>
    JSON.stringify({ ...base, type: 'attachment', uuid, parentUuid: parent, attachment: body });
  const user = (uuid: string, parent: string | null, content: unknown) =>
    JSON.stringify({ ...base, type: 'user', uuid, parentUuid: parent, message: { role: 'user', content } });
  const assistant = (uuid: string, parent: string, text: string) =>
    JSON.stringify({
      ...base,
      type: 'assistant',
      uuid,
      parentUuid: parent,
      message: { id: `msg_${uuid}`, role: 'assistant', content: [{ type: 'text', text }] },
    });
  const hookJson = (event: string, fields: Record<string, unknown>) =>
    JSON.stringify({ ...fields, hookSpecificOutput: { hookEventName: event, additionalContext: FULL_CONTEXT } });

  async function payloadOf(lines: string[]): Promise<{ text: string; recalled: string[] }> {
    const extractor = new Extractor({ engram: fixture.engram, autoStart: false });
    await extractor.afterTurn(parseClaudeCodeTranscript(lines.join('\n')).conversation);
    const payloads = (await fixture.store.jobs.list({ queue: EXTRACTION_QUEUE })).map(
      (job) => job.payload as ExtractionJobPayload,
    );
    return {
      text: JSON.stringify(payloads.map((payload) => payload.messages)),
      recalled: payloads.flatMap((payload) => payload.recalled.map((memory) => memory.id)),
    };
  }

  it.each([
    [
      'a SessionStart stdout (JSON, escaped once) with no hook_additional_context line',
      attachment('h1', null, { type: 'hook_success', hookEvent: 'SessionStart', stdout: hookJson('SessionStart', {}) }),
    ],
    [
      'a systemMessage (hook_system_message) carrying the context',
      attachment('h1', null, { type: 'hook_system_message', hookEvent: 'Stop', content: FULL_CONTEXT }),
    ],
    [
      'a hook answer with systemMessage and reason beside additionalContext',
      attachment('h1', null, {
        type: 'hook_success',
        hookEvent: 'UserPromptSubmit',
        stdout: hookJson('UserPromptSubmit', { systemMessage: FULL_CONTEXT, reason: FULL_CONTEXT }),
      }),
    ],
    [
      'plain-text stdout (Claude Code gives it to the model as it is)',
      attachment('h1', null, {
        type: 'hook_success',
        hookEvent: 'UserPromptSubmit',
        stdout: FULL_CONTEXT,
        content: FULL_CONTEXT,
      }),
    ],
    [
      'a stop_hook_summary line',
      JSON.stringify({
        ...base,
        type: 'system',
        subtype: 'stop_hook_summary',
        uuid: 'h1',
        parentUuid: null,
        hookAdditionalContext: [FULL_CONTEXT],
      }),
    ],
    [
      'a hook_additional_context of an unknown future shape (the context nested in objects)',
      attachment('h1', null, { type: 'hook_context_v2', payload: { blocks: [{ text: FULL_CONTEXT }] } }),
    ],
  ])('%s: nothing of it is queued, its memories are known', async (_name, hookLine) => {
    const { text, recalled } = await payloadOf([
      hookLine,
      user('u1', 'h1', 'Which queue do we use for invoices?'),
      assistant('a1', 'u1', 'The invoices queue.'),
    ]);
    expect(leaks(text)).toEqual([]);
    expect(text).toContain('Which queue do we use for invoices?');
    expect(recalled).toEqual(
      expect.arrayContaining([...FULL_CONTEXT.matchAll(/<memory id="([^"]+)"/g)].map((m) => m[1])),
    );
  });

  it("hook output inside user lines and tool results: a compact command's stdout, JSON escaped once to three times, a preview cut mid-string", async () => {
    const once = hookJson('PreCompact', {});
    const twice = JSON.stringify({ type: 'attachment', attachment: { type: 'hook_success', stdout: once } });
    const thrice = JSON.stringify({ type: 'user', message: { content: [{ type: 'tool_result', content: twice }] } });
    const cut = twice.slice(0, twice.indexOf('heron-7') + 3);
    const { text } = await payloadOf([
      user(
        'u0',
        null,
        `<local-command-stdout>Compacted\nPreCompact [engram] completed successfully: ${once}</local-command-stdout>`,
      ),
      user('u1', 'u0', 'Look at these logs please.'),
      JSON.stringify({
        ...base,
        type: 'assistant',
        uuid: 'a1',
        parentUuid: 'u1',
        message: {
          id: 'msg_a1',
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'cat log' } }],
        },
      }),
      user('r1', 'a1', [
        { type: 'tool_result', tool_use_id: 't1', content: `first ${twice}\nsecond ${thrice}\nthird ${cut}` },
      ]),
      assistant('a2', 'r1', 'Those are hook logs.'),
    ]);
    expect(leaks(text)).toEqual([]);
    expect(text).toContain('Look at these logs please.');
    expect(text).toContain('first ');
    expect(text).toContain('second ');
    expect(text).toContain('third ');
  });

  it('leaves alone what only mentions engram: the tag in prose, the heading in a note, escaped text of other JSON', () => {
    const texts = [
      'Recalled memories go in a <memory_context> block; see # Long-term memory in the docs.',
      JSON.stringify({ note: '# Long-term memory\n\nis the heading we use in our wiki', other: 'a\nb' }),
      JSON.stringify({ prompt: 'write <memory_context>\nhere by hand' }),
    ];
    for (const text of texts) expect(stripPrivateContent(text)).toMatchObject({ text, injectedBlocks: 0 });
  });

  it('keeps the rest of a JSON line whole, its other fields untouched', () => {
    const line = JSON.stringify({ before: 'keep "me"', context: FULL_CONTEXT, after: 'and me\n' });
    const once = JSON.stringify({ stdout: line, exitCode: 0 });
    for (const text of [line, once]) {
      const stripped = stripPrivateContent(text).text;
      expect(leaks(stripped)).toEqual([]);
      const value = JSON.parse(stripped);
      const inner = typeof value.stdout === 'string' ? JSON.parse(value.stdout) : value;
      expect({ ...inner, context: inner.context.trim() }).toEqual({
        before: 'keep "me"',
        context: '',
        after: 'and me\n',
      });
    }
  });
});
