import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, wrapLanguageModel } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { engramMiddleware } from '../../../src/surfaces/sdk/ai-sdk-middleware.js';
import type { WithMemoryEvent } from '../../../src/surfaces/sdk/client-memory-options.js';
import { chooseExtractionModel } from '../../../src/surfaces/sdk/extraction-model-choice.js';
import { withMemory } from '../../../src/surfaces/sdk/with-memory.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type {
  LanguageModelServer,
  ModelServerResponder,
  RecordedModelRequest,
} from '../../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../../src/testing/openai-chat-completions-server.js';
import { runEngram } from '../../support/cli-harness.js';
import { openMemoryFolder, type MemoryFolder } from '../../support/with-memory-support.js';

// Which model extracts a wrapped client's turns, with the real SDKs against loopback servers of both
// wires: the wrapped client's own provider, endpoint and key unless the settings name a provider;
// what was chosen is an event and a line of `engram status`, and so is why there is none.

const TURN = 'We decided to deploy the API to Frankfurt from now on.';
/** An extraction call (its prompt, on either wire) gets an empty list; the wrapped calls get a plain answer. */
const isExtraction = (request: RecordedModelRequest): boolean =>
  /extract long-term memories/.test(request.summary?.system ?? '');
const ANSWERS: ModelServerResponder = (request) =>
  isExtraction(request) ? { message: { text: '[]' } } : { message: { text: 'Noted.' } };

let folder: MemoryFolder;
let anthropicServer: LanguageModelServer;
let openaiServer: LanguageModelServer;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  folder = await openMemoryFolder();
  anthropicServer = await startAnthropicMessagesServer({ respond: ANSWERS });
  openaiServer = await startOpenAiChatCompletionsServer({ respond: ANSWERS });
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await anthropicServer.close();
  await openaiServer.close();
  await folder.close();
});

/** The folder's options with these environment variables instead of ENGRAM_MODEL_PROVIDER=none. */
function options(env: Record<string, string>) {
  return folder.options({ env: { ENGRAM_HOME: folder.env.ENGRAM_HOME!, ...env } });
}

const extractionRequests = (server: LanguageModelServer) => server.requests.filter(isExtraction);

function chosen(events: readonly WithMemoryEvent[]) {
  return events.find((event) => event.type === 'extraction-model-chosen' || event.type === 'extraction-model-missing');
}

async function openaiTurn(env: Record<string, string>, model = 'gpt-test', content = TURN) {
  const client = withMemory(
    new OpenAI({ apiKey: 'openai-test-key', baseURL: openaiServer.url, maxRetries: 0 }),
    options(env),
  );
  closers.push(() => client.memory.close());
  await client.chat.completions.create({ model, messages: [{ role: 'user', content }] });
  await client.memory.flush();
}

async function anthropicTurn(env: Record<string, string>) {
  const client = withMemory(
    new Anthropic({ apiKey: 'anthropic-test-key', baseURL: anthropicServer.url, maxRetries: 0 }),
    options(env),
  );
  closers.push(() => client.memory.close());
  await client.messages.create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: TURN }] });
  await client.memory.flush();
}

/** The `wrapped clients` line of `engram status` for the folder's store. */
async function statusLine(): Promise<string> {
  const status = await runEngram(['status', '--store', folder.store], {
    cwd: folder.directory,
    home: folder.env.ENGRAM_HOME!,
  });
  return /wrapped clients\s+(.*)/.exec(status.stdout)?.[1] ?? `no wrapped clients line in: ${status.stdout}`;
}

