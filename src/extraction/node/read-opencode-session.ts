import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { closeSqlite, openSqlite, type SqliteConnection } from '../../adapters/sqlite/sqlite-driver.js';
import { EngramError } from '../../kernel/errors.js';
import { parseOpenCodeSession } from '../transcripts/opencode-transcript.js';
import { cleanTranscriptText } from '../transcripts/transcript-text-cleaning.js';
import type { ParsedTranscript } from '../transcripts/claude-code-transcript.js';

/** One session of an OpenCode database, as listed. */
export interface OpenCodeSessionEntry {
  id: string;
  parentId?: string;
  directory: string;
  title: string;
  /** Milliseconds since the epoch. */
  timeUpdated: number;
}

/**
 * Reads OpenCode's SQLite database (`~/.local/share/opencode/opencode.db`) read-only, so a running
 * OpenCode is never disturbed (it writes in WAL mode; a reader sees the last committed state).
 */
function withDatabase<T>(path: string, use: (db: SqliteConnection) => T): T {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new EngramError('NOT_FOUND', `No OpenCode database at ${absolute}.`);
  let db: SqliteConnection;
  try {
    db = openSqlite(absolute, { readOnly: true });
  } catch (error) {
    throw new EngramError(
      'INVALID_INPUT',
      `Cannot open ${absolute} as a SQLite database: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  try {
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map(
        (row) => row.name,
      ),
    );
    if (!['session', 'message', 'part'].every((table) => tables.has(table)))
      throw new EngramError(
        'INVALID_INPUT',
        `${absolute} is not an OpenCode database (no session, message and part tables): give the path of opencode.db.`,
      );
    return use(db);
  } catch (error) {
    if (error instanceof EngramError) throw error;
    throw new EngramError('INVALID_INPUT', `Cannot read ${absolute}: ${(error as Error).message}`, { cause: error });
  } finally {
    closeSqlite(db);
  }
}

/** The sessions of an OpenCode database, newest first; only those started in `directory` when given. */
export function listOpenCodeSessions(path: string, options: { directory?: string } = {}): OpenCodeSessionEntry[] {
  return withDatabase(path, (db) => {
    const rows = db
      .prepare(
        `SELECT id, parent_id, directory, title, time_updated FROM session
         ${options.directory === undefined ? '' : 'WHERE directory = ?'} ORDER BY time_updated DESC`,
      )
      .all(...(options.directory === undefined ? [] : [options.directory])) as Array<{
      id: string;
      parent_id: string | null;
      directory: string;
      title: string;
      time_updated: number;
    }>;
    return rows.map((row) => ({
      id: row.id,
      ...(row.parent_id && { parentId: row.parent_id }),
      directory: row.directory,
      title: row.title,
      timeUpdated: Number(row.time_updated),
    }));
  });
}

/** One session of an OpenCode database as a conversation (control characters replaced, as for every transcript). */
export function readOpenCodeSession(path: string, sessionId: string): ParsedTranscript {
  return withDatabase(path, (db) => {
    const session = db.prepare('SELECT id, parent_id, directory, title FROM session WHERE id = ?').get(sessionId) as
      { id: string; parent_id: string | null; directory: string; title: string } | undefined;
    if (!session)
      throw new EngramError('NOT_FOUND', `No session ${JSON.stringify(sessionId.slice(0, 80))} in ${resolve(path)}.`);
    const messages = db
      .prepare('SELECT id, time_created, data FROM message WHERE session_id = ?')
      .all(sessionId) as Array<{ id: string; time_created: number; data: string }>;
    const parts = db
      .prepare('SELECT id, message_id, time_created, data FROM part WHERE session_id = ?')
      .all(sessionId) as Array<{ id: string; message_id: string; time_created: number; data: string }>;
    return cleanTranscriptText(
      parseOpenCodeSession({
        session: { id: session.id, parentId: session.parent_id, directory: session.directory, title: session.title },
        messages: messages.map((row) => ({
          id: row.id,
          timeCreated: Number(row.time_created),
          data: String(row.data),
        })),
        parts: parts.map((row) => ({
          id: row.id,
          messageId: row.message_id,
          timeCreated: Number(row.time_created),
          data: String(row.data),
        })),
      }),
    );
  });
}
