import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../../src/adapters/models/anthropic-language-model.js';
import {
  MODEL_OFFLINE_NOTICE,
  createLanguageModel,
  selectLanguageModel,
} from '../../../src/adapters/models/create-language-model.js';
import { OpenAiCompatibleLanguageModel } from '../../../src/adapters/models/openai-compatible-language-model.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { SETTING_DEFINITIONS, type Settings } from '../../../src/kernel/settings.js';
import { openEngram } from '../../../src/node.js';
import { ScriptedLanguageModel } from '../../../src/testing/index.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../../src/testing/openai-chat-completions-server.js';
import { expectEngramErrorSync } from '../../support/expect-engram-error.js';
import { settingsFromEnv, useProjectFolders } from '../../support/project-folders.js';

/** A fresh ENGRAM_HOME and git project, removed after the test (after the cleanups below). */
const workspace = useProjectFolders('engram-models-');
const settingsFrom = (env: Record<string, string>): Settings => settingsFromEnv(workspace, env);

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const configError = (action: () => unknown): EngramError => expectEngramErrorSync(action, 'CONFIG_INVALID');

/** The notices given while choosing a model for `env`, which must choose none (engram stays offline). */
function offlineNotices(env: Record<string, string>): string[] {
  const notices: string[] = [];
  expect(createLanguageModel(settingsFrom(env), { onNotice: (notice) => notices.push(notice) })).toBeUndefined();
  return notices;
}

async function anthropicServer(
  options: Parameters<typeof startAnthropicMessagesServer>[0] = {},
): Promise<LanguageModelServer> {
  const server = await startAnthropicMessagesServer(options);
  cleanups.push(() => server.close());
  return server;
}

