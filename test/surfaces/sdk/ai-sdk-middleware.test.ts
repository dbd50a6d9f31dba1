import { generateText, jsonSchema, simulateReadableStream, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngramError } from '../../../src/kernel/errors.js';
import { engramMiddleware } from '../../../src/surfaces/sdk/ai-sdk-middleware.js';
import {
  DEPLOY_FACT,
  DEPLOY_QUESTION,
  openMemoryFolder,
  type MemoryFolder,
} from '../../support/with-memory-support.js';

// The inner model is the AI SDK's own test model (no @ai-sdk provider is installed); everything of
// engram's is real: the SQLite store, recall, injection and the extraction queue.
const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const STOP = { unified: 'stop' as const, raw: 'stop' };

let folder: MemoryFolder;
const middlewares: Array<ReturnType<typeof engramMiddleware>> = [];

beforeEach(async () => {
  folder = await openMemoryFolder();
  await folder.seed([DEPLOY_FACT]);
});

afterEach(async () => {
  for (const middleware of middlewares.splice(0)) await middleware.memory.close();
  await folder.close();
});

function middleware(options = folder.options()) {
  const made = engramMiddleware(options);
  middlewares.push(made);
  return made;
}

function textModel(text = 'OK') {
  return new MockLanguageModelV3({
    doGenerate: async () => ({ content: [{ type: 'text', text }], finishReason: STOP, usage: USAGE, warnings: [] }),
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't1' },
          ...text.split(' ').map((word, index) => ({
            type: 'text-delta' as const,
            id: 't1',
            delta: index === 0 ? word : ` ${word}`,
          })),
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason: STOP, usage: USAGE },
        ],
      }),
    }),
  });
}

function systemOf(prompt: ReadonlyArray<{ role: string; content: unknown }>): string {
  const first = prompt[0];
  return first?.role === 'system' ? String(first.content) : '';
}

describe('engramMiddleware with wrapLanguageModel', () => {
  it('generateText: the fact reaches the model, the static part first and the block after the user system prompt', async () => {
    const inner = textModel();
    const model = wrapLanguageModel({ model: inner, middleware: middleware() });
    const { text } = await generateText({ model, system: 'You are terse.', prompt: DEPLOY_QUESTION });
    expect(text).toBe('OK');
    const system = systemOf(inner.doGenerateCalls[0]!.prompt);
    expect(system.startsWith('# Long-term memory')).toBe(true);
    expect(system).toContain('Frankfurt');
    expect(system.lastIndexOf('<memory_context>')).toBeGreaterThan(system.indexOf('You are terse.'));
  });

  it('streamText: deltas arrive one by one, and a "remember that …" turn is in the store after flush()', async () => {
    const inner = textModel('Noted: staging runs Postgres 15.');
    const made = middleware();
    const model = wrapLanguageModel({ model: inner, middleware: made });
    const result = streamText({ model, prompt: 'Remember that the staging database runs Postgres 15.' });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas).toEqual(['Noted:', ' staging', ' runs', ' Postgres', ' 15.']);
    await made.memory.flush();
    expect(await folder.contents()).toContain('The staging database runs Postgres 15.');
    expect(inner.doStreamCalls).toHaveLength(1);
  });

  it('keeps the prompt bytes before <memory_context> identical from turn to turn', async () => {
    const inner = textModel();
    const model = wrapLanguageModel({ model: inner, middleware: middleware() });
    await generateText({ model, system: 'You are the ops assistant.', prompt: DEPLOY_QUESTION });
    await generateText({ model, system: 'You are the ops assistant.', prompt: 'Which API region is it?' });
    const before = (index: number) => {
      const system = systemOf(inner.doGenerateCalls[index]!.prompt);
      return system.slice(0, system.lastIndexOf('<memory_context>'));
    };
    expect(before(0).length).toBeGreaterThan(100);
    expect(before(1)).toBe(before(0));
  });

  it('a tool loop runs unchanged; its turn is queued once, with the final answer', async () => {
    let call = 0;
    const inner = new MockLanguageModelV3({
      doGenerate: async () => {
        call += 1;
        if (call === 1)
          return {
            content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: '{"city":"Frankfurt"}' }],
            finishReason: { unified: 'tool-calls', raw: 'tool_use' },
            usage: USAGE,
            warnings: [],
          };
        return {
          content: [{ type: 'text', text: 'Sunny in Frankfurt.' }],
          finishReason: STOP,
          usage: USAGE,
          warnings: [],
        };
      },
    });
    const model = wrapLanguageModel({ model: inner, middleware: middleware() });
    const { text } = await generateText({
      model,
      prompt: `${DEPLOY_QUESTION} And the weather?`,
      stopWhen: stepCountIs(3),
      tools: {
        weather: tool({
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
          execute: async ({ city }) => `sunny in ${city}`,
        }),
      },
    });
    expect(text).toBe('Sunny in Frankfurt.');
    expect(inner.doGenerateCalls).toHaveLength(2);
    expect(inner.doGenerateCalls[1]!.tools?.map((entry) => entry.name)).toEqual(['weather']);
    expect(systemOf(inner.doGenerateCalls[1]!.prompt)).toBe(systemOf(inner.doGenerateCalls[0]!.prompt));
    await middlewares[0]!.memory.flush();
    const types = folder.events.map((event) => event.type);
    expect(types.filter((type) => type === 'extraction-deferred')).toHaveLength(1);
    expect(types.filter((type) => type === 'extraction-queued')).toHaveLength(1);
    const [job] = await folder.jobs();
    expect(JSON.stringify((job!.payload as { messages: unknown }).messages)).not.toContain('memory_context');
  });

  it('fails open: a corrupt store leaves the prompt as it was and says why', async () => {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(folder.store, 'not a database'.repeat(100));
    const inner = textModel();
    const model = wrapLanguageModel({ model: inner, middleware: middleware() });
    const { text } = await generateText({ model, prompt: DEPLOY_QUESTION });
    expect(text).toBe('OK');
    expect(systemOf(inner.doGenerateCalls[0]!.prompt)).toBe('');
    expect(folder.events.map((event) => event.type)).toContain('memory-unavailable');
  });

  it('refuses bad options when it is made', () => {
    expect(() => engramMiddleware({ maxTokens: -5 })).toThrow(EngramError);
    expect(() => engramMiddleware({ scopes: ['nope:'] })).toThrow(EngramError);
  });
});
