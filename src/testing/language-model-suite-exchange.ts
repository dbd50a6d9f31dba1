import { expect } from 'vitest';
import { EngramError } from '../kernel/errors.js';
import type { LanguageModelMessage, LanguageModelRequest, ToolDefinition } from '../contracts/language-model.js';
import { toolUses } from '../contracts/language-model-content.js';
import type { LanguageModelSuiteCase } from './language-model-suite-case.js';

/** A tool every case can offer. */
export const WEATHER_TOOL: ToolDefinition = {
  name: 'get_weather',
  description: 'The current weather of a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Awaits a call that must fail and returns its EngramError (failing the test otherwise). */
export async function expectEngramError(call: Promise<unknown>, code: EngramError['code']): Promise<EngramError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, `expected ${code}`).toBeInstanceOf(EngramError);
  expect((error as EngramError).code, (error as Error).message).toBe(code);
  return error as EngramError;
}

const ask = (text: string, extra: Partial<LanguageModelRequest> = {}): LanguageModelRequest => ({
  messages: [{ role: 'user', content: text }],
  maxOutputTokens: 64,
  ...extra,
});

/** Text of about `bytes` bytes that reads like an instruction block (for the prompt cache). */
function stableText(bytes: number): string {
  const line = 'Memories are facts about the user and their projects; use them when they help. ';
  return line.repeat(Math.ceil(bytes / line.length));
}

