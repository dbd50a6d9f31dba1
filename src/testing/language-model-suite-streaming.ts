import { expect } from 'vitest';
import type { LanguageModelRequest, LanguageModelResponse } from '../contracts/language-model.js';
import { WEATHER_TOOL, expectEngramError } from './language-model-suite-exchange.js';
import type { LanguageModelSuiteCase } from './language-model-suite-case.js';

const ask = (text: string, extra: Partial<LanguageModelRequest> = {}): LanguageModelRequest => ({
  messages: [{ role: 'user', content: text }],
  maxOutputTokens: 256,
  ...extra,
});

/** Collects the deltas of one streamed call. */
function collector(): { deltas: string[]; onTextDelta: (text: string) => void; first: Promise<string> } {
  const deltas: string[] = [];
  let resolveFirst: (text: string) => void = () => undefined;
  const first = new Promise<string>((resolve) => {
    resolveFirst = resolve;
  });
  return {
    deltas,
    first,
    onTextDelta: (text) => {
      deltas.push(text);
      if (deltas.length === 1) resolveFirst(text);
    },
  };
}

/** The answer without the parts that differ by design between two calls (none but usage's cache split). */
const shape = (response: LanguageModelResponse): unknown => ({
  text: response.text,
  content: response.content,
  stopReason: response.stopReason,
  outputTokens: response.usage.outputTokens,
});

const LONG_ANSWER = 'Streaming sends the answer in pieces as the model writes it, so a terminal can show it at once. ';

async function settledState(promise: Promise<unknown>): Promise<'pending' | 'settled'> {
  const marker = Symbol('pending');
  const winner = await Promise.race([
    promise.then(
      () => 'settled' as const,
      () => 'settled' as const,
    ),
    Promise.resolve(marker),
  ]);
  return winner === marker ? 'pending' : 'settled';
}

