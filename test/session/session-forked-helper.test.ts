import { unmarkedMessage } from '../support/session-support.js';
import { describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../src/adapters/models/anthropic-language-model.js';
import { EngramError } from '../../src/kernel/errors.js';
import type {
  LanguageModelMessage,
  LanguageModelRequest,
  SystemBlock,
  ToolDefinition,
} from '../../src/contracts/language-model.js';
import { runForkedHelper, type ForkedHelperOptions, type ForkPrefix } from '../../src/session/forked-helper.js';
import type { SessionTranscriptEntry, SessionTranscriptSink } from '../../src/contracts/session-message.js';
import type { SessionTool } from '../../src/contracts/session-tool.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer, RecordedModelRequest } from '../../src/testing/loopback-model-server.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import { useClosedAfterTest } from '../support/per-test.js';

const closeAfterTest = useClosedAfterTest();

async function anthropic(): Promise<{ api: LanguageModelServer; model: AnthropicLanguageModel }> {
  const api = closeAfterTest(await startAnthropicMessagesServer({ minCacheableTokens: 100 }));
  return {
    api,
    model: new AnthropicLanguageModel({
      model: 'claude-haiku-5-5',
      baseUrl: api.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
    }),
  };
}

const system: SystemBlock[] = [
  { text: `You are a coding agent.\n${'Standing rule: never push to main. '.repeat(40)}`, cache: true },
  { text: 'Project instructions: run npm test before committing.' },
];
const tools: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'write_file',
    description: 'Writes a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
  },
];

/** A parent conversation with a tool round, ending in the assistant's answer and a new user turn. */
function parentMessages(): LanguageModelMessage[] {
  return [
    { role: 'user', content: 'Fix the failing parser test.' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading the parser.' },
        { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/parser.ts' } },
      ],
    },
    {
      role: 'user',
      content: [{ type: 'tool_result', toolUseId: 'toolu_1', content: 'export function parse() { return 1; }' }],
    },
    { role: 'assistant', content: [{ type: 'text', text: 'The parser returns a constant; I will fix it.' }] },
    { role: 'user', content: 'Go ahead, and keep the public API.' },
  ];
}

/** The request's prompt in Anthropic's prompt order (tools, system, messages), as sent on the wire. */
function promptText(request: RecordedModelRequest): string {
  const body = request.body as { tools?: unknown; system?: unknown; messages: unknown };
  return `${JSON.stringify(body.tools ?? [])}\n${JSON.stringify(body.system ?? [])}\n${JSON.stringify(body.messages)}`;
}

/** The parent's prompt without the closing bracket of its messages: what the helper's prompt must begin with. */
function openPrefix(request: RecordedModelRequest): string {
  const text = promptText(request);
  expect(text.endsWith(']')).toBe(true);
  return text.slice(0, -1);
}

