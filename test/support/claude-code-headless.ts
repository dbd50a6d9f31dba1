import { existsSync } from 'node:fs';
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