export const languageModelStreamingCases: readonly LanguageModelSuiteCase[] = [
  {
    name: 'streams text: the deltas join to the same answer as without streaming, with usage',
    async run({ server, model }) {
      const text = LONG_ANSWER.repeat(4) + 'Zürich 🌍 done.';
      server.script({ message: { text } }, { message: { text } });
      const underTest = model();
      const plain = await underTest.generate(ask('Explain streaming.'));
      const stream = collector();
      const streamed = await underTest.generate(ask('Explain streaming.', { onTextDelta: stream.onTextDelta }));
      expect(shape(streamed)).toEqual(shape(plain));
      expect(stream.deltas.join('')).toBe(text);
      expect(stream.deltas.length).toBeGreaterThan(3);
      expect(streamed.usage.inputTokens).toBeGreaterThan(0);
      expect(streamed.usage.inputTokens + (streamed.usage.cacheReadTokens ?? 0)).toBe(
        plain.usage.inputTokens + (plain.usage.cacheReadTokens ?? 0),
      );
      expect(server.requests.map((request) => request.summary?.stream)).toEqual([false, true]);
      // The streamed request is the same request otherwise.
      expect(server.requests[1]!.summary!.messages).toEqual(server.requests[0]!.summary!.messages);
    },
  },
  {
    name: 'streams a tool call: the tool_use block comes back whole, text before it streamed',
    async run({ server, model }) {
      const content = [
        { type: 'text' as const, text: 'Let me look that up for you.' },
        {
          type: 'tool_use' as const,
          id: 'toolu_s1',
          name: 'get_weather',
          input: { city: 'Zürich', details: { hourly: true, days: [1, 2, 3] } },
        },
      ];
      server.script({ message: { content } }, { message: { content } });
      const underTest = model();
      const plain = await underTest.generate(ask('Weather?', { tools: [WEATHER_TOOL] }));
      const stream = collector();
      const streamed = await underTest.generate(
        ask('Weather?', { tools: [WEATHER_TOOL], onTextDelta: stream.onTextDelta }),
      );
      expect(streamed.content).toEqual(plain.content);
      expect(streamed.stopReason).toBe('tool_use');
      expect(stream.deltas.join('')).toBe('Let me look that up for you.');
    },
  },
  {
    name: 'delivers text before the answer is complete; an abort mid-stream rejects with MODEL_ABORTED and shows nothing more',
    async run({ server, model }) {
      server.script({ message: { text: LONG_ANSWER.repeat(3) }, streamBreak: { afterTextDeltas: 2, then: 'hang' } });
      const controller = new AbortController();
      const stream = collector();
      const pending = model().generate(ask('Go on.', { onTextDelta: stream.onTextDelta, signal: controller.signal }));
      await stream.first;
      expect(await settledState(pending)).toBe('pending');
      controller.abort(new Error('Ctrl-C'));
      const error = await expectEngramError(pending, 'MODEL_ABORTED');
      expect((error.cause as Error).message).toBe('Ctrl-C');
      const shown = stream.deltas.length;
      expect(shown).toBeGreaterThanOrEqual(1);
      expect(shown).toBeLessThanOrEqual(2);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(stream.deltas).toHaveLength(shown);
      expect(server.requests).toHaveLength(1);
    },
  },
  {
    name: 'a stream that fails after text was shown is MODEL_UNAVAILABLE at once (not retried, so nothing repeats)',
    async run({ server, model, waits }) {
      server.script(
        {
          message: { text: LONG_ANSWER.repeat(2) },
          streamBreak: { afterTextDeltas: 2, then: { error: { kind: 'overloaded' } } },
        },
        { message: { text: LONG_ANSWER.repeat(2) }, streamBreak: { afterTextDeltas: 1, then: 'destroy' } },
      );
      for (const expected of [2, 1]) {
        const stream = collector();
        const error = await expectEngramError(
          model().generate(ask('Go.', { onTextDelta: stream.onTextDelta })),
          'MODEL_UNAVAILABLE',
        );
        expect(error.message).toMatch(/broke off a streamed answer/);
        expect(error.details).toMatchObject({ partial: true });
        expect(stream.deltas).toHaveLength(expected);
      }
      expect(server.requests).toHaveLength(2);
      expect(waits).toEqual([]);
    },
  },
  {
    name: 'a stream that fails before any text is retried like any overloaded answer or dropped connection',
    async run({ server, model, waits }) {
      server.script(
        { message: { text: 'lost' }, streamBreak: { afterTextDeltas: 0, then: { error: { kind: 'overloaded' } } } },
        { message: { text: 'lost' }, streamBreak: { afterTextDeltas: 0, then: 'destroy' } },
        { message: { text: 'Third time lucky.' } },
      );
      const stream = collector();
      const response = await model().generate(ask('Go.', { onTextDelta: stream.onTextDelta }));
      expect(response.text).toBe('Third time lucky.');
      expect(stream.deltas.join('')).toBe('Third time lucky.');
      expect(server.requests).toHaveLength(3);
      expect(waits).toHaveLength(2);
    },
  },
  {
    name: 'a stream that stalls mid-answer ends with MODEL_TIMEOUT within the call budget',
    async run({ server, model }) {
      server.script({ message: { text: LONG_ANSWER.repeat(2) }, streamBreak: { afterTextDeltas: 1, then: 'hang' } });
      const stream = collector();
      await expectEngramError(
        model({ timeoutMs: 400 }).generate(ask('Go.', { onTextDelta: stream.onTextDelta })),
        'MODEL_TIMEOUT',
      );
      expect(stream.deltas).toHaveLength(1);
    },
  },
  {
    name: 'context editing: sent and reported where the provider edits server-side, otherwise left out',
    async run({ server, model, capabilities }) {
      const contextEdits = [{ type: 'clear_tool_uses_20250919', clearedToolUses: 4, clearedInputTokens: 51_200 }];
      server.script(
        { message: { text: 'edited', contextEdits } },
        { message: { text: 'edited, streamed', contextEdits } },
        { message: { text: 'plain' } },
      );
      const contextEditing = {
        clearToolUses: {
          triggerInputTokens: 30_000,
          keepToolUses: 3,
          clearAtLeastTokens: 5_000,
          excludeTools: ['memory'],
          clearToolInputs: false,
        },
      };
      const underTest = model();
      const plain = await underTest.generate(ask('Hi', { contextEditing }));
      const stream = collector();
      const streamed = await underTest.generate(ask('Hi', { contextEditing, onTextDelta: stream.onTextDelta }));
      const without = await underTest.generate(ask('Hi'));
      expect(stream.deltas.join('')).toBe('edited, streamed');
      expect(without.contextEdits ?? []).toEqual([]);
      const bodies = server.requests.map((request) => request.body as Record<string, unknown>);
      expect(bodies[2]!.context_management).toBeUndefined();
      if (capabilities.serverContextEditing) {
        for (const response of [plain, streamed]) expect(response.contextEdits).toEqual(contextEdits);
        for (const body of bodies.slice(0, 2)) {
          expect(body.context_management).toEqual({
            edits: [
              {
                type: 'clear_tool_uses_20250919',
                trigger: { type: 'input_tokens', value: 30_000 },
                keep: { type: 'tool_uses', value: 3 },
                clear_at_least: { type: 'input_tokens', value: 5_000 },
                exclude_tools: ['memory'],
                clear_tool_inputs: false,
              },
            ],
          });
        }
      } else {
        for (const response of [plain, streamed]) expect(response.contextEdits ?? []).toEqual([]);
        for (const body of bodies) expect(body.context_management).toBeUndefined();
      }
    },
  },
  {
    name: 'refuses a malformed onTextDelta or contextEditing with MODEL_REQUEST_INVALID before sending anything',
    async run({ server, model }) {
      const underTest = model();
      const bad: Array<Partial<Record<keyof LanguageModelRequest, unknown>>> = [
        { onTextDelta: 'print' },
        { contextEditing: null },
        { contextEditing: { clearToolUses: 'all' } },
        { contextEditing: { clearToolUses: { keepToolUses: -1 } } },
        { contextEditing: { clearToolUses: { triggerInputTokens: 1.5 } } },
        { contextEditing: { clearToolUses: { excludeTools: 'memory' } } },
        { contextEditing: { clearToolUses: { excludeTools: ['../etc'] } } },
        { contextEditing: { clearToolUses: { clearToolInputs: 'yes' } } },
      ];
      for (const extra of bad) {
        const error = await expectEngramError(
          underTest.generate({ ...ask('x'), ...extra } as LanguageModelRequest),
          'MODEL_REQUEST_INVALID',
        );
        expect(error.message).toMatch(/Nothing was sent/);
      }
      expect(server.requests).toHaveLength(0);
    },
  },
];