class CollectingSink implements SessionTranscriptSink {
  readonly entries: SessionTranscriptEntry[] = [];
  flushes = 0;
  closed = false;
  append(entry: SessionTranscriptEntry): void {
    this.entries.push(structuredClone(entry));
  }
  async flush(): Promise<void> {
    this.flushes += 1;
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

describe('a forked helper on the wire', () => {
  it("begins its request with the parent's last request byte for byte and reads the parent's cached prefix", async () => {
    const { api, model } = await anthropic();
    const messages = parentMessages();
    await model.generate({ system, tools, messages, maxOutputTokens: 1_000 });
    api.script({ message: { text: '<no-changes/>' } });
    const result = await runForkedHelper({
      model,
      prefix: { system, tools, messages },
      instruction: 'Summarize the session so far.',
      maxOutputTokens: 500,
    });

    expect(api.requests).toHaveLength(2);
    const [parent, helper] = api.requests as [RecordedModelRequest, RecordedModelRequest];
    const parentPrompt = openPrefix(parent);
    const helperPrompt = promptText(helper);
    expect(helperPrompt.length).toBeGreaterThan(parentPrompt.length);
    expect(helperPrompt.startsWith(parentPrompt)).toBe(true);
    // Only its own instruction follows, marked as the end of the prefix to cache.
    expect(helperPrompt.slice(parentPrompt.length)).toBe(
      ',{"role":"user","content":[{"type":"text","text":"Summarize the session so far.","cache_control":{"type":"ephemeral"}}]}]',
    );
    // The system blocks and tools go out identical, cache marks included.
    expect((helper.body as { system: unknown }).system).toEqual((parent.body as { system: unknown }).system);
    expect((helper.body as { tools: unknown }).tools).toEqual((parent.body as { tools: unknown }).tools);
    expect(result).toMatchObject({ text: '<no-changes/>', turns: 1, aborted: false, stoppedBy: 'answer' });
    // The simulated prompt cache (keyed on exact bytes) served the parent's marked prefix.
    expect(result.usage.cacheReadTokens).toBeGreaterThan(100);
  });

  it('answers tool calls the parent left pending, so its request stays valid and its prefix identical', async () => {
    const { api, model } = await anthropic();
    const messages: LanguageModelMessage[] = [
      ...parentMessages(),
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_2', name: 'write_file', input: { path: 'src/parser.ts', content: 'x' } },
        ],
      },
    ];
    api.script({ message: { text: 'ok' } });
    await runForkedHelper({
      model,
      prefix: { system, tools, messages },
      instruction: 'Note what is in progress.',
      maxOutputTokens: 100,
    });
    const sent = (api.requests[0]!.body as { messages: Array<{ role: string; content: unknown }> }).messages;
    expect(sent.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_2', content: expect.stringMatching(/Not run/), is_error: true },
        { type: 'text', text: 'Note what is in progress.', cache_control: { type: 'ephemeral' } },
      ],
    });
    expect(JSON.stringify(sent.slice(0, -1))).toBe(JSON.stringify((await wireOf(messages)).messages));
  });

  it("runs only allowed tools: other calls get an error result, allowed ones run with the helper's signal", async () => {
    const { api, model } = await anthropic();
    const seen: Array<{ input: Record<string, unknown>; aborted: boolean; toolUseId: string; sessionId: string }> = [];
    const readFile: SessionTool = {
      definition: tools[0]!,
      async run(input, context) {
        seen.push({
          input,
          aborted: context.signal.aborted,
          toolUseId: context.toolUseId,
          sessionId: context.sessionId,
        });
        return { content: 'file text' };
      },
    };
    api.script(
      {
        message: {
          content: [
            { type: 'tool_use', id: 'toolu_a', name: 'write_file', input: { path: 'x', content: 'y' } },
            { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'README.md' } },
          ],
        },
      },
      { message: { text: 'done' } },
    );
    const result = await runForkedHelper({
      model,
      prefix: { system, tools, messages: parentMessages() },
      instruction: 'Check the README.',
      maxOutputTokens: 200,
      maxTurns: 3,
      allowedTools: { read_file: readFile },
      sessionId: 'session-1',
    });
    expect(result).toMatchObject({
      text: 'done',
      turns: 2,
      stoppedBy: 'answer',
      toolCalls: [
        { name: 'write_file', isError: true },
        { name: 'read_file', isError: false },
      ],
    });
    expect(seen).toEqual([
      { input: { path: 'README.md' }, aborted: false, toolUseId: 'toolu_b', sessionId: 'session-1' },
    ]);
    const last = api.requests[1]!.summary!.messages.at(-1)!;
    expect(last.content).toEqual([
      {
        type: 'tool_result',
        toolUseId: 'toolu_a',
        content: expect.stringMatching(/"write_file" is not available to this helper; it may use only read_file/),
        isError: true,
      },
      { type: 'tool_result', toolUseId: 'toolu_b', content: 'file text' },
    ]);
    // The second request still begins with the first one (cache marks aside: only the latest message carries one).
    const unmarked = (request: RecordedModelRequest): RecordedModelRequest => {
      const body = request.body as { messages: unknown[] };
      return { ...request, body: { ...body, messages: body.messages.map(unmarkedMessage) } };
    };
    expect(promptText(unmarked(api.requests[1]!)).startsWith(openPrefix(unmarked(api.requests[0]!)))).toBe(true);
  });

  it('stops at the turn cap without running the tools of its last turn', async () => {
    const model = new ScriptedLanguageModel({
      script: [{ content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a' } }] }],
    });
    let ran = 0;
    const result = await runForkedHelper({
      model,
      prefix: { system, tools, messages: parentMessages() },
      instruction: 'Go.',
      maxOutputTokens: 50,
      allowedTools: { read_file: { definition: tools[0]!, run: async () => ((ran += 1), { content: 'x' }) } },
    });
    expect(result).toMatchObject({ turns: 1, stoppedBy: 'turn-cap' });
    expect(ran).toBe(0);
  });
});