describe('the model that extracts a wrapped client’s turns', () => {
  it('an OpenAI client with both providers’ keys set: its own endpoint, key and model, not Anthropic', async () => {
    await openaiTurn({
      ANTHROPIC_API_KEY: 'anthropic-env-key',
      ANTHROPIC_BASE_URL: anthropicServer.url,
      OPENAI_API_KEY: 'openai-env-key',
    });
    expect(extractionRequests(anthropicServer)).toEqual([]);
    const [request] = extractionRequests(openaiServer);
    expect(request).toBeDefined();
    expect(request!.headers.authorization).toBe('Bearer openai-test-key');
    expect(request!.summary!.model).toBe('gpt-test');
    expect(chosen(folder.events)).toMatchObject({
      type: 'extraction-model-chosen',
      provider: 'openai-compatible',
      model: 'gpt-test',
      endpoint: new URL(openaiServer.url).origin,
      chosenBy: expect.stringMatching(/wrapped OpenAI client/),
    });
    // What and why: the provider, model and endpoint, chosen by the wrapped client (the model its calls use).
    expect(await statusLine()).toMatch(
      new RegExp(
        `^extraction: openai-compatible gpt-test at ${new URL(openaiServer.url).origin}, chosen by the wrapped OpenAI client \\(the model its calls use\\)`,
      ),
    );
  });

  it('only OPENAI_BASE_URL set (a local server, no model id): the model the wrapped calls use, said in the event', async () => {
    await openaiTurn({ OPENAI_BASE_URL: openaiServer.url }, 'llama3.1');
    expect(extractionRequests(openaiServer).map((request) => request.summary!.model)).toEqual(['llama3.1']);
    expect(chosen(folder.events)).toMatchObject({
      provider: 'openai-compatible',
      model: 'llama3.1',
      endpoint: new URL(openaiServer.url).origin,
    });
    expect(await statusLine()).toMatch(
      /^extraction: openai-compatible llama3\.1 at http:\/\/127\.0\.0\.1:\d+, chosen by the wrapped OpenAI client \(the model its calls use\)/,
    );
  });

  it('the wrapped client’s endpoint, not OPENAI_BASE_URL’s, when they differ; both keys set; status says which', async () => {
    const elsewhere = await startOpenAiChatCompletionsServer({ respond: ANSWERS });
    closers.push(() => elsewhere.close());
    await openaiTurn(
      {
        OPENAI_BASE_URL: elsewhere.url,
        OPENAI_API_KEY: 'openai-env-key',
        ANTHROPIC_API_KEY: 'anthropic-env-key',
        ANTHROPIC_BASE_URL: anthropicServer.url,
      },
      'qwen2.5-coder',
    );
    expect(extractionRequests(elsewhere)).toEqual([]);
    expect(extractionRequests(anthropicServer)).toEqual([]);
    const [request] = extractionRequests(openaiServer);
    expect(request!.headers.authorization).toBe('Bearer openai-test-key');
    expect(request!.summary!.model).toBe('qwen2.5-coder');
    expect(await statusLine()).toContain(`openai-compatible qwen2.5-coder at ${new URL(openaiServer.url).origin}`);
  });

  it('the AI SDK middleware with only OPENAI_BASE_URL: the OpenAI endpoint with the model its calls use, said in status', async () => {
    const middleware = engramMiddleware(options({ OPENAI_BASE_URL: openaiServer.url }));
    closers.push(() => middleware.memory.close());
    const provider = createOpenAI({ apiKey: 'openai-env-key', baseURL: openaiServer.url });
    const model = wrapLanguageModel({ model: provider.chat('mistral-small'), middleware });
    await generateText({ model, prompt: TURN });
    await middleware.memory.flush();
    expect(extractionRequests(openaiServer).map((request) => request.summary!.model)).toEqual(['mistral-small']);
    expect(chosen(folder.events)).toMatchObject({ type: 'extraction-model-chosen', provider: 'openai-compatible' });
    expect(await statusLine()).toMatch(
      /^extraction: openai-compatible mistral-small at http:\/\/127\.0\.0\.1:\d+, chosen by/,
    );
  });

  it('an Anthropic client with only an OpenAI key in the environment: the Anthropic client’s own key and endpoint', async () => {
    await anthropicTurn({ OPENAI_API_KEY: 'openai-env-key', OPENAI_BASE_URL: openaiServer.url });
    expect(extractionRequests(openaiServer)).toEqual([]);
    const [request] = extractionRequests(anthropicServer);
    expect(JSON.stringify(request!.headers)).toContain('anthropic-test-key');
    expect(request!.summary!.model).toBe('claude-test');
    expect(chosen(folder.events)).toMatchObject({ provider: 'anthropic', model: 'claude-test' });
  });

  it('a provider the settings name wins over the client’s', async () => {
    await openaiTurn({
      ENGRAM_MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'anthropic-env-key',
      ANTHROPIC_BASE_URL: anthropicServer.url,
      ENGRAM_SIDE_MODEL: 'claude-side',
    });
    expect(extractionRequests(openaiServer)).toEqual([]);
    expect(extractionRequests(anthropicServer).map((request) => request.summary!.model)).toEqual(['claude-side']);
    expect(chosen(folder.events)).toMatchObject({
      provider: 'anthropic',
      chosenBy: expect.stringMatching(/model.provider/),
    });
  });

  it('no model to be had: the event says why, and engram status says which model the wrapped clients use', async () => {
    await openaiTurn({ ENGRAM_MODEL_PROVIDER: 'none' });
    expect(extractionRequests(openaiServer)).toEqual([]);
    expect(chosen(folder.events)).toMatchObject({
      type: 'extraction-model-missing',
      reason: expect.stringMatching(/model.provider is none.*explicit/),
    });
    const status = await runEngram(['status', '--store', folder.store], {
      cwd: folder.directory,
      home: folder.env.ENGRAM_HOME!,
    });
    expect(status.stdout).toMatch(/wrapped clients\s+extraction: none: model.provider is none/);

    await openaiTurn({ OPENAI_BASE_URL: openaiServer.url }, 'gpt-test', 'Staging moves to Dublin next week.');
    const after = await runEngram(['status', '--store', folder.store], {
      cwd: folder.directory,
      home: folder.env.ENGRAM_HOME!,
    });
    expect(after.stdout).toMatch(
      /wrapped clients\s+extraction: openai-compatible gpt-test at http:\/\/127\.0\.0\.1:\d+/,
    );
  });

  it('the AI SDK middleware: the provider of the wrapped model, with the engram settings of that provider', async () => {
    const middleware = engramMiddleware(
      options({
        ANTHROPIC_API_KEY: 'anthropic-env-key',
        ANTHROPIC_BASE_URL: anthropicServer.url,
        OPENAI_BASE_URL: openaiServer.url,
        OPENAI_API_KEY: 'openai-env-key',
      }),
    );
    closers.push(() => middleware.memory.close());
    const provider = createOpenAI({ apiKey: 'openai-env-key', baseURL: openaiServer.url });
    const model = wrapLanguageModel({ model: provider.chat('gpt-test'), middleware });
    await generateText({ model, prompt: TURN });
    await middleware.memory.flush();
    expect(extractionRequests(anthropicServer)).toEqual([]);
    expect(extractionRequests(openaiServer).map((request) => request.summary!.model)).toEqual(['gpt-test']);
  });
});

