import { flag, integer, text, type SettingGroups } from './setting-definition.js';

/**
 * Settings of the surfaces: engram chat, the HTTP service (engram serve), the model-call wrappers
 * (withMemory, the AI SDK middleware) and the Claude Code hooks.
 */

/** Rows of the settings table (settings.ts lists the groups in `engram config` order). */
export const SURFACE_SETTING_ROWS = {
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
  },
  wrappers: {
    recallTimeCapMs: integer(
      300,
      'How long withMemory and the AI SDK middleware may recall before a model call goes on without memory',
      { minimum: 1, maximum: 600_000, env: 'ENGRAM_WRAPPER_RECALL_TIME_CAP_MS' },
    ),
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
  },
} satisfies SettingGroups;