describe("a forked helper's isolation", () => {
  /** Starts a forked helper whose model request hangs; resolves (with it still running) once that request has arrived. */
  async function helperWaitingOnModel(
    api: LanguageModelServer,
    model: AnthropicLanguageModel,
    parentSignal: AbortSignal,
    signal?: AbortSignal,
  ): Promise<{ running: ReturnType<typeof runForkedHelper> }> {
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    api.script(() => {
      arrived();
      return { hang: true };
    });
    const running = runForkedHelper({
      model,
      prefix: { system, tools, messages: parentMessages() },
      instruction: 'Go.',
      maxOutputTokens: 50,
      parentSignal,
      ...(signal && { signal }),
    });
    await requestArrived;
    return { running };
  }

  it("aborting the helper leaves the parent's signal alone; the parent goes on", async () => {
    const { api, model } = await anthropic();
    const parent = new AbortController();
    const helper = new AbortController();
    const { running } = await helperWaitingOnModel(api, model, parent.signal, helper.signal);
    helper.abort();
    const result = await running;
    expect(result).toMatchObject({ aborted: true, stoppedBy: 'aborted', turns: 0 });
    expect(parent.signal.aborted).toBe(false);
    api.script({ message: { text: 'parent answer' } });
    expect(
      (await model.generate({ system, tools, messages: parentMessages(), maxOutputTokens: 50, signal: parent.signal }))
        .text,
    ).toBe('parent answer');
  });

  it('aborting the parent aborts the helper, even before it starts', async () => {
    const { api, model } = await anthropic();
    const parent = new AbortController();
    const { running } = await helperWaitingOnModel(api, model, parent.signal);
    parent.abort();
    expect(await running).toMatchObject({ aborted: true, stoppedBy: 'aborted' });

    const before = api.requests.length;
    const gone = new AbortController();
    gone.abort();
    expect(
      await runForkedHelper({
        model,
        prefix: { system, tools, messages: parentMessages() },
        instruction: 'Go.',
        maxOutputTokens: 50,
        parentSignal: gone.signal,
      }),
    ).toMatchObject({ aborted: true, turns: 0 });
    expect(api.requests.length).toBe(before);
  });

  it("cannot change the parent's messages: it works on frozen copies", async () => {
    const prefix: ForkPrefix = { system, tools, messages: parentMessages() };
    const before = structuredClone(prefix);
    const received: LanguageModelRequest[] = [];
    // A model that breaks the contract and tries to edit what it was given.
    const model = new ScriptedLanguageModel({
      script: [
        (request) => {
          received.push(request);
          const first = request.messages[0] as { content: unknown };
          expect(() => {
            first.content = 'rewritten';
          }).toThrowError(TypeError);
          expect(() => (request.messages[2]!.content as unknown[]).push({ type: 'text', text: 'extra' })).toThrowError(
            TypeError,
          );
          expect(() => {
            (request.system as SystemBlock[])[0]!.text = 'changed';
          }).toThrowError(TypeError);
          expect(() => {
            ((request.tools as ToolDefinition[])[0]!.inputSchema as { type: string }).type = 'array';
          }).toThrowError(TypeError);
          return 'fine';
        },
      ],
    });
    const result = await runForkedHelper({ model, prefix, instruction: 'Go.', maxOutputTokens: 50 });
    expect(result.text).toBe('fine');
    expect(prefix).toEqual(before);
    expect(received[0]!.messages[0]).not.toBe(prefix.messages[0]);
    expect(received[0]!.system).not.toBe(prefix.system);
    expect(Object.isFrozen(received[0]!.messages[1]!.content)).toBe(true);
    // The parent's own objects stay mutable: freezing is on the copies only.
    expect(Object.isFrozen(prefix.messages[0])).toBe(false);
  });

  it("writes its own messages (not the parent's) to the sidechain transcript it is given", async () => {
    const sink = new CollectingSink();
    let id = 0;
    const model = new ScriptedLanguageModel({
      modelId: 'helper-model',
      script: [{ content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a' } }] }, 'final notes'],
    });
    await runForkedHelper({
      model,
      prefix: { system, tools, messages: parentMessages() },
      instruction: 'Update the notes.',
      maxOutputTokens: 50,
      maxTurns: 2,
      allowedTools: { read_file: { definition: tools[0]!, run: async () => ({ content: 'contents of a' }) } },
      transcript: sink,
      generateId: () => `uuid-${++id}`,
      now: () => new Date('2026-03-01T10:00:00.000Z'),
    });
    expect(sink.entries.map((entry) => entry.kind)).toEqual(['message', 'message', 'message', 'message']);
    const messages = sink.entries.map((entry) => entry as Extract<SessionTranscriptEntry, { kind: 'message' }>);
    expect(messages.map((entry) => [entry.message.uuid, entry.parentUuid, entry.message.role])).toEqual([
      ['uuid-1', null, 'user'],
      ['uuid-2', 'uuid-1', 'assistant'],
      ['uuid-3', 'uuid-2', 'user'],
      ['uuid-4', 'uuid-3', 'assistant'],
    ]);
    expect(messages[0]!.message.content).toBe('Update the notes.');
    expect(messages[1]!.message.model).toBe('helper-model');
    expect(messages[1]!.message.usage?.outputTokens).toBeGreaterThan(0);
    expect(messages[2]!.message.content).toEqual([{ type: 'tool_result', toolUseId: 't1', content: 'contents of a' }]);
    expect(messages[3]!.message.content).toEqual([{ type: 'text', text: 'final notes' }]);
    expect(messages.every((entry) => entry.message.timestamp === '2026-03-01T10:00:00.000Z')).toBe(true);
    expect(sink.flushes).toBe(1);
    expect(sink.closed).toBe(false);
  });

  it('passes on a model failure that is not an abort', async () => {
    const { api, model } = await anthropic();
    api.script({ error: { kind: 'invalid_request', message: 'prompt is too long' } });
    await expect(
      runForkedHelper({
        model,
        prefix: { system, tools, messages: parentMessages() },
        instruction: 'Go.',
        maxOutputTokens: 50,
      }),
    ).rejects.toMatchObject({
      code: 'MODEL_REQUEST_INVALID',
    });
  });
});

describe('a forked helper refuses bad options before sending anything', () => {
  const good = (): ForkedHelperOptions => ({
    model: new ScriptedLanguageModel({ script: ['x'] }),
    prefix: { system, tools, messages: parentMessages() },
    instruction: 'Go.',
    maxOutputTokens: 10,
  });
  it.each<[string, (options: ForkedHelperOptions) => unknown]>([
    ['no model', (options) => ({ ...options, model: undefined })],
    ['a prefix without messages', (options) => ({ ...options, prefix: { system: [], tools: [] } })],
    ['a string system', (options) => ({ ...options, prefix: { ...options.prefix, system: 'text' } })],
    ['an empty instruction', (options) => ({ ...options, instruction: '   ' })],
    ['an oversized instruction', (options) => ({ ...options, instruction: 'x'.repeat(1_000_001) })],
    ['zero output tokens', (options) => ({ ...options, maxOutputTokens: 0 })],
    ['fractional output tokens', (options) => ({ ...options, maxOutputTokens: 1.5 })],
    ['a huge turn count', (options) => ({ ...options, maxTurns: 10_000 })],
    ['a signal that is not one', (options) => ({ ...options, parentSignal: { aborted: false } })],
    ['a tool without run', (options) => ({ ...options, allowedTools: { read_file: { definition: tools[0] } } })],
    [
      'a system-role message',
      (options) => ({ ...options, prefix: { ...options.prefix, messages: [{ role: 'system', content: 'x' }] } }),
    ],
    [
      'a prefix holding a function',
      (options) => ({
        ...options,
        prefix: { ...options.prefix, messages: [{ role: 'user', content: 'x', extra: () => 1 }] },
      }),
    ],
  ])('%s', async (_, change) => {
    const options = change(good()) as ForkedHelperOptions;
    const error = await runForkedHelper(options).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(EngramError);
    expect((error as EngramError).code).toBe('INVALID_INPUT');
    const model = options.model as ScriptedLanguageModel | undefined;
    if (model) expect(model.calls).toBe(0);
  });
});

/** What the real adapter would send for these messages (for comparing the helper's copy with the parent's own). */
async function wireOf(messages: LanguageModelMessage[]): Promise<{ messages: unknown[] }> {
  const { toMessagesRequest } = await import('../../src/adapters/models/anthropic-language-model.js');
  return toMessagesRequest('claude-haiku-5-5', { system, tools, messages, maxOutputTokens: 1 }) as unknown as {
    messages: unknown[];
  };
}
