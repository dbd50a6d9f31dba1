import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { missingFolders, removeEmptyFolders } from './install-folders.js';
import { EngramError } from '../../kernel/errors.js';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';

/**
 * `engram install claude-code`: engram's plugin folder, declared as a directory marketplace and
 * enabled in Claude Code's settings.json (user scope, or the project's with --project). Claude Code
 * runs a directory marketplace's plugin in place, so the hooks resolve engram's own code and
 * node_modules; nothing is copied and no npm runs. What install added is recorded, and uninstall
 * removes exactly that (an object or file install created goes when it is left empty).
 */

export const MARKETPLACE_NAME = 'engram';
export const PLUGIN_ID = `engram@${MARKETPLACE_NAME}`;
const RECORD_FILE = 'claude-code-install.json';

export type InstallScope = 'user' | 'project';

export interface ClaudeCodePaths {
  /** `CLAUDE_CONFIG_DIR`, else `~/.claude`. */
  configDir: string;
  userSettings: string;
  /** `<project root>/.claude/settings.json`. */
  projectSettings: string;
}

/** Where Claude Code keeps its settings for this environment and project. */
export function claudeCodePaths(env: Record<string, string | undefined>, projectRoot: string): ClaudeCodePaths {
  const configured = env.CLAUDE_CONFIG_DIR;
  const home = env.HOME && env.HOME !== '' ? env.HOME : homedir();
  const configDir = configured && configured !== '' ? resolve(configured) : join(home, '.claude');
  return {
    configDir,
    userSettings: join(configDir, 'settings.json'),
    projectSettings: join(projectRoot, '.claude', 'settings.json'),
  };
}

/** The folder holding `.claude-plugin/marketplace.json` and `plugins/engram/`: this engram package or checkout. */
export function marketplaceRoot(): string {
  // dist/surfaces/claude-code/ (or src/ under a TypeScript runner) → the package root.
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
}

/** The plugin folder inside the marketplace. */
export function pluginFolder(root = marketplaceRoot()): string {
  return join(root, 'plugins', 'engram');
}

/** One key path install set in a settings file, and whether install created the objects on its way. */
interface AddedKey {
  path: [string, string];
  /** The value install wrote (uninstall leaves a value the user changed since). */
  value: unknown;
  createdParent: boolean;
}

interface InstallRecord {
  /** madeFolders: the folders install made for the file (a project's .claude/), removed with it when empty. */
  files: Array<{ file: string; created: boolean; keys: AddedKey[]; madeFolders?: string[] }>;
  /** Folders `--skills` keeps procedure skills in (uninstall removes engram's folders there). */
  skills?: string[];
}

/** Records that `--skills` keeps procedure skills in `dirs` (the SessionStart hook then keeps them in step). */
export async function recordSkillDirectories(home: string, dirs: readonly string[]): Promise<void> {
  const record = readRecord(home);
  record.skills = [...new Set([...(record.skills ?? []), ...dirs])];
  await writeRecord(home, record);
}

/** The folders `--skills` keeps procedure skills in, per the install record (none when off). */
export function recordedSkillDirectories(home: string): string[] {
  const skills = readRecord(home).skills;
  return Array.isArray(skills) ? skills.filter((dir): dir is string => typeof dir === 'string') : [];
}

export interface InstallResult {
  scope: InstallScope;
  marketplace: string;
  plugin: string;
  /** Settings files written, with the keys set in each. */
  changed: Array<{ file: string; keys: string[] }>;
  warnings: string[];
}

