import {
  flag,
  integer,
  number,
  text,
  type SettingDefinition,
  type SettingGroups,
  type SettingRow,
} from './setting-definition.js';
import { MEMORY_SETTING_ROWS } from './settings-memory-rows.js';
import { SESSION_SETTING_ROWS } from './settings-session-rows.js';
import { MODEL_SETTING_ROWS } from './settings-model-rows.js';

/**
 * Every setting of engram, each stated once: its default (SPEC.md's numbers), its range or allowed
 * values, the environment variable that sets it and one line saying what it means. The `Settings`
 * type, the frozen `DEFAULT_SETTINGS` and `SETTING_DEFINITIONS` (what `engram config` lists) are
 * derived from the table below. Its rows by subject live beside it: settings-memory-rows.ts (the
 * store, recall and what they hold), settings-session-rows.ts (extraction, sessions, the dream),
 * settings-model-rows.ts (the embedder, the models, the wrappers); the rest are here.
 * setting-definition.ts says what a row is and holds the builders the rows are written with,
 * setting-checks.ts the checks the config loader applies to each layer (~/.engram/config.json, the
 * project's .engram.json, environment variables, CLI flags).
 */

/** The table: one row per setting, grouped as `Settings` is (`recall.topK` is the row `topK` of `recall`). */
const SETTINGS_TABLE = {
  ...MEMORY_SETTING_ROWS,
  ...SESSION_SETTING_ROWS,
  sandbox: {
    timeoutMs: integer(10_000, 'How long a sandboxed shell command may run before it is killed', { minimum: 1 }),
    outputMaxBytes: integer(
      64 * 1024,
      'Output of a sandboxed command kept (the rest is cut, and the command stopped)',
      { minimum: 1 },
    ),
    readMaxBytes: integer(256 * 1024, 'Largest slice of a file the sandboxed read tool returns', { minimum: 1 }),
    listMaxEntries: integer(500, 'Entries the sandboxed directory listing shows', { minimum: 1 }),
    searchMaxMatches: integer(200, 'Matching lines the sandboxed search returns', { minimum: 1 }),
    searchMaxFiles: integer(5_000, 'Files the sandboxed search reads at most', { minimum: 1 }),
    searchMaxFileBytes: integer(1024 * 1024, 'Files larger than this are skipped by the sandboxed search', {
      minimum: 1,
    }),
    searchTimeoutMs: integer(5_000, 'Time budget of one sandboxed search, regular expressions included', {
      minimum: 1,
    }),
    maxPathLength: integer(1_024, 'Longest path the sandboxed tools accept', { minimum: 32 }),
    maxCommandLength: integer(4_096, 'Longest command line the sandboxed shell accepts', { minimum: 32 }),
  },
  locks: {
    waitMs: integer(10_000, 'How long a store lock (e.g. dedupe on write) is waited for before LOCK_TIMEOUT'),
    leaseMs: integer(
      15_000,
      'Lease of a held store lock, renewed while held; a holder silent this long is taken over',
      { minimum: 100 },
    ),
    pollMaxMs: integer(100, 'Longest pause between tries while waiting for a store lock held by another process', {
      minimum: 1,
    }),
  },
  jobs: {
    maxAttempts: integer(5, 'Runs a background job gets before it is marked failed', { minimum: 1, maximum: 1_000 }),
    maxPayloadBytes: integer(1024 * 1024, 'Largest JSON payload one background job may carry', { minimum: 1 }),
  },
  migrate: {
    pageSize: integer(
      500,
      'Records engram migrate reads and writes per transaction (a resumed copy redoes at most one page)',
      { minimum: 1, maximum: 10_000 },
    ),
  },
  instructions: {
    managedPath: text(
      '/etc/claude-code/CLAUDE.md',
      "Managed-policy instruction file loaded first (Claude Code's /etc/claude-code/CLAUDE.md); empty for none",
      { env: 'ENGRAM_MANAGED_INSTRUCTIONS' },
    ),
    allowImportsFrom: text(
      '',
      'Folders (":"-separated, absolute or ~/) that @imports may reach besides the defaults: the project and ~/.claude for project files, home for user files',
    ),
    maxImportDepth: integer(
      5,
      '@path imports followed at most this many levels deep (deeper ones are reported, not loaded)',
      { maximum: 20 },
    ),
    maxFileBytes: integer(4 * 1024 * 1024, 'Instruction files larger than this are skipped with a warning', {
      minimum: 1,
    }),
    maxTotalBytes: integer(
      32 * 1024 * 1024,
      'Bytes of instruction files loaded in all; later files are skipped with a warning',
      { minimum: 1 },
    ),
    maxFiles: integer(1_000, 'Instruction files (rules and imports included) loaded at most', { minimum: 1 }),
    maxRuleEntries: integer(10_000, 'Directory entries looked at under each .claude/rules folder at most', {
      minimum: 1,
    }),
    maxPathPatterns: integer(
      1_000,
      "Glob patterns one rule's paths: may expand to (braces included); the rest are dropped with a warning",
      { minimum: 1 },
    ),
  },
  chat: {
    writeMaxBytes: integer(
      1024 * 1024,
      "Largest file the chat agent's write_file tool writes (after the user confirms)",
      { minimum: 1 },
    ),
    inputMaxBytes: integer(256 * 1024, 'Longest line (a paste included) engram chat takes as one message', {
      minimum: 1,
    }),
  },
  server: {
    host: text('127.0.0.1', 'Address the service binds; non-loopback requires a token', { env: 'ENGRAM_HOST' }),
    port: integer(7437, 'Port the service listens on', { maximum: 65_535, env: 'ENGRAM_PORT' }),
    token: text('', 'Bearer token required on every request when set', { env: 'ENGRAM_TOKEN', secret: true }),
    maxBodyBytes: integer(1024 * 1024, 'Largest request body the service accepts', { minimum: 1 }),
    stopGraceMs: integer(
      5_000,
      "How long a long-running engram process (serve, mcp, the hooks' worker, chat) may finish its work after SIGTERM or SIGINT before it exits anyway; a second signal exits at once",
      { minimum: 1, maximum: 600_000, env: 'ENGRAM_STOP_GRACE_MS' },
    ),
  },
  ...MODEL_SETTING_ROWS,
  sync: {
    remote: text(
      '',
      'Personal git remote that global, user: and (see projectsToPersonal) project memories sync through; "engram sync --remote <url>" sets it. A project\'s .engram.json cannot.',
      { env: 'ENGRAM_SYNC_REMOTE' },
    ),
    projectRemote: text(
      '',
      "The git remote this project's team keeps its project memories in: put it in the project's .engram.json, committed with the code",
      { env: 'ENGRAM_SYNC_PROJECT_REMOTE' },
    ),
    branch: text('engram', 'Branch of a sync remote that holds the memories', { env: 'ENGRAM_SYNC_BRANCH' }),
    projectsToPersonal: flag(true, 'Projects without a team remote of their own sync through the personal remote', {
      env: 'ENGRAM_SYNC_PROJECTS_TO_PERSONAL',
    }),
    intervalMinutes: number(10, 'engram serve syncs this often in the background (0: only after writes)', {
      maximum: 10_080,
      env: 'ENGRAM_SYNC_INTERVAL_MINUTES',
    }),
    debounceSeconds: integer(20, 'After a write, background sync waits this long without another before it runs', {
      maximum: 86_400,
      env: 'ENGRAM_SYNC_DEBOUNCE_SECONDS',
    }),
    retryMinSeconds: integer(
      30,
      'First wait after background sync could not reach a remote; doubles after each failure',
      {
        minimum: 1,
        maximum: 86_400,
      },
    ),
    retryMaxMinutes: integer(60, 'Longest wait between background attempts while a remote stays unreachable', {
      minimum: 1,
      maximum: 10_080,
    }),
    timeoutMs: integer(120_000, 'Longest one git command of a sync may run (fetch and push included)', {
      minimum: 1_000,
      maximum: 3_600_000,
      env: 'ENGRAM_SYNC_TIMEOUT_MS',
    }),
    maxFileBytes: integer(
      1024 * 1024,
      'Largest memory file read from a remote; larger ones are left there and reported',
      {
        minimum: 1_024,
        maximum: 64 * 1024 * 1024,
      },
    ),
    machineName: text('', "This machine's name in the remote's commits; default the host name", {
      env: 'ENGRAM_SYNC_MACHINE',
    }),
  },
  hooks: {
    deadlineMs: integer(
      1_000,
      'How long a Claude Code hook may work before it answers with no context and logs why (the prompt never waits longer)',
      { minimum: 50, maximum: 60_000, env: 'ENGRAM_HOOK_DEADLINE_MS' },
    ),
    recall: flag(true, 'Claude Code hooks inject memory: the index at session start, recalled memories per prompt', {
      env: 'ENGRAM_HOOK_RECALL',
    }),
    extract: flag(true, 'Claude Code hooks queue extraction of the session at Stop, PreCompact and SessionEnd', {
      env: 'ENGRAM_HOOK_EXTRACT',
    }),
    worker: flag(
      true,
      'A queueing Claude Code hook starts a detached worker for the model work; false leaves the queue to engram serve',
      { env: 'ENGRAM_HOOK_WORKER' },
    ),
    sessionRootDays: integer(
      30,
      "Days a hooked session's project folder (fixed by its first hook, used by every later one whatever its cwd) is kept unused",
      { minimum: 1, maximum: 3_650 },
    ),
    transcriptReadTries: integer(
      8,
      "Drains that try to read a hooked session's transcript when reading fails in a way that may pass (an I/O error, too many open files), waiting 5 s doubling in between, before the event is given up (logged); a transcript that can never be read (gone, a folder, no permission) is given up at once",
      { minimum: 1, maximum: 100, env: 'ENGRAM_HOOK_TRANSCRIPT_READ_TRIES' },
    ),
    workerLingerMs: integer(
      3_600_000,
      "How long the hooks' worker stays for what waits to be retried (an event the store could not take, a failed extraction); what still waits then is left to the next hook, engram serve or engram queue run",
      { minimum: 0, maximum: 86_400_000, env: 'ENGRAM_HOOK_WORKER_LINGER_MS' },
    ),
    server: flag(
      true,
      'A prompt or session-start hook that no hook server answered starts one (engram.mjs hook serve: resident, on a unix socket in <ENGRAM_HOME>/run/, so later hooks start no Node); false: every hook runs in its own process',
      { env: 'ENGRAM_HOOK_SERVER' },
    ),
    serverIdleMs: integer(
      900_000,
      'How long the hook server stays with no hook asking before it exits (the next hook runs in its own process and starts it again)',
      { minimum: 200, maximum: 86_400_000, env: 'ENGRAM_HOOK_SERVER_IDLE_MS' },
    ),
    workerNice: integer(
      19,
      "Niceness of the hooks' detached worker (0 normal, 19 lowest): its model work and module loading never take the CPU from the hooks Claude Code is waiting for",
      { minimum: 0, maximum: 19 },
    ),
  },
} satisfies SettingGroups;

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

/** Every default, frozen: `DEFAULT_SETTINGS.recall.topK` is 11. */
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