describe('choosing the language model from settings and environment', () => {
  it('with nothing configured there is no model, and the offline notice comes exactly once', () => {
    const notices = offlineNotices({});
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain(MODEL_OFFLINE_NOTICE);
    expect(notices[0]).toMatch(/ANTHROPIC_API_KEY/);
    expect(selectLanguageModel(settingsFrom({}))).toMatchObject({ provider: 'none' });
  });

  it('ANTHROPIC_API_KEY selects Anthropic: the capable model for main work, the cheap one for side queries', () => {
    const settings = settingsFrom({ ANTHROPIC_API_KEY: 'sk-ant-1' });
    const notices: string[] = [];
    const main = createLanguageModel(settings, { onNotice: (notice) => notices.push(notice) });
    const side = createLanguageModel(settings, { purpose: 'side' });
    expect(main).toBeInstanceOf(AnthropicLanguageModel);
    expect([main!.provider, main!.modelId, side!.modelId]).toEqual([
      'anthropic',
      'claude-sonnet-5-5',
      'claude-haiku-5-5',
    ]);
    expect(notices).toEqual([]);
    expect(selectLanguageModel(settings)).toMatchObject({ chosenBy: expect.stringMatching(/ANTHROPIC_API_KEY/) });
  });

  it('OPENAI_API_KEY alone selects OpenAI; with both keys Anthropic comes first unless ENGRAM_MODEL_PROVIDER says otherwise', () => {
    const openai = createLanguageModel(settingsFrom({ OPENAI_API_KEY: 'sk-1' }), { purpose: 'side' });
    expect(openai).toBeInstanceOf(OpenAiCompatibleLanguageModel);
    expect(openai!.modelId).toBe('gpt-5.4-mini');
    expect(createLanguageModel(settingsFrom({ OPENAI_API_KEY: 'sk-1', ANTHROPIC_API_KEY: 'sk-ant-1' }))!.provider).toBe(
      'anthropic',
    );
    const chosen = createLanguageModel(
      settingsFrom({
        OPENAI_API_KEY: 'sk-1',
        ANTHROPIC_API_KEY: 'sk-ant-1',
        ENGRAM_MODEL_PROVIDER: 'openai-compatible',
      }),
    );
    expect([chosen!.provider, chosen!.modelId]).toEqual(['openai-compatible', 'gpt-5.4']);
    const none = createLanguageModel(settingsFrom({ ANTHROPIC_API_KEY: 'sk-ant-1', ENGRAM_MODEL_PROVIDER: 'none' }), {
      onNotice: () => undefined,
    });
    expect(none).toBeUndefined();
  });

  it('a local OpenAI-compatible server needs ENGRAM_MODEL; without it engram stays offline and the notice says why', () => {
    const notices = offlineNotices({ OPENAI_BASE_URL: 'http://localhost:11434/v1' });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/ENGRAM_MODEL/);
    const settings = settingsFrom({ OPENAI_BASE_URL: 'http://localhost:11434/v1', ENGRAM_MODEL: 'llama3.1' });
    expect([
      createLanguageModel(settings)!.modelId,
      createLanguageModel(settings, { purpose: 'side' })!.modelId,
    ]).toEqual(['llama3.1', 'llama3.1']);
    const withSide = settingsFrom({
      OPENAI_BASE_URL: 'http://localhost:11434/v1',
      ENGRAM_MODEL: 'llama3.1:70b',
      ENGRAM_SIDE_MODEL: 'llama3.2:3b',
    });
    expect(createLanguageModel(withSide, { purpose: 'side' })!.modelId).toBe('llama3.2:3b');
    // Named explicitly, the missing model id is an error rather than a quiet fallback.
    configError(() =>
      createLanguageModel(
        settingsFrom({ OPENAI_BASE_URL: 'http://localhost:11434/v1', ENGRAM_MODEL_PROVIDER: 'openai-compatible' }),
      ),
    );
  });

  it('ANTHROPIC_BASE_URL alone stays offline (the notice names it); ENGRAM_MODEL_PROVIDER=anthropic uses it without a key', () => {
    const notices = offlineNotices({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000' });
    expect(notices[0]).toMatch(/ANTHROPIC_BASE_URL is set without ANTHROPIC_API_KEY/);
    const model = createLanguageModel(
      settingsFrom({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000', ENGRAM_MODEL_PROVIDER: 'anthropic' }),
    );
    expect(model).toBeInstanceOf(AnthropicLanguageModel);
    expect((model as AnthropicLanguageModel).baseUrl).toBe('http://127.0.0.1:4000');
  });

  it('refuses contradictory or malformed model settings with CONFIG_INVALID that says what to set', () => {
    expect(configError(() => createLanguageModel(settingsFrom({ ENGRAM_MODEL_PROVIDER: 'gpt' }))).message).toMatch(
      /auto, anthropic, openai-compatible, none or claude-code/,
    );
    expect(
      configError(() => createLanguageModel(settingsFrom({ ENGRAM_MODEL_PROVIDER: 'anthropic' }))).message,
    ).toMatch(/ANTHROPIC_API_KEY/);
    expect(
      configError(() => createLanguageModel(settingsFrom({ ENGRAM_MODEL_PROVIDER: 'openai-compatible' }))).message,
    ).toMatch(/OPENAI_API_KEY/);
    expect(configError(() => createLanguageModel(settingsFrom({ ENGRAM_MODEL_API_KEY: 'sk-x' }))).message).toMatch(
      /ENGRAM_MODEL_PROVIDER/,
    );
    configError(() => settingsFrom({ ENGRAM_MODEL_TIMEOUT_MS: '-5' }));
    configError(() => settingsFrom({ ENGRAM_MODEL_MAX_RETRIES: '99' }));
    configError(() => settingsFrom({ ENGRAM_MODEL_TIMEOUT_MS: 'soon' }));
    configError(() =>
      createLanguageModel(settingsFrom({ OPENAI_BASE_URL: 'localhost:11434', ENGRAM_MODEL: 'llama3.1' })),
    );
    configError(() =>
      createLanguageModel(settingsFrom({ ANTHROPIC_API_KEY: 'sk-ant-1', ENGRAM_MODEL: 'bad\u0000model' })),
    );
    configError(() => createLanguageModel(settingsFrom({ ANTHROPIC_API_KEY: 'sk ant with spaces' })));
  });

  it('under provider auto, never pairs a provider key from the environment with a base URL given for no provider, or the reverse', async () => {
    const other = await anthropicServer();
    const ambiguous: Array<Record<string, string>> = [
      { ANTHROPIC_API_KEY: 'sk-ant-from-env', ENGRAM_MODEL_BASE_URL: other.url, ENGRAM_MODEL: 'llama3.1' },
      { OPENAI_API_KEY: 'sk-openai-from-env', ENGRAM_MODEL_BASE_URL: other.url, ENGRAM_MODEL: 'llama3.1' },
      { ANTHROPIC_BASE_URL: other.url, ENGRAM_MODEL_API_KEY: 'sk-other-key' },
      { OPENAI_BASE_URL: other.url, ENGRAM_MODEL_API_KEY: 'sk-other-key', ENGRAM_MODEL: 'llama3.1' },
      { ANTHROPIC_API_KEY: 'sk-ant-from-env', ENGRAM_MODEL_API_KEY: 'sk-other-key' },
      { ENGRAM_MODEL_BASE_URL: other.url, ENGRAM_MODEL_API_KEY: 'sk-other-key' },
    ];
    for (const env of ambiguous) {
      const error = configError(() => createLanguageModel(settingsFrom(env)));
      expect(error.message, JSON.stringify(env)).toMatch(
        /model\.provider is auto.*Set ENGRAM_MODEL_PROVIDER \(model\.provider\) to anthropic or openai-compatible/,
      );
      expect(error.message).not.toMatch(/sk-ant-from-env|sk-openai-from-env|sk-other-key/);
    }
    expect(
      configError(() =>
        selectLanguageModel(settingsFrom({ ANTHROPIC_API_KEY: 'sk-ant-from-env', ENGRAM_MODEL_BASE_URL: other.url })),
      ),
    ).toBeInstanceOf(EngramError);
    expect(other.requests).toHaveLength(0);

    // Named explicitly, the same settings are a choice the user made: the key goes where they said.
    const model = createLanguageModel(
      settingsFrom({
        ENGRAM_MODEL_PROVIDER: 'anthropic',
        ANTHROPIC_API_KEY: 'sk-ant-from-env',
        ENGRAM_MODEL_BASE_URL: other.url,
      }),
    )!;
    await model.generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 5 });
    expect(other.requests[0]!.headers.authorization).toBe('Bearer sk-ant-from-env');
    // And the provider's own settings still pair under auto.
    expect(
      selectLanguageModel(settingsFrom({ ANTHROPIC_API_KEY: 'sk-ant-1', ANTHROPIC_BASE_URL: other.url })),
    ).toMatchObject({ provider: 'anthropic', baseUrl: other.url, apiKey: 'sk-ant-1' });
  });

  it('marks every model key as a secret, so "engram config" masks it', () => {
    const secrets = SETTING_DEFINITIONS.filter((definition) => definition.secret).map((definition) => definition.env);
    expect(secrets).toEqual(expect.arrayContaining(['ENGRAM_MODEL_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY']));
  });
});

describe('models created from settings, on the wire', () => {
  it('carry the key, base URL, model id and retry settings from the environment to the request', async () => {
    const server = await anthropicServer({ apiKey: 'sk-ant-right' });
    const settings = settingsFrom({
      ENGRAM_MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'sk-ant-wrong',
      ENGRAM_MODEL_API_KEY: 'sk-ant-right',
      ANTHROPIC_BASE_URL: server.url,
      ENGRAM_MODEL_MAX_RETRIES: '1',
    });
    const waits: number[] = [];
    const model = createLanguageModel(settings, {
      purpose: 'side',
      sleep: async (milliseconds) => void waits.push(milliseconds),
    })!;
    server.script({ message: { text: 'hello' } }, { error: { kind: 'server' } }, { error: { kind: 'server' } });
    expect((await model.generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 5 })).text).toBe(
      'hello',
    );
    const failure = await model
      .generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 5 })
      .catch((error: unknown) => error);
    expect((failure as EngramError).code).toBe('MODEL_UNAVAILABLE');
    expect(server.requests).toHaveLength(3);
    expect(waits).toHaveLength(1);
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-ant-right');
    expect(server.requests[0]!.summary!.model).toBe('claude-haiku-5-5');
  });

  it('reach a local OpenAI-compatible server with no credentials', async () => {
    const server = await startOpenAiChatCompletionsServer();
    cleanups.push(() => server.close());
    const model = createLanguageModel(settingsFrom({ OPENAI_BASE_URL: server.url, ENGRAM_MODEL: 'qwen2.5:7b' }))!;
    expect((await model.generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 5 })).text).toBe('OK');
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
    expect(server.requests[0]!.summary!.model).toBe('qwen2.5:7b');
  });
});

