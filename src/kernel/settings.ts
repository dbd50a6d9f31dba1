import type { SettingDefinition, SettingRow } from './setting-definition.js';
import { MEMORY_SETTING_ROWS } from './memory-settings.js';
import { PROVIDER_SETTING_ROWS } from './provider-settings.js';
import { SESSION_SETTING_ROWS } from './session-settings.js';
import { STORE_SETTING_ROWS } from './store-settings.js';
import { SURFACE_SETTING_ROWS } from './surface-settings.js';

/**
 * Every setting of engram, each stated once: its default (SPEC.md's numbers), its range or allowed
 * values, the environment variable that sets it and one line saying what it means. The `Settings`
 * type, the frozen `DEFAULT_SETTINGS` and `SETTING_DEFINITIONS` (what `engram config` lists) are
 * derived from the table below; setting-checks.ts holds the checks the config loader applies to
 * each layer (~/.engram/config.json, the project's .engram.json, environment variables, CLI flags).
 * The rows live with their subject (store-, memory-, session-, provider- and surface-settings.ts).
 */

/** The table: one group per subject, in the order `engram config` lists them. */
const SETTINGS_TABLE = {
  store: STORE_SETTING_ROWS.store,
  memory: MEMORY_SETTING_ROWS.memory,
  project: STORE_SETTING_ROWS.project,
  recall: MEMORY_SETTING_ROWS.recall,
  injection: MEMORY_SETTING_ROWS.injection,
  tokens: MEMORY_SETTING_ROWS.tokens,
  index: MEMORY_SETTING_ROWS.index,
  dedupe: MEMORY_SETTING_ROWS.dedupe,
  aging: MEMORY_SETTING_ROWS.aging,
  extraction: MEMORY_SETTING_ROWS.extraction,
  explicitMemory: MEMORY_SETTING_ROWS.explicitMemory,
  session: SESSION_SETTING_ROWS.session,
  notes: SESSION_SETTING_ROWS.notes,
  compaction: SESSION_SETTING_ROWS.compaction,
  dream: MEMORY_SETTING_ROWS.dream,
  memoryTool: SESSION_SETTING_ROWS.memoryTool,
  sandbox: SESSION_SETTING_ROWS.sandbox,
  locks: STORE_SETTING_ROWS.locks,
  jobs: STORE_SETTING_ROWS.jobs,
  migrate: STORE_SETTING_ROWS.migrate,
  instructions: SESSION_SETTING_ROWS.instructions,
  chat: SURFACE_SETTING_ROWS.chat,
  server: SURFACE_SETTING_ROWS.server,
  embedding: PROVIDER_SETTING_ROWS.embedding,
  model: PROVIDER_SETTING_ROWS.model,
  wrappers: SURFACE_SETTING_ROWS.wrappers,
  hooks: SURFACE_SETTING_ROWS.hooks,
};

type SettingsTable = typeof SETTINGS_TABLE;

/** Every setting's value, grouped by subject; derived from the table, so a setting is added in one place. */
export type Settings = {
  [Group in keyof SettingsTable]: {
    [Key in keyof SettingsTable[Group]]: SettingsTable[Group][Key] extends { readonly default: infer Value }
      ? Value
      : never;
  };
};

/** A setting's dotted path, e.g. `'recall.topK'`. */
export type SettingPath = {
  [Group in keyof Settings & string]: `${Group}.${keyof Settings[Group] & string}`;
}[keyof Settings & string];

/** The type of the setting at `Path`. */
export type SettingValue<Path extends SettingPath> = Path extends `${infer Group extends keyof Settings}.${infer Key}`
  ? Key extends keyof Settings[Group]
    ? Settings[Group][Key]
    : never
  : never;

/** Every setting, in table order (the order `engram config` lists them in). */
export const SETTING_DEFINITIONS: readonly SettingDefinition[] = Object.freeze(
  Object.entries(SETTINGS_TABLE).flatMap(([group, rows]) =>
    Object.entries(rows as Record<string, SettingRow<SettingDefinition>>).map(
      ([key, row]) => Object.freeze({ path: `${group}.${key}`, ...row }) as SettingDefinition,
    ),
  ),
);

/** Every default, frozen: `DEFAULT_SETTINGS.recall.topK` is 8. */
export const DEFAULT_SETTINGS: { readonly [Group in keyof Settings]: Readonly<Settings[Group]> } = Object.freeze(
  Object.fromEntries(
    Object.entries(SETTINGS_TABLE).map(([group, rows]) => [
      group,
      Object.freeze(
        Object.fromEntries(
          Object.entries(rows as Record<string, SettingRow<SettingDefinition>>).map(([key, row]) => [key, row.default]),
        ),
      ),
    ]),
  ),
) as unknown as Settings;

const definitionsByPath = new Map(SETTING_DEFINITIONS.map((definition) => [definition.path, definition]));

/** The definition of the setting at `path`; undefined when no setting has that path. */
export function findSettingDefinition(path: string): SettingDefinition | undefined {
  return definitionsByPath.get(path);
}

/** Reads a setting by dotted path. */
export function getSetting(settings: Settings, path: string): unknown {
  let node: unknown = settings;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