/** Installs engram into Claude Code's settings; running it again changes nothing. */
export async function installClaudeCode(options: {
  env: Record<string, string | undefined>;
  projectRoot: string;
  engramHome: string;
  scope: InstallScope;
  /** Default: this engram's own folder. */
  root?: string;
}): Promise<InstallResult> {
  const root = resolve(options.root ?? marketplaceRoot());
  checkMarketplace(root);
  const paths = claudeCodePaths(options.env, options.projectRoot);
  const warnings: string[] = [];
  if (/[\\/]_npx[\\/]|[\\/]\.npm[\\/]_cacache/.test(root))
    warnings.push(
      `engram runs from an npx cache folder (${root}) that may be removed: Claude Code then silently loads no plugin. Install engram with "npm install -g engram" and run the install again.`,
    );
  const source = { source: { source: 'directory', path: root } };
  // The marketplace is declared in user settings in both scopes (Claude Code reads it there); --project enables the plugin for one project.
  const plan: Array<{ file: string; keys: Array<{ path: [string, string]; value: unknown }> }> = [
    {
      file: paths.userSettings,
      keys: [
        { path: ['extraKnownMarketplaces', MARKETPLACE_NAME], value: source },
        ...(options.scope === 'user' ? [{ path: ['enabledPlugins', PLUGIN_ID] as [string, string], value: true }] : []),
      ],
    },
    ...(options.scope === 'project'
      ? [
          {
            file: paths.projectSettings,
            keys: [{ path: ['enabledPlugins', PLUGIN_ID] as [string, string], value: true }],
          },
        ]
      : []),
  ];
  // Every file is read and checked before any is written: a broken settings.json changes nothing.
  const current = plan.map((entry) => ({
    ...entry,
    exists: existsSync(entry.file),
    settings: readSettings(entry.file),
  }));
  const record = readRecord(options.engramHome);
  const changed: InstallResult['changed'] = [];
  for (const entry of current) {
    const settings = entry.settings ?? {};
    const recorded = record.files.find((file) => file.file === entry.file) ?? {
      file: entry.file,
      created: !entry.exists,
      keys: [],
    };
    const set: string[] = [];
    for (const key of entry.keys) {
      const [group, name] = key.path;
      const parent = settings[group];
      if (parent !== undefined && (parent === null || typeof parent !== 'object' || Array.isArray(parent)))
        throw new EngramError(
          'CONFIG_INVALID',
          `${entry.file}: "${group}" is not an object; fix it by hand, then run the install again. Nothing was changed.`,
        );
      const object = (parent as Record<string, unknown> | undefined) ?? {};
      if (JSON.stringify(object[name]) === JSON.stringify(key.value)) continue;
      const known = recorded.keys.find((added) => added.path[0] === group && added.path[1] === name);
      if (!known) recorded.keys.push({ path: key.path, value: key.value, createdParent: parent === undefined });
      else known.value = key.value;
      object[name] = key.value;
      settings[group] = object;
      set.push(`${group}.${name}`);
    }
    if (set.length === 0) continue;
    const madeFolders = missingFolders(dirname(entry.file));
    if (madeFolders.length > 0) recorded.madeFolders = [...(recorded.madeFolders ?? []), ...madeFolders];
    mkdirSync(dirname(entry.file), { recursive: true });
    await writeFileAtomically(entry.file, `${JSON.stringify(settings, null, 2)}\n`, 'CONFIG_INVALID');
    if (!record.files.includes(recorded)) record.files.push(recorded);
    changed.push({ file: entry.file, keys: set });
  }
  if (changed.length > 0) await writeRecord(options.engramHome, record);
  return { scope: options.scope, marketplace: root, plugin: PLUGIN_ID, changed, warnings };
}

export interface UninstallResult {
  changed: Array<{ file: string; keys: string[]; removedFile: boolean; removedFolders: string[] }>;
}

/**
 * Removes what install added, in every settings file it recorded (and engram's keys in the user's
 * and this project's settings when there is no record); memories are not touched. A key whose
 * value the user changed since is left, and so is an object or file install did not create.
 * With `scope: 'project'`, only this project's settings (what `install --project` added there);
 * the rest of the record stays for the other projects and the user's settings.
 */
export async function uninstallClaudeCode(options: {
  env: Record<string, string | undefined>;
  projectRoot: string;
  engramHome: string;
  scope?: InstallScope;
}): Promise<UninstallResult> {
  const paths = claudeCodePaths(options.env, options.projectRoot);
  const record = readRecord(options.engramHome);
  const onlyProject = options.scope === 'project';
  const targets = record.files.filter((entry) => !onlyProject || entry.file === paths.projectSettings);
  for (const file of onlyProject ? [paths.projectSettings] : [paths.userSettings, paths.projectSettings]) {
    if (targets.some((entry) => entry.file === file)) continue;
    // No record (installed by an older engram, or by hand): engram's own keys only, parents kept.
    targets.push({
      file,
      created: false,
      keys: [
        { path: ['extraKnownMarketplaces', MARKETPLACE_NAME], value: undefined, createdParent: false },
        { path: ['enabledPlugins', PLUGIN_ID], value: undefined, createdParent: false },
      ],
    });
  }
  const changed: UninstallResult['changed'] = [];
  for (const target of targets) {
    if (!existsSync(target.file)) continue;
    const settings = readSettings(target.file);
    if (!settings) continue;
    const removed: string[] = [];
    for (const key of target.keys) {
      const [group, name] = key.path;
      const object = settings[group];
      if (object === null || typeof object !== 'object' || Array.isArray(object)) continue;
      const values = object as Record<string, unknown>;
      if (!Object.hasOwn(values, name)) continue;
      if (key.value !== undefined && JSON.stringify(values[name]) !== JSON.stringify(key.value)) continue;
      delete values[name];
      removed.push(`${group}.${name}`);
      if (key.createdParent && Object.keys(values).length === 0) delete settings[group];
    }
    if (removed.length === 0) continue;
    const removeFile = target.created && Object.keys(settings).length === 0;
    if (removeFile) await rm(target.file, { force: true });
    else await writeFileAtomically(target.file, `${JSON.stringify(settings, null, 2)}\n`, 'CONFIG_INVALID');
    // A project's .claude/ (or ~/.claude/) that install made goes too when nothing else is in it.
    const removedFolders = removeFile ? await removeEmptyFolders(target.madeFolders ?? []) : [];
    changed.push({ file: target.file, keys: removed, removedFile: removeFile, removedFolders });
  }
  const kept = onlyProject ? record.files.filter((entry) => entry.file !== paths.projectSettings) : [];
  if (kept.length > 0 || (onlyProject && (record.skills?.length ?? 0) > 0))
    await writeRecord(options.engramHome, { ...record, files: kept });
  else await rm(join(options.engramHome, RECORD_FILE), { force: true });
  return { changed };
}