describe('openEngram and the model', () => {
  it('uses the configured side model for LLM selection in buildMemoryContext; a per-call model wins; model: undefined turns it off', async () => {
    const server = await anthropicServer({ apiKey: 'sk-ant-test' });
    // The retriever answers with the handle of the memory named "deploys".
    server.script((request) => {
      const prompt = String(request.summary?.messages[0]?.content ?? '');
      const line = prompt.split('\n').find((entry) => entry.split(' | ')[2] === 'deploys');
      return { message: { text: JSON.stringify({ selected: line ? [line.split(' | ')[0]] : [] }) } };
    });
    const { home, project } = workspace();
    const notices: string[] = [];
    const opened = await openEngram({
      cwd: project,
      env: { ENGRAM_HOME: home, ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.url },
      onNotice: (notice) => notices.push(notice),
    });
    cleanups.push(() => opened.close());
    const { engram } = opened;
    expect(notices).toEqual([]);
    expect(engram.model?.modelId).toBe('claude-haiku-5-5');
    const deploys = await engram.remember({
      name: 'deploys',
      description: 'How releases reach production',
      content: 'Releases go out through ArgoCD on Tuesdays.',
      type: 'project',
    });
    await engram.remember({
      name: 'tabs',
      description: 'Indentation preference',
      content: 'The user prefers tabs.',
      type: 'user',
    });

    const context = await engram.buildMemoryContext('when do we ship?');
    expect(context.selection).toMatchObject({ status: 'selected', picked: [deploys.id] });
    expect(context.block).toContain('ArgoCD');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.summary!.system).toMatch(/JSON/);

    const perCall = new ScriptedLanguageModel({ script: ['{"selected": []}'] });
    const explicit = await engram.buildMemoryContext('when do we ship?', { model: perCall });
    expect(perCall.calls).toBe(1);
    expect(explicit.selection?.status).toBe('selected');
    const without = await engram.buildMemoryContext('when do we ship?', { model: undefined });
    expect(without.selection).toBeUndefined();
    expect(server.requests).toHaveLength(1);
  });

  it('runs offline with nothing configured: no model, one notice, and memory context still built by ranking', async () => {
    const { home, project } = workspace();
    const notices: string[] = [];
    const opened = await openEngram({
      cwd: project,
      env: { ENGRAM_HOME: home },
      onNotice: (notice) => notices.push(notice),
    });
    cleanups.push(() => opened.close());
    expect(opened.engram.model).toBeUndefined();
    expect(notices).toHaveLength(1);
    await opened.engram.remember({ content: 'Releases go out through ArgoCD on Tuesdays.', type: 'project' });
    const context = await opened.engram.buildMemoryContext('ArgoCD releases');
    expect(context.selection).toBeUndefined();
    expect(context.block).toContain('ArgoCD');
    expect(notices).toHaveLength(1);
  });
});