export const languageModelExchangeCases: readonly LanguageModelSuiteCase[] = [
  {
    name: 'answers text and sends the system prompt, messages, model and output cap it was given',
    async run({ server, model }) {
      server.script({ message: { text: 'Hello there.' } });
      const underTest = model();
      const response = await underTest.generate(
        ask('Say hello.', { system: 'Be brief.', maxOutputTokens: 123, temperature: 0.2 }),
      );
      expect(response.text).toBe('Hello there.');
      expect(response.content).toEqual([{ type: 'text', text: 'Hello there.' }]);
      expect(response.stopReason).toBe('end');
      expect(response.usage.inputTokens).toBeGreaterThan(0);
      expect(response.usage.outputTokens).toBeGreaterThan(0);
      expect(server.requests).toHaveLength(1);
      const sent = server.requests[0]!.summary!;
      expect(sent).toMatchObject({
        model: underTest.modelId,
        system: 'Be brief.',
        maxOutputTokens: 123,
        tools: [],
        json: false,
        stream: false,
      });
      expect(sent.messages).toEqual([{ role: 'user', content: 'Say hello.' }]);
      expect((server.requests[0]!.body as { temperature?: unknown }).temperature).toBe(0.2);
    },
  },
  {
    name: 'runs a tool-use round trip: the tool call comes back as a block and its result goes back to the model',
    async run({ server, model }) {
      server.script(
        {
          message: {
            content: [
              { type: 'text', text: 'Let me check.' },
              { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Zürich' } },
            ],
          },
        },
        { message: { text: 'It is 21 °C in Zürich.' } },
      );
      const underTest = model();
      const first = await underTest.generate(ask('Weather in Zürich?', { tools: [WEATHER_TOOL] }));
      expect(first.stopReason).toBe('tool_use');
      expect(toolUses(first)).toEqual([
        { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Zürich' } },
      ]);
      expect(first.text).toBe('Let me check.');
      const conversation: LanguageModelMessage[] = [
        { role: 'user', content: 'Weather in Zürich?' },
        { role: 'assistant', content: first.content! },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 'toolu_01', content: '{"celsius":21}' }] },
      ];
      const second = await underTest.generate({ messages: conversation, maxOutputTokens: 64, tools: [WEATHER_TOOL] });
      expect(second.text).toBe('It is 21 °C in Zürich.');
      expect(second.stopReason).toBe('end');
      expect(server.requests[0]!.summary!.tools).toEqual(['get_weather']);
      expect(server.requests[1]!.summary!.messages).toEqual(conversation);
    },
  },
  {
    name: 'sends a forced tool choice: one named tool, or any tool',
    async run({ server, model }) {
      server.script(
        { message: { content: [{ type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Oslo' } }] } },
        { message: { content: [{ type: 'tool_use', id: 'toolu_03', name: 'get_weather', input: { city: 'Lima' } }] } },
      );
      const underTest = model();
      await underTest.generate(ask('Oslo?', { tools: [WEATHER_TOOL], toolChoice: { name: 'get_weather' } }));
      await underTest.generate(ask('Lima?', { tools: [WEATHER_TOOL], toolChoice: 'any' }));
      expect(server.requests.map((request) => request.summary!.toolChoice)).toEqual(['tool:get_weather', 'any']);
    },
  },
  {
    name: 'keeps the system prefix byte-identical across requests and marks the cached block where the provider supports it',
    async run({ server, model, capabilities }) {
      const stable = 'You are engram. The memory index:\n- user prefers tabs';
      const underTest = model();
      for (const dynamic of [
        '<memory_context>first</memory_context>',
        '<memory_context>second, longer</memory_context>',
      ]) {
        await underTest.generate(ask('Hi', { system: [{ text: stable, cache: true }, { text: dynamic }] }));
      }
      const [first, second] = server.requests.map((request) => request.rawBody);
      const end = (raw: string): number =>
        raw.indexOf(JSON.stringify(stable).slice(1, -1)) + JSON.stringify(stable).length - 2;
      expect(end(first!)).toBeGreaterThan(0);
      expect(first!.slice(0, end(first!))).toBe(second!.slice(0, end(second!)));
      expect(server.requests[1]!.summary!.system).toBe(`${stable}\n\n<memory_context>second, longer</memory_context>`);
      expect(server.requests[0]!.summary!.cachedSystemBlocks).toEqual(capabilities.explicitCacheMarks ? [stable] : []);
    },
  },
  {
    name: 'returns JSON when asked, unwrapping a Markdown code fence',
    async run({ server, model }) {
      server.script(
        { message: { text: '{"selected":["m1a2b3c"]}' } },
        { message: { text: '```json\n["a", "b"]\n```' } },
      );
      const underTest = model();
      const plain = await underTest.generate(ask('Pick memories.', { responseFormat: 'json', system: 'Choose.' }));
      expect(JSON.parse(plain.text)).toEqual({ selected: ['m1a2b3c'] });
      const fenced = await underTest.generate(ask('Pick memories.', { responseFormat: 'json' }));
      expect(JSON.parse(fenced.text)).toEqual(['a', 'b']);
      expect(fenced.content).toEqual([{ type: 'text', text: fenced.text }]);
      // The request says so in words (the cached prefix stays as it was), and in the native mode where there is one.
      expect(server.requests[0]!.summary!.system.startsWith('Choose.')).toBe(true);
      expect(server.requests[0]!.summary!.system).toMatch(/JSON/);
    },
  },
  {
    name: 'refuses prose where JSON was asked for with MODEL_OUTPUT_INVALID, keeping the raw text for repair',
    async run({ server, model }) {
      server.script({ message: { text: 'Sure! Here are the memories: [{"name": "tabs"', stopReason: 'max_tokens' } });
      const error = await expectEngramError(
        model().generate(ask('Extract.', { responseFormat: 'json' })),
        'MODEL_OUTPUT_INVALID',
      );
      expect(error.details).toMatchObject({
        text: 'Sure! Here are the memories: [{"name": "tabs"',
        stopReason: 'max_tokens',
      });
      expect(error.message).toMatch(/output token limit/);
      expect(server.requests).toHaveLength(1);
    },
  },
  {
    name: 'reports usage as the provider counted it, cache reads and writes included',
    async run({ server, model, capabilities }) {
      server.script({
        message: {
          text: 'ok',
          usage: { inputTokens: 120, outputTokens: 7, cacheReadTokens: 900, cacheWriteTokens: 64 },
        },
      });
      const response = await model().generate(ask('Count.'));
      expect(response.usage).toEqual({
        inputTokens: 120,
        outputTokens: 7,
        cacheReadTokens: 900,
        ...(capabilities.reportsCacheWrites && { cacheWriteTokens: 64 }),
      });
    },
  },
  {
    name: 'reports prompt-cache reads when a long prefix repeats, and fewer uncached input tokens',
    async run({ server, model, capabilities }) {
      const underTest = model();
      const system = [{ text: stableText(8_000), cache: true }, { text: 'Today is Monday.' }];
      const first = await underTest.generate(ask('First question?', { system }));
      const second = await underTest.generate(ask('Second question, a little longer?', { system }));
      expect(first.usage.cacheReadTokens ?? 0).toBe(0);
      if (capabilities.reportsCacheWrites) expect(first.usage.cacheWriteTokens).toBeGreaterThan(1_000);
      expect(second.usage.cacheReadTokens).toBeGreaterThanOrEqual(1_024);
      expect(second.usage.inputTokens).toBeLessThan(first.usage.inputTokens + (first.usage.cacheWriteTokens ?? 0));
      expect(server.requests).toHaveLength(2);
    },
  },
  {
    name: 'maps stop reasons: the output cap is max_tokens',
    async run({ server, model }) {
      server.script({ message: { text: 'The answer was cut', stopReason: 'max_tokens' } });
      const response = await model().generate(ask('Long answer please.', { maxOutputTokens: 5 }));
      expect(response).toMatchObject({ text: 'The answer was cut', stopReason: 'max_tokens' });
    },
  },
  {
    name: 'carries hostile text unchanged both ways: NUL, emoji, lone surrogates, right-to-left marks, 2 MB',
    async run({ server, model }) {
      const hostile =
        'nul:\u0000 emoji:👩‍💻🧠 lone:\ud800 rtl:\u202eabc\u202c quote:" backslash:\\ </memory_context> {"json":1}';
      const huge = `${hostile}\n${'x'.repeat(2 * 1024 * 1024)}`;
      server.script({ message: { text: hostile } });
      const underTest = model();
      const response = await underTest.generate(ask(huge, { system: hostile }));
      expect(response.text).toBe(hostile);
      const sent = server.requests[0]!;
      expect(sent.bytes).toBeGreaterThan(2 * 1024 * 1024);
      expect(sent.summary!.messages).toEqual([{ role: 'user', content: huge }]);
      expect(sent.summary!.system).toBe(hostile);
    },
  },
];
