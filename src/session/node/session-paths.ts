import { isAbsolute, join, resolve } from 'node:path';
import { EngramError } from '../../kernel/errors.js';

/**
 * Where a session's files live (FORMATS.md §2.1, with `~/.engram` in place of `~/.claude`):
 * `<home>/projects/<slug>/<sessionId>.jsonl` and, beside it, the folder `<sessionId>/` with
 * `tool-results/`, `session-notes.md` and `subagents/agent-<agentId>.jsonl`.
 */

/** Longest slug kept whole; a longer one is cut here and suffixed with a hash of the full path. */
export const PROJECT_SLUG_MAX_LENGTH = 200;
/** Longest session or agent id accepted (ids become file names). */
export const SESSION_ID_MAX_LENGTH = 200;

const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Every path of one session. */
export interface SessionPaths {
  /** `<home>/projects/<slug>`: every session of the project, one `<sessionId>.jsonl` each. */
  projectDirectory: string;
  /** `<projectDirectory>/<sessionId>.jsonl`. */
  transcript: string;
  /** `<projectDirectory>/<sessionId>/`: the session's other files. */
  sessionDirectory: string;
  /** Tool results too large to keep in the context (`<toolUseId>.txt`). */
  toolResults: string;
  /** The session notes (layer 3). */
  notes: string;
  /** Helper (sidechain) transcripts, `agent-<agentId>.jsonl`. */
  subagents: string;
}

/**
 * The project folder name of a working directory: every character outside `[A-Za-z0-9]` becomes
 * `-`; past 200 characters, the first 200, `-`, and a base-36 hash of the full path (Claude Code's
 * djb2 fallback, so two long paths with one prefix never share a folder).
 * @example projectSlug('/home/me/projects/app') === '-home-me-projects-app'
 */
export function projectSlug(cwd: string): string {
  if (typeof cwd !== 'string' || cwd.length === 0 || cwd.includes('\u0000')) {
    throw new EngramError('INVALID_INPUT', 'The project directory must be a non-empty path without NUL characters.');
  }
  const slug = cwd.replace(/[^A-Za-z0-9]/g, '-');
  if (slug.length <= PROJECT_SLUG_MAX_LENGTH) return slug;
  return `${slug.slice(0, PROJECT_SLUG_MAX_LENGTH)}-${Math.abs(djb2(cwd)).toString(36)}`;
}

/** The paths of one session. Refuses a session id that could leave the project folder. */
export function sessionPaths(options: { home: string; cwd: string; sessionId: string }): SessionPaths {
  const { home, cwd } = options;
  if (typeof home !== 'string' || home.length === 0 || home.includes('\u0000')) {
    throw new EngramError(
      'INVALID_INPUT',
      'The engram home must be a non-empty path (ENGRAM_HOME, default ~/.engram).',
    );
  }
  const sessionId = validateSessionId(options.sessionId);
  const projectDirectory = join(resolve(home), 'projects', projectSlug(isAbsolute(cwd) ? cwd : resolve(cwd)));
  const sessionDirectory = join(projectDirectory, sessionId);
  return {
    projectDirectory,
    transcript: join(projectDirectory, `${sessionId}.jsonl`),
    sessionDirectory,
    toolResults: join(sessionDirectory, 'tool-results'),
    notes: join(sessionDirectory, 'session-notes.md'),
    subagents: join(sessionDirectory, 'subagents'),
  };
}

/** The transcript of one helper agent of a session: `<subagents>/agent-<agentId>.jsonl`. */
export function subagentTranscriptPath(subagents: string, agentId: string): string {
  return join(subagents, `agent-${validateSessionId(agentId, 'agent id')}.jsonl`);
}

/**
 * A session (or agent) id as a file name: letters, digits, `.`, `_`, `-`, starting with a letter
 * or digit, at most 200 characters. Anything else (path separators, `..`, control characters) is
 * refused, since the id becomes part of a path.
 */
export function validateSessionId(value: unknown, what = 'session id'): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new EngramError('INVALID_INPUT', `The ${what} must be a non-empty string (letters, digits, '.', '_', '-').`);
  }
  if (value.length > SESSION_ID_MAX_LENGTH) {
    throw new EngramError(
      'INVALID_INPUT',
      `The ${what} is ${value.length} characters; use at most ${SESSION_ID_MAX_LENGTH}.`,
    );
  }
  if (!SESSION_ID_PATTERN.test(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      `The ${what} ${JSON.stringify(value.slice(0, 60))} may hold only letters, digits, '.', '_' and '-' and must start with a letter or digit (it names a file).`,
    );
  }
  return value;
}

/** djb2 as Claude Code's fallback computes it: 32-bit signed, over UTF-16 code units. */
function djb2(text: string): number {
  let hash = 0;
  for (let index = 0; index < text.length; index += 1) hash = ((hash << 5) - hash + text.charCodeAt(index)) | 0;
  return hash;
}
