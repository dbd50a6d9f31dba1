import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS, SETTING_DEFINITIONS, findSettingDefinition, type Settings } from '../kernel/settings.js';
import { readSettingValue } from '../kernel/setting-checks.js';
import type { SettingDefinition } from '../kernel/setting-definition.js';
import { findGitRoot } from '../kernel/node/git-root.js';
import { findProjectConfigFile, resolveProjectIdentity, type ProjectIdentity } from './project-identity.js';

/** Where an effective setting came from, weakest first. */
export type SettingSourceKind = 'default' | 'user-config' | 'project-config' | 'env' | 'flag';

export interface SettingSource {
  kind: SettingSourceKind;
  /** The file or variable that set it. */
  origin?: string;
}

export interface LoadSettingsOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Flag values by dotted setting path (`server.port`), the strongest layer. */
  flags?: Record<string, unknown>;
}

export interface LoadedSettings {
  settings: Readonly<Settings>;
  sources: Record<string, SettingSource>;
  home: string;
  project: ProjectIdentity;
}

/** engram's home folder: `ENGRAM_HOME`, else `~/.engram`. */
export function engramHome(env: Record<string, string | undefined> = process.env): string {
  const configured = env.ENGRAM_HOME;
  return configured && configured.length > 0 ? resolve(configured) : join(homedir(), '.engram');
}

/**
 * Loads the effective settings: defaults, then `~/.engram/config.json`, then the project's
 * `.engram.json`, then environment variables, then flags, each overriding the one before.
 */
export function loadSettings(options: LoadSettingsOptions = {}): LoadedSettings {
  const env = options.env ?? process.env;
  const cwd = resolve(options.cwd ?? process.cwd());
  const home = engramHome(env);
  const settings = structuredClone(DEFAULT_SETTINGS) as Settings;
  const sources: Record<string, SettingSource> = {};
  for (const definition of SETTING_DEFINITIONS) sources[definition.path] = { kind: 'default' };

  const userFile = join(home, 'config.json');
  applyLayer(settings, sources, readConfigFile(userFile), { kind: 'user-config', origin: userFile });

  const projectFile = findProjectConfigFile(cwd, findGitRoot(cwd));
  if (projectFile)
    applyLayer(settings, sources, readConfigFile(projectFile), { kind: 'project-config', origin: projectFile });

  for (const definition of SETTING_DEFINITIONS) {
    if (!definition.env) continue;
    const raw = env[definition.env];
    if (raw === undefined || raw === '') continue;
    setPath(settings, definition.path, readSettingValue(definition, raw, `environment variable ${definition.env}`));
    sources[definition.path] = { kind: 'env', origin: definition.env };
  }

  for (const [path, value] of Object.entries(options.flags ?? {})) {
    if (value === undefined) continue;
    setPath(settings, path, readSettingValue(definitionOf(path, 'flag'), value, `flag for ${path}`));
    sources[path] = { kind: 'flag' };
  }

  if (settings.store.url === '') settings.store.url = join(home, 'engram.db');
  const project = resolveProjectIdentity(cwd, settings.project.id || undefined);
  return { settings: deepFreeze(settings), sources, home, project };
}

function readConfigFile(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new EngramError('CONFIG_INVALID', `Config file ${path} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new EngramError('CONFIG_INVALID', `Config file ${path} must hold a JSON object.`);
  }
  return parsed as Record<string, unknown>;
}

function applyLayer(
  settings: Settings,
  sources: Record<string, SettingSource>,
  layer: Record<string, unknown> | undefined,
  source: SettingSource,
): void {
  if (!layer) return;
  for (const [path, value] of flatten(layer)) {
    if (path === '$schema') continue;
    setPath(
      settings,
      path,
      readSettingValue(definitionOf(path, source.origin ?? source.kind), value, `${path} in ${source.origin}`),
    );
    sources[path] = source;
  }
}

function flatten(object: Record<string, unknown>, prefix = ''): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(object)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      entries.push(...flatten(value as Record<string, unknown>, path));
    else entries.push([path, value]);
  }
  return entries;
}

/** The table's definition of `path` (its type, range or values decide what a layer may set it to). */
function definitionOf(path: string, where: string): SettingDefinition {
  const definition = findSettingDefinition(path);
  if (!definition)
    throw new EngramError(
      'CONFIG_INVALID',
      `Unknown setting "${path}" (from ${where}); run "engram config" to list the settings.`,
    );
  return definition;
}

function setPath(target: Settings, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target as unknown as Record<string, unknown>;
  for (const part of parts.slice(0, -1)) node = node[part] as Record<string, unknown>;
  node[parts.at(-1)!] = value;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
