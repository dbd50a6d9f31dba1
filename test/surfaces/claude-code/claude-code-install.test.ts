import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';

const settingsOf = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

describe('engram install / uninstall claude-code', () => {
  let workspace: Workspace;
  let userSettings: string;
  beforeEach(() => {
    workspace = createWorkspace();
    userSettings = join(workspace.home, '.claude', 'settings.json');
  });
  afterEach(() => workspace.cleanup());

  it("adds engram beside the user's own settings, twice is once, and uninstall gives back exactly the user's file", async () => {
    mkdirSync(join(workspace.home, '.claude'));
    const own = { model: 'sonnet', enabledPlugins: { 'other@market': true }, hooks: { Stop: [] } };
    writeFileSync(userSettings, JSON.stringify(own));
    const first = await workspace.json(['install', 'claude-code']);
    expect(first.changed).toHaveLength(1);
    const installed = settingsOf(userSettings);
    expect(installed.enabledPlugins).toEqual({ 'other@market': true, 'engram@engram': true });
    expect(installed.model).toBe('sonnet');
    expect(
      existsSync(join(installed.extraKnownMarketplaces.engram.source.path, '.claude-plugin', 'marketplace.json')),
    ).toBe(true);
    const second = await workspace.json(['install', 'claude-code']);
    expect(second.changed).toEqual([]);
    const status = await workspace.json(['status']);
    expect(status.claudeCode.loads).toBe(true);
    await workspace.json(['uninstall', 'claude-code']);
    expect(settingsOf(userSettings)).toEqual(own);
    const after = await workspace.json(['status']);
    expect(after.claudeCode.loads).toBe(false);
    expect((await workspace.json(['uninstall', 'claude-code'])).changed).toEqual([]);
  });

  it('a file install created goes away on uninstall; --project enables the plugin in the project only', async () => {
    await workspace.json(['install', 'claude-code', '--project']);
    const project = join(workspace.cwd, '.claude', 'settings.json');
    expect(settingsOf(project)).toEqual({ enabledPlugins: { 'engram@engram': true } });
    expect(settingsOf(userSettings).enabledPlugins).toBeUndefined();
    expect(settingsOf(userSettings).extraKnownMarketplaces.engram).toBeDefined();
    await workspace.json(['uninstall', 'claude-code']);
    expect(existsSync(project)).toBe(false);
    expect(existsSync(userSettings)).toBe(false);
    // The folders install made for them go too: no empty .claude/ left in the user's repository or HOME.
    expect(existsSync(join(workspace.cwd, '.claude'))).toBe(false);
    expect(existsSync(join(workspace.home, '.claude'))).toBe(false);
  });

  it('uninstall --project removes it from this project only; the global --project <id> still parses around it', async () => {
    const other = join(workspace.root, 'other-project');
    mkdirSync(other);
    await workspace.json(['install', 'claude-code', '--project']);
    await workspace.json(['install', 'claude-code', '--project'], 0, { cwd: other });
    const here = join(workspace.cwd, '.claude', 'settings.json');
    const there = join(other, '.claude', 'settings.json');
    // The global --project takes a value: before the command's name, or attached, beside the command's own flag.
    const removed = await workspace.json(['--project', 'acme/app', 'uninstall', 'claude-code', '--project']);
    expect(removed.changed).toEqual([
      { file: here, keys: ['enabledPlugins.engram@engram'], removedFile: true, removedFolders: [dirname(here)] },
    ]);
    expect(existsSync(here)).toBe(false);
    expect(settingsOf(there)).toEqual({ enabledPlugins: { 'engram@engram': true } });
    expect(settingsOf(userSettings).extraKnownMarketplaces.engram).toBeDefined();
    const again = await workspace.json(['uninstall', 'claude-code', '--project=acme/app', '--project']);
    expect(again.changed).toEqual([]);
    // Plain uninstall still removes everything install recorded (the other project's and the user's).
    const rest = await workspace.json(['uninstall', 'claude-code']);
    expect(rest.changed.map((entry: { file: string }) => entry.file).sort()).toEqual([there, userSettings].sort());
    expect(existsSync(there)).toBe(false);
    expect(existsSync(userSettings)).toBe(false);
  });

  it('refuses a settings.json that is not JSON and changes nothing; refuses unknown targets', async () => {
    mkdirSync(join(workspace.home, '.claude'));
    writeFileSync(userSettings, '{ "model": "sonnet", ');
    const broken = await workspace.run(['install', 'claude-code']);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toMatch(/not valid JSON/);
    expect(readFileSync(userSettings, 'utf8')).toBe('{ "model": "sonnet", ');
    const unknown = await workspace.run(['install', 'cursor']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/claude-code/);
    const status = await workspace.run(['status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/will NOT load engram/);
  });
});
