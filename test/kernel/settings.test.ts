import { describe, expect, expectTypeOf, it } from 'vitest';
import { EngramError } from '../../src/kernel/errors.js';
import {
  DEFAULT_SETTINGS,
  SETTING_DEFINITIONS,
  findSettingDefinition,
  getSetting,
  type SettingValue,
  type Settings,
} from '../../src/kernel/settings.js';
import type { EmbeddingProvider, ModelProvider } from '../../src/kernel/settings-model-rows.js';
import { checkSetting, readSettingValue } from '../../src/kernel/setting-checks.js';
import type { SettingDefinition } from '../../src/kernel/setting-definition.js';
import { expectEngramErrorSync } from '../support/expect-engram-error.js';

/** Every environment variable engram reads for a setting: renaming one breaks users' setups, so a change here is deliberate. */
const ENVIRONMENT_VARIABLES: ReadonlyArray<[string, string]> = [
  ['store.url', 'ENGRAM_STORE'],
  ['store.busyTimeoutMs', 'ENGRAM_BUSY_TIMEOUT_MS'],
  ['store.poolSize', 'ENGRAM_STORE_POOL_SIZE'],
  ['store.statementTimeoutMs', 'ENGRAM_STORE_STATEMENT_TIMEOUT_MS'],
  ['project.id', 'ENGRAM_PROJECT'],
  ['recall.topK', 'ENGRAM_TOP_K'],
  ['recall.minScore', 'ENGRAM_MIN_SCORE'],
  ['recall.timeCapMs', 'ENGRAM_RECALL_TIME_CAP_MS'],
  ['session.modelContextWindows', 'ENGRAM_MODEL_CONTEXT_WINDOWS'],
  ['notes.templatePath', 'ENGRAM_NOTES_TEMPLATE'],
  ['notes.promptPath', 'ENGRAM_NOTES_PROMPT'],
  ['instructions.managedPath', 'ENGRAM_MANAGED_INSTRUCTIONS'],
  ['server.host', 'ENGRAM_HOST'],
  ['server.port', 'ENGRAM_PORT'],
  ['server.token', 'ENGRAM_TOKEN'],
  ['server.stopGraceMs', 'ENGRAM_STOP_GRACE_MS'],
  ['embedding.provider', 'ENGRAM_EMBEDDING_PROVIDER'],
  ['embedding.baseUrl', 'ENGRAM_EMBEDDING_BASE_URL'],
  ['embedding.model', 'ENGRAM_EMBEDDING_MODEL'],
  ['embedding.apiKey', 'ENGRAM_EMBEDDING_API_KEY'],
  ['embedding.dimensions', 'ENGRAM_EMBEDDING_DIMENSIONS'],
  ['embedding.batchSize', 'ENGRAM_EMBEDDING_BATCH_SIZE'],
  ['embedding.timeoutMs', 'ENGRAM_EMBEDDING_TIMEOUT_MS'],
  ['embedding.maxRetries', 'ENGRAM_EMBEDDING_MAX_RETRIES'],
  ['model.provider', 'ENGRAM_MODEL_PROVIDER'],
  ['model.model', 'ENGRAM_MODEL'],
  ['model.sideModel', 'ENGRAM_SIDE_MODEL'],
  ['model.baseUrl', 'ENGRAM_MODEL_BASE_URL'],
  ['model.apiKey', 'ENGRAM_MODEL_API_KEY'],
  ['model.anthropicApiKey', 'ANTHROPIC_API_KEY'],
  ['model.anthropicBaseUrl', 'ANTHROPIC_BASE_URL'],
  ['model.openaiApiKey', 'OPENAI_API_KEY'],
  ['model.openaiBaseUrl', 'OPENAI_BASE_URL'],
  ['model.timeoutMs', 'ENGRAM_MODEL_TIMEOUT_MS'],
  ['model.maxRetries', 'ENGRAM_MODEL_MAX_RETRIES'],
  ['model.claudeCodeCommand', 'ENGRAM_CLAUDE_CODE_COMMAND'],
  ['model.insideClaudeCode', 'CLAUDECODE'],
  ['wrappers.recallTimeCapMs', 'ENGRAM_WRAPPER_RECALL_TIME_CAP_MS'],
  ['sync.remote', 'ENGRAM_SYNC_REMOTE'],
  ['sync.projectRemote', 'ENGRAM_SYNC_PROJECT_REMOTE'],
  ['sync.branch', 'ENGRAM_SYNC_BRANCH'],
  ['sync.projectsToPersonal', 'ENGRAM_SYNC_PROJECTS_TO_PERSONAL'],
  ['sync.intervalMinutes', 'ENGRAM_SYNC_INTERVAL_MINUTES'],
  ['sync.debounceSeconds', 'ENGRAM_SYNC_DEBOUNCE_SECONDS'],
  ['sync.timeoutMs', 'ENGRAM_SYNC_TIMEOUT_MS'],
  ['sync.machineName', 'ENGRAM_SYNC_MACHINE'],
  ['hooks.deadlineMs', 'ENGRAM_HOOK_DEADLINE_MS'],
  ['hooks.recall', 'ENGRAM_HOOK_RECALL'],
  ['hooks.extract', 'ENGRAM_HOOK_EXTRACT'],
  ['hooks.worker', 'ENGRAM_HOOK_WORKER'],
  ['hooks.transcriptReadTries', 'ENGRAM_HOOK_TRANSCRIPT_READ_TRIES'],
  ['hooks.workerLingerMs', 'ENGRAM_HOOK_WORKER_LINGER_MS'],
  ['hooks.server', 'ENGRAM_HOOK_SERVER'],
  ['hooks.serverIdleMs', 'ENGRAM_HOOK_SERVER_IDLE_MS'],
];