describe('chooseExtractionModel', () => {
  const settings = DEFAULT_SETTINGS.model;
  it('on the provider’s own API: its cheap side model, with the client’s key', () => {
    expect(
      chooseExtractionModel({
        settings,
        client: { provider: 'anthropic', baseUrl: 'https://api.anthropic.com', apiKey: 'k', from: 'the client' },
        callModel: 'claude-opus-x',
      }),
    ).toMatchObject({ provider: 'anthropic', model: 'claude-haiku-5-5', endpoint: 'https://api.anthropic.com' });
    expect(
      chooseExtractionModel({
        settings: { ...settings, sideModel: 'gpt-cheap' },
        client: { provider: 'openai', baseUrl: 'https://api.openai.com/v1', apiKey: 'k', from: 'the client' },
      }),
    ).toMatchObject({ provider: 'openai-compatible', model: 'gpt-cheap' });
  });

  it('says why when it cannot choose: no key for the official API, no model id for another server', () => {
    expect(
      chooseExtractionModel({
        settings,
        client: { provider: 'openai', baseUrl: 'https://api.openai.com/v1', from: 'the client' },
      }),
    ).toMatchObject({ provider: 'none', reason: expect.stringMatching(/no API key/) });
    expect(
      chooseExtractionModel({
        settings,
        client: { provider: 'openai', baseUrl: 'http://localhost:11434/v1', from: 'the client' },
      }),
    ).toMatchObject({ provider: 'none', reason: expect.stringMatching(/ENGRAM_SIDE_MODEL/) });
    expect(chooseExtractionModel({ settings: { ...settings, provider: 'openai-compatible' } })).toMatchObject({
      provider: 'none',
      reason: expect.stringMatching(/OPENAI_API_KEY/),
    });
  });
});