/** Whether Claude Code will load engram's plugin for this project, and from where. */
export interface ClaudeCodeLoadState {
  loads: boolean;
  /** The settings file that enables the plugin (the project's wins over the user's). */
  enabledIn?: string;
  /** The marketplace folder the user settings declare. */
  marketplace?: string;
  problems: string[];
}

/** Reads Claude Code's settings the way it merges them (user, then project, then project-local) to tell whether engram loads. */
export function claudeCodeLoadState(env: Record<string, string | undefined>, projectRoot: string): ClaudeCodeLoadState {
  const paths = claudeCodePaths(env, projectRoot);
  const problems: string[] = [];
  const files = [paths.userSettings, paths.projectSettings, join(projectRoot, '.claude', 'settings.local.json')];
  let enabled: boolean | undefined;
  let enabledIn: string | undefined;
  let marketplace: string | undefined;
  let hooksOff = false;
  for (const file of files) {
    let settings: Record<string, unknown> | undefined;
    try {
      settings = readSettings(file);
    } catch (error) {
      problems.push((error as Error).message);
      continue;
    }
    if (!settings) continue;
    const plugins = settings.enabledPlugins as Record<string, unknown> | undefined;
    if (plugins && typeof plugins === 'object' && Object.hasOwn(plugins, PLUGIN_ID)) {
      enabled = plugins[PLUGIN_ID] === true;
      enabledIn = file;
    }
    const markets = settings.extraKnownMarketplaces as Record<string, { source?: { path?: unknown } }> | undefined;
    const path = markets?.[MARKETPLACE_NAME]?.source?.path;
    if (typeof path === 'string') marketplace = path;
    if (settings.disableAllHooks === true) hooksOff = true;
  }
  if (enabled !== true) problems.push('the engram plugin is not enabled: run "engram install claude-code"');
  if (marketplace === undefined) problems.push('no engram marketplace is declared in the user settings');
  else if (!existsSync(join(marketplace, 'plugins', 'engram', '.claude-plugin', 'plugin.json')))
    problems.push(`the marketplace folder ${marketplace} holds no engram plugin (moved or removed?): install again`);
  if (hooksOff) problems.push('"disableAllHooks" is true in a settings file: no hook runs');
  return {
    loads: problems.length === 0,
    ...(enabledIn !== undefined && { enabledIn }),
    ...(marketplace !== undefined && { marketplace }),
    problems,
  };
}

function checkMarketplace(root: string): void {
  const manifest = join(root, '.claude-plugin', 'marketplace.json');
  if (!existsSync(manifest) || !existsSync(join(pluginFolder(root), '.claude-plugin', 'plugin.json')))
    throw new EngramError(
      'NOT_FOUND',
      `${root} holds no engram plugin (.claude-plugin/marketplace.json and plugins/engram/): this engram package is incomplete; reinstall it.`,
    );
}

function readSettings(file: string): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  let value: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    if (text.trim() === '') return {};
    value = JSON.parse(text);
  } catch (error) {
    throw new EngramError(
      'CONFIG_INVALID',
      `${file} is not valid JSON (${(error as Error).message}); fix it by hand, then run the command again. Nothing was changed.`,
      { cause: error },
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new EngramError('CONFIG_INVALID', `${file} does not hold a JSON object. Nothing was changed.`);
  return value as Record<string, unknown>;
}

function readRecord(home: string): InstallRecord {
  try {
    const value = JSON.parse(readFileSync(join(home, RECORD_FILE), 'utf8')) as InstallRecord;
    if (value && Array.isArray(value.files)) return value;
  } catch {
    // No record yet.
  }
  return { files: [] };
}

async function writeRecord(home: string, record: InstallRecord): Promise<void> {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  await writeFileAtomically(join(home, RECORD_FILE), `${JSON.stringify(record, null, 2)}\n`, 'CONFIG_INVALID');
}
