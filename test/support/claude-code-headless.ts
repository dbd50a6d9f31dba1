import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * The real Claude Code CLI (the pinned dev dependency), run headless against a loopback server:
 * the platform package's binary when it is there (it works with or without npm's install scripts),
 * else node_modules/.bin/claude.
 */
export function claudeBinary(): string {
  const require = createRequire(import.meta.url);
  for (const name of [`@anthropic-ai/claude-code-${process.platform}-${process.arch}`]) {
    try {
      const binary = join(dirname(require.resolve(`${name}/package.json`)), 'claude');
      if (existsSync(binary)) return binary;
    } catch {
      // Not installed for this platform: try the wrapper.
    }
  }
  return resolve('node_modules/.bin/claude');
}

/**
 * What keeps a `claude -p` run a full session, as a user's plain `claude -p` is today: settings' hooks,
 * enabled plugins (engram's), skills and CLAUDE.md. Claude Code 2.1.332's `--bare` ("Minimal mode:
 * skip hooks (those defined in settings and by installed plugins) … Sets CLAUDE_CODE_SIMPLE=1", and
 * announced to become `-p`'s default) and `--safe-mode` (CLAUDE_CODE_SAFE_MODE) turn those off; its
 * way out of bare mode is "unset CLAUDE_CODE_SIMPLE", and an explicit "0" is how it reads a variable
 * set off. So the tests set both variables off, name the setting sources engram's plugin is enabled
 * in, and pass an opt-out flag when the CLI's help offers one (none in 2.1.332). The e2e tests then
 * fail, rather than pass without engram, if `-p` stops loading plugins.
 */
export const CLAUDE_FULL_SESSION_ENV: Readonly<Record<string, string>> = {
  CLAUDE_CODE_SIMPLE: '0',
  CLAUDE_CODE_SAFE_MODE: '0',
};

const OPT_OUT_FLAGS = ['--no-bare'];
let fullSessionFlags: string[] | undefined;

/** The `-p` flags that keep plugins and settings' hooks loaded (see CLAUDE_FULL_SESSION_ENV). */
export function claudeFullSessionArgs(binary = claudeBinary()): string[] {
  if (fullSessionFlags === undefined) {
    // Its own throwaway HOME: the CLI may write its state file there.
    const home = mkdtempSync(join(tmpdir(), 'engram-cc-help-'));
    const help = spawnSync(binary, ['--help'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb', ...CLAUDE_FULL_SESSION_ENV },
      timeout: 30_000,
    }).stdout;
    rmSync(home, { recursive: true, force: true });
    const offered = OPT_OUT_FLAGS.filter((flag) => new RegExp(`(^|\\s)${flag}(\\s|,|$)`, 'm').test(help ?? ''));
    fullSessionFlags = [...offered, '--setting-sources', 'user,project,local'];
  }
  return fullSessionFlags;
}

/** A throwaway HOME whose user settings hold a hook on every event, each appending its event name to `hookLog`. */
export interface ClaudeHome {
  home: string;
  hookLog: string;
  /** A clean environment for the CLI: this HOME, the loopback server, a dummy key, no nonessential traffic. */
  env(baseUrl: string, extra?: Record<string, string>): Record<string, string>;
  /** The events whose hooks ran, in order. */
  firedHooks(): Promise<string[]>;
  close(): Promise<void>;
}

const HOOK_EVENTS = ['SessionStart', 'UserPromptSubmit', 'Stop', 'SessionEnd', 'PreCompact'] as const;

/** Makes the HOME (user settings with logging hooks); `apiKey: false` leaves the key out (not logged in). */
export async function makeClaudeHome(): Promise<ClaudeHome> {
  const home = await mkdtemp(join(tmpdir(), 'engram-cc-home-'));
  const hookLog = join(home, 'hooks.log');
  await mkdir(join(home, '.claude'), { recursive: true });
  const hooks = Object.fromEntries(
    HOOK_EVENTS.map((event) => [
      event,
      [{ hooks: [{ type: 'command', command: `echo ${event} >> '${hookLog}'`, timeout: 5 }] }],
    ]),
  );
  await writeFile(join(home, '.claude', 'settings.json'), JSON.stringify({ hooks }));
  return {
    home,
    hookLog,
    env(baseUrl, extra = {}) {
      return {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        TERM: 'dumb',
        ANTHROPIC_BASE_URL: baseUrl,
        ANTHROPIC_API_KEY: 'dummy',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        ...CLAUDE_FULL_SESSION_ENV,
        ...extra,
      };
    },
    async firedHooks() {
      const text = await readFile(hookLog, 'utf8').catch(() => '');
      return text.split('\n').filter(Boolean);
    },
    close: () => rm(home, { recursive: true, force: true }),
  };
}
