import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { HookInput } from './hook-input.js';

/**
 * The folder a hooked session belongs to, for the whole session. An agent's hook input carries the
 * session's current directory, which follows its `cd` (Claude Code 2.1.332: after a Bash `cd sub`,
 * Stop and SessionEnd get `cwd: …/sub`), so a session started in project A that moves into B would
 * be given B's memories and have A's facts stored in B. The first hook of a session that names a
 * folder (SessionStart, normally) fixes its root: the host's own word for the project when it gives
 * one (Claude Code's `CLAUDE_PROJECT_DIR`), else the hook's cwd; every later hook of that session
 * (a resume, a compaction, a subagent's, one whose cwd is gone) uses it. Kept per session in
 * `<ENGRAM_HOME>/hook-sessions/<agent>/<hash of the session id>.json` (0600), dropped after
 * `hooks.sessionRootDays` unused. Only node:fs here: the queueing hooks load this.
 */

export interface SessionRoot {
  /** The folder the session's hooks open engram for. */
  root: string;
  /** `remembered`: fixed by an earlier hook of the session; `first`: fixed now, by this hook. */
  source: 'remembered' | 'first';
}

export interface SessionRootOptions {
  home: string;
  /** The host, as a folder name (`claude-code`). */
  agent: string;
  sessionId: string;
  /** Where this hook says the session is, best first (the host's project folder, then its cwd); absent ones left out. */
  candidates: readonly (string | undefined)[];
  now?: number;
}

function folderOf(home: string, agent: string): string {
  return join(home, 'hook-sessions', agent.replace(/[^a-z0-9-]/gi, ''));
}

function fileOf(home: string, agent: string, sessionId: string): string {
  return join(folderOf(home, agent), `${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}.json`);
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function readRoot(path: string, sessionId: string): string | undefined {
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as { sessionId?: unknown; root?: unknown };
    return value.sessionId === sessionId && typeof value.root === 'string' ? value.root : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The session's root: the one remembered for it while that folder still exists, else the first
 * candidate that is a folder, remembered from now on. Undefined when no candidate is a folder.
 * Never throws: a root that cannot be remembered is still used for this hook.
 */
export function sessionRoot(options: SessionRootOptions): SessionRoot | undefined {
  const path = fileOf(options.home, options.agent, options.sessionId);
  const now = options.now ?? Date.now();
  const remembered = readRoot(path, options.sessionId);
  if (remembered !== undefined && isFolder(remembered)) {
    keepFresh(path, now);
    return { root: remembered, source: 'remembered' };
  }
  const root = options.candidates.find(
    (candidate): candidate is string => candidate !== undefined && isFolder(candidate),
  );
  if (root === undefined) return undefined;
  try {
    mkdirSync(folderOf(options.home, options.agent), { recursive: true, mode: 0o700 });
    // Whole or not at all: hooks of one session may run at once (they write the same root).
    const temporary = `${path}.${process.pid}.tmp`;
    const at = new Date(now).toISOString();
    writeFileSync(temporary, JSON.stringify({ sessionId: options.sessionId, root, at }), { mode: 0o600 });
    renameSync(temporary, path);
  } catch {
    // Not remembered (a full disk, a read-only home): the next hook decides again.
  }
  return { root, source: 'first' };
}

/** A session in use is not pruned: its file is touched once a day at most. */
function keepFresh(path: string, now: number): void {
  try {
    if (now - statSync(path).mtimeMs < 86_400_000) return;
    const date = new Date(now);
    utimesSync(path, date, date);
  } catch {
    // Pruned meanwhile: the next hook remembers it again.
  }
}

/** Drops the roots of sessions no hook touched for `days` (the worker calls this). Returns how many. */
export function pruneSessionRoots(home: string, agent: string, days: number, now = Date.now()): number {
  const folder = folderOf(home, agent);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const path = join(folder, name);
    try {
      if (now - statSync(path).mtimeMs > days * 86_400_000) {
        rmSync(path, { force: true });
        removed += 1;
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return removed;
}

/**
 * The folder a Claude Code hook works for: its session's root (above), fixed by its first hook from
 * Claude Code's project folder (`CLAUDE_PROJECT_DIR`), else that hook's cwd (the input's, else the
 * process's: `cwd`). With no engram home to remember it in, this hook's own best guess.
 */
export function sessionProjectFolder(options: {
  home: string;
  input: HookInput;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The agent whose hook this is, and the variable naming its project folder (default Claude Code's). */
  protocol?: { agent: string; projectDirEnv?: string };
}): string | undefined {
  const protocol = options.protocol ?? { agent: 'claude-code', projectDirEnv: 'CLAUDE_PROJECT_DIR' };
  const projectDir = protocol.projectDirEnv === undefined ? undefined : options.env[protocol.projectDirEnv];
  const candidates = [
    projectDir !== undefined && isAbsolute(projectDir) ? projectDir : undefined,
    options.input.cwd ?? options.cwd,
  ];
  if (options.home === '') return candidates.find((candidate) => candidate !== undefined && isFolder(candidate));
  return sessionRoot({ home: options.home, agent: protocol.agent, sessionId: options.input.sessionId, candidates })
    ?.root;
}
