import { nodeNotesFiles } from '../session/node/session-notes-files.js';
import { access } from 'node:fs/promises';
import { openSidechainTranscript, SessionTranscriptWriter } from '../session/node/session-transcript-writer.js';
import { readSessionTranscript } from '../session/node/session-transcript-reader.js';
import { sessionPaths, type SessionPaths } from '../session/node/session-paths.js';
import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import { Session, type SessionNotesConfig, type SessionOptions } from '../session/session.js';
import { newSessionId } from '../session/session-input.js';
import { ToolResultStorage } from '../session/node/tool-result-storage.js';

/** A session backed by files under ENGRAM_HOME: what `openSession` / `resumeSession` take. */
export interface OpenSessionOptions extends Omit<
  SessionOptions,
  'transcript' | 'toolResultStorage' | 'notes' | 'resumed'
> {
  /** ENGRAM_HOME (`engramHome()` in src/node/load-settings.ts); sessions live in `<home>/projects/<slug>/`. */
  home: string;
  /** The project root (its slug names the project folder). */
  cwd: string;
  /** Session notes (default on): `false` turns layer 3 off; an object overrides model, template or prompt. */
  notes?: boolean | Pick<SessionNotesConfig, 'model' | 'template' | 'prompt'>;
  /** Write the transcript (default true). */
  transcript?: boolean;
}

/** A Session and the files it uses. */
export interface OpenedSession {
  session: Session;
  paths: SessionPaths;
}

/**
 * Builds a Session over its files (FORMATS §2.1 paths): transcript writer (created on disk with the
 * first message), tool-result storage, session notes with sidechain transcripts for their helper.
 * Does no I/O itself; the writers create their files lazily.
 */
export function openSession(options: OpenSessionOptions): OpenedSession {
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'openSession takes { model, home, cwd, ... }.');
  return buildSession(options, undefined);
}

// The one builder of both paths: a new session, or (from resumeSession) one that continues a transcript read back.
function buildSession(options: OpenSessionOptions, resumed: SessionOptions['resumed']): OpenedSession {
  const settings = options.settings ?? DEFAULT_SETTINGS;
  const sessionId = resumed?.sessionId ?? options.sessionId ?? newSessionId();
  const paths = sessionPaths({ home: options.home, cwd: options.cwd, sessionId });
  const now = options.now;
  const gitBranch = options.gitBranch ?? resumed?.metadata.gitBranch ?? '';
  const transcript =
    options.transcript === false
      ? undefined
      : new SessionTranscriptWriter({
          path: paths.transcript,
          sessionId,
          cwd: options.cwd,
          gitBranch,
          flushIntervalMs: settings.session.transcriptFlushMs,
          ...(now && { now }),
          ...(resumed && { metadata: resumed.metadata }),
        });
  const toolResultStorage = new ToolResultStorage({
    directory: paths.toolResults,
    thresholdBytes: settings.session.toolResultThresholdBytes,
    previewBytes: settings.session.toolResultPreviewBytes,
    pageBytes: settings.session.toolResultPageBytes,
  });
  const notesOverrides = typeof options.notes === 'object' && options.notes !== null ? options.notes : {};
  const notes: SessionNotesConfig | undefined =
    options.notes === false
      ? undefined
      : {
          ...notesOverrides,
          path: paths.notes,
          files: nodeNotesFiles,
          openHelperTranscript: (agentId) =>
            openSidechainTranscript({
              subagents: paths.subagents,
              agentId,
              sessionId,
              cwd: options.cwd,
              gitBranch,
              ...(now && { now }),
            }),
        };
  const { home: _home, notes: _notes, transcript: _transcript, ...sessionOptions } = options;
  const session = new Session({
    ...sessionOptions,
    settings,
    sessionId,
    cwd: options.cwd,
    gitBranch,
    ...(transcript && { transcript, transcriptPath: paths.transcript }),
    toolResultStorage,
    ...(notes && { notes }),
    ...(resumed && { resumed }),
  });
  return { session, paths };
}

/**
 * Reads a session's transcript back and builds the Session that continues it: the live messages
 * (from the latest compact boundary on), todo list, plan, files edited and metadata. NOT_FOUND when
 * the project has no transcript of that id.
 */
export async function resumeSession(options: OpenSessionOptions & { sessionId: string }): Promise<OpenedSession> {
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'resumeSession takes { model, home, cwd, sessionId, ... }.');
  const paths = sessionPaths({ home: options.home, cwd: options.cwd, sessionId: options.sessionId });
  await access(paths.transcript).catch((error: NodeJS.ErrnoException) => {
    throw new EngramError(
      'NOT_FOUND',
      `No session ${options.sessionId} in ${paths.projectDirectory} (${error.code ?? 'unreadable'}); list sessions to pick one.`,
      { cause: error },
    );
  });
  const resumed = await readSessionTranscript(paths.transcript);
  if (resumed.sessionId !== options.sessionId) {
    throw new EngramError(
      'STORE_CORRUPT',
      `The transcript ${paths.transcript} belongs to session ${resumed.sessionId}, not ${options.sessionId}.`,
    );
  }
  return buildSession(options, resumed);
}