const configError = (action: () => unknown): EngramError => expectEngramErrorSync(action, 'CONFIG_INVALID');

/** Every dotted path of a settings object, in its key order. */
function leafPaths(value: object, prefix = ''): string[] {
  return Object.entries(value).flatMap(([key, child]) =>
    child !== null && typeof child === 'object' && !Array.isArray(child)
      ? leafPaths(child as object, `${prefix}${key}.`)
      : [`${prefix}${key}`],
  );
}

describe('the settings table', () => {
  it('gives every setting a one-line doc, and a default of its own type that its range or allowed values accept', () => {
    expect(SETTING_DEFINITIONS.length).toBeGreaterThan(150);
    for (const definition of SETTING_DEFINITIONS) {
      expect(definition.path, definition.path).toMatch(/^[a-z][a-zA-Z]*\.[a-z][a-zA-Z0-9]*$/);
      expect(definition.description.trim().length, definition.path).toBeGreaterThan(10);
      expect(definition.description, definition.path).not.toMatch(/[\r\n]/);
      expect(readSettingValue(definition, definition.default, 'its default'), definition.path).toEqual(
        definition.default,
      );
      if (definition.type === 'string' && definition.values)
        expect(definition.values, definition.path).toContain(definition.default);
      if (definition.secret) expect(definition.type, definition.path).toBe('string');
    }
  });

  it('names each environment variable once, and keeps every name users set', () => {
    const names = SETTING_DEFINITIONS.flatMap((definition) => (definition.env ? [definition.env] : []));
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Z][A-Z0-9_]*$/);
    expect(
      SETTING_DEFINITIONS.flatMap((definition) => (definition.env ? [[definition.path, definition.env]] : [])),
    ).toEqual(ENVIRONMENT_VARIABLES);
  });

  it("derives DEFAULT_SETTINGS from the table: the same paths, the table's defaults, frozen all the way down", () => {
    expect(leafPaths(DEFAULT_SETTINGS)).toEqual(SETTING_DEFINITIONS.map((definition) => definition.path));
    for (const definition of SETTING_DEFINITIONS)
      expect(getSetting(DEFAULT_SETTINGS, definition.path), definition.path).toEqual(definition.default);
    expect(new Set(SETTING_DEFINITIONS.map((definition) => definition.path)).size).toBe(SETTING_DEFINITIONS.length);
    // A few of SPEC.md's numbers, read the way every caller reads them (top_k as issue 30 and min_score as issue 18 revised them).
    expect(DEFAULT_SETTINGS.recall.topK).toBe(11);
    expect(DEFAULT_SETTINGS.recall.minScore).toBe(0.1);
    expect(DEFAULT_SETTINGS.injection.maxTokens).toBe(3_000);
    expect(DEFAULT_SETTINGS.session.warnRatios).toEqual([0.7, 0.85, 0.92]);
    expect(DEFAULT_SETTINGS.embedding.provider).toBe('none');
    expect(DEFAULT_SETTINGS.model.provider).toBe('auto');
    expect(Object.isFrozen(DEFAULT_SETTINGS)).toBe(true);
    for (const group of Object.values(DEFAULT_SETTINGS)) expect(Object.isFrozen(group)).toBe(true);
    expect(Object.isFrozen(DEFAULT_SETTINGS.session.warnRatios)).toBe(true);
    expect(Object.isFrozen(SETTING_DEFINITIONS)).toBe(true);
    expect(() => {
      (DEFAULT_SETTINGS.recall as { topK: number }).topK = 1;
    }).toThrow(TypeError);
    expect(DEFAULT_SETTINGS.recall.topK).toBe(11);
  });

  it('types Settings precisely from the table', () => {
    expectTypeOf<Settings['recall']['topK']>().toEqualTypeOf<number>();
    expectTypeOf<Settings['store']['url']>().toEqualTypeOf<string>();
    expectTypeOf<Settings['session']['serverContextEditing']>().toEqualTypeOf<boolean>();
    expectTypeOf<Settings['session']['warnRatios']>().toEqualTypeOf<readonly number[]>();
    expectTypeOf<Settings['embedding']['provider']>().toEqualTypeOf<EmbeddingProvider>();
    expectTypeOf<Settings['model']['provider']>().toEqualTypeOf<ModelProvider>();
    expectTypeOf<ModelProvider>().toEqualTypeOf<'auto' | 'anthropic' | 'openai-compatible' | 'none' | 'claude-code'>();
    expectTypeOf<SettingValue<'server.port'>>().toEqualTypeOf<number>();
    expectTypeOf(DEFAULT_SETTINGS).toMatchTypeOf<Settings>();
    expectTypeOf(checkSetting('model.maxRetries', 3)).toEqualTypeOf<number>();
    // A path no setting has does not compile (typed, never run).
    const misspelt = (): unknown =>
      // @ts-expect-error: no such setting
      checkSetting('recall.topk', 3);
    expect(misspelt).toBeTypeOf('function');
  });
});

