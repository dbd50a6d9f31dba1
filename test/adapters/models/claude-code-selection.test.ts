import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../../src/adapters/models/anthropic-language-model.js';
import { ClaudeCodeLanguageModel } from '../../../src/adapters/models/claude-code-language-model.js';
import { createLanguageModel, selectLanguageModel } from '../../../src/adapters/models/create-language-model.js';
import { OpenAiCompatibleLanguageModel } from '../../../src/adapters/models/openai-compatible-language-model.js';
import type { Settings } from '../../../src/kernel/settings.js';
import { openEngram } from '../../../src/node.js';
import { settingsFromEnv, useProjectFolders } from '../../support/project-folders.js';

const workspace = useProjectFolders('engram-cc-select-');
const settingsFrom = (env: Record<string, string>): Settings => settingsFromEnv(workspace, env);

describe('auto picks claude-code inside Claude Code when no key is set', () => {
  it('CLAUDECODE=1 (as Claude Code sets in its hooks) with no key selects claude-code: haiku for side work, sonnet for main', () => {
    const settings = settingsFrom({ CLAUDECODE: '1', CLAUDE_PROJECT_DIR: '/somewhere' });
    expect(selectLanguageModel(settings)).toMatchObject({
      provider: 'claude-code',
      sideModel: 'haiku',
      model: 'sonnet',
      command: 'claude',
      chosenBy: expect.stringContaining('CLAUDECODE'),
    });
    const side = createLanguageModel(settings, { purpose: 'side' });
    expect(side).toBeInstanceOf(ClaudeCodeLanguageModel);
    expect([side!.provider, side!.modelId, side!.interactive]).toEqual(['claude-code', 'haiku', false]);
    // ANTHROPIC_BASE_URL is inherited by the nested CLI, which uses it with its own login.
    expect(
      selectLanguageModel(settingsFrom({ CLAUDECODE: '1', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1' })),
    ).toMatchObject({ provider: 'claude-code' });
  });

  it('an API key, an OpenAI-compatible endpoint or offline mode still win as before', () => {
    expect(createLanguageModel(settingsFrom({ CLAUDECODE: '1', ANTHROPIC_API_KEY: 'sk-ant-1' }))).toBeInstanceOf(
      AnthropicLanguageModel,
    );
    expect(createLanguageModel(settingsFrom({ CLAUDECODE: '1', OPENAI_API_KEY: 'sk-1' }))).toBeInstanceOf(
      OpenAiCompatibleLanguageModel,
    );
    expect(selectLanguageModel(settingsFrom({ CLAUDECODE: '1', ENGRAM_MODEL_PROVIDER: 'none' }))).toMatchObject({
      provider: 'none',
    });
    // Outside Claude Code (or CLAUDECODE=0) nothing changes: offline.
    expect(selectLanguageModel(settingsFrom({}))).toMatchObject({ provider: 'none' });
    expect(selectLanguageModel(settingsFrom({ CLAUDECODE: '0' }))).toMatchObject({ provider: 'none' });
  });

  it('ENGRAM_MODEL_PROVIDER=claude-code selects it anywhere, with the command and models the settings name; a key or base URL for it is refused', () => {
    const chosen = createLanguageModel(
      settingsFrom({
        ENGRAM_MODEL_PROVIDER: 'claude-code',
        ENGRAM_CLAUDE_CODE_COMMAND: '/opt/claude/bin/claude',
        ENGRAM_SIDE_MODEL: 'claude-haiku-5-5',
      }),
      { purpose: 'side' },
    ) as ClaudeCodeLanguageModel;
    expect([chosen.command, chosen.modelId]).toEqual(['/opt/claude/bin/claude', 'claude-haiku-5-5']);
    const extras: Array<Record<string, string>> = [
      { ENGRAM_MODEL_API_KEY: 'k' },
      { ENGRAM_MODEL_BASE_URL: 'http://127.0.0.1:1' },
    ];
    for (const env of extras) {
      expect(() => selectLanguageModel(settingsFrom({ ENGRAM_MODEL_PROVIDER: 'claude-code', ...env }))).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
    }
  });

  it('openEngram gives it to extraction (engram.model) but recall does not wait on it: buildMemoryContext selects by ranking alone', async () => {
    const { home, project } = workspace();
    const opened = await openEngram({
      cwd: project,
      env: { ENGRAM_HOME: home, CLAUDECODE: '1', ENGRAM_CLAUDE_CODE_COMMAND: join(home, 'no-such-claude') },
    });
    try {
      expect(opened.engram.model?.provider).toBe('claude-code');
      await opened.engram.remember({ content: 'Releases go out on Tuesdays.', type: 'project' });
      // A CLI that does not exist would fail a call: the context is built without one.
      const context = await opened.engram.buildMemoryContext('when do releases go out?');
      expect(context.selection).toBeUndefined();
      expect(context.block).toContain('Tuesdays');
    } finally {
      await opened.close();
    }
  });
});