describe('reading a value against its definition', () => {
  const definition = (path: string): SettingDefinition => findSettingDefinition(path)!;

  it("converts text to the setting's type and refuses what its range or allowed values do not hold", () => {
    expect(findSettingDefinition('recall.nothing')).toBeUndefined();
    expect(readSettingValue(definition('recall.topK'), ' 12 ', 'flag')).toBe(12);
    expect(readSettingValue(definition('session.warnRatios'), '0.5, 0.9', 'flag')).toEqual([0.5, 0.9]);
    expect(readSettingValue(definition('session.serverContextEditing'), '1', 'flag')).toBe(true);
    expect(readSettingValue(definition('model.provider'), 'anthropic', 'flag')).toBe('anthropic');
    expect(configError(() => readSettingValue(definition('recall.topK'), '0', 'flag')).message).toMatch(
      /whole number from 1 to 1000/,
    );
    expect(configError(() => readSettingValue(definition('recall.minScore'), 1.5, 'x')).message).toMatch(
      /a number from 0 to 1/,
    );
    expect(configError(() => readSettingValue(definition('recall.minScore'), -0.1, 'x')).message).toMatch(
      /not a non-negative number/,
    );
    expect(configError(() => readSettingValue(definition('session.warnRatios'), '0.5,2', 'x')).message).toMatch(
      /from 0 to 1/,
    );
    expect(configError(() => readSettingValue(definition('session.warnRatios'), [0.5, 'x'], 'x')).message).toMatch(
      /list of non-negative numbers/,
    );
    expect(
      configError(() => readSettingValue(definition('model.provider'), 'gpt', 'ENGRAM_MODEL_PROVIDER')).message,
    ).toMatch(/ENGRAM_MODEL_PROVIDER: "gpt" is unknown; use auto, anthropic, openai-compatible, none or claude-code/);
    expect(configError(() => readSettingValue(definition('embedding.provider'), 'mystery', 'x')).message).toMatch(
      /use none or openai-compatible/,
    );
    expect(configError(() => readSettingValue(definition('server.host'), 42, 'x')).message).toMatch(
      /expected a string/,
    );
    expect(configError(() => readSettingValue(definition('session.serverContextEditing'), 'yes', 'x')).message).toMatch(
      /not true or false/,
    );
  });

  it('checks adapter options by setting path without converting text, naming the setting', () => {
    expect(checkSetting('embedding.batchSize', 16)).toBe(16);
    expect(configError(() => checkSetting('embedding.batchSize', 0)).message).toMatch(
      /embedding\.batchSize: 0 must be a whole number from 1 to 2048/,
    );
    expect(configError(() => checkSetting('embedding.batchSize', '16')).message).toMatch(
      /embedding\.batchSize.*not a non-negative number/,
    );
    expect(configError(() => checkSetting('model.timeoutMs', 0)).message).toMatch(/model\.timeoutMs/);
    expect(configError(() => checkSetting('session.serverContextEditing', 'true')).message).toMatch(
      /not true or false/,
    );
    expect(configError(() => checkSetting('nothing.here' as never, 1)).message).toMatch(/Unknown setting/);
  });
});
