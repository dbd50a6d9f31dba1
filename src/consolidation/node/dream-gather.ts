import { join } from 'node:path';
import { listSessions, type SessionSummary } from '../../session/node/session-listing.js';
import { projectSlug, sessionPaths } from '../../session/node/session-paths.js';
import { nodeNotesFiles } from '../../session/node/session-notes-files.js';
import { readTranscriptFile } from '../../extraction/node/read-transcript.js';
import type { GatheredSession } from '../gather.js';

export interface GatherSessionFilesOptions {
  /** The project whose sessions are read (their folder is `<home>/projects/<slug of projectRoot>`). */
  projectRoot: string;
  /** ENGRAM_HOME: engram's own sessions, with their notes. */
  engramHome?: string;
  /** Claude Code's config folder (`~/.claude`, or CLAUDE_CONFIG_DIR): its transcripts of the project. */
  claudeHome?: string;
  /** Only sessions active after this time (ISO-8601); null: every session. */
  since: string | null;
  maxSessions: number;
  /** A transcript larger than this is read from nothing but its notes (default 16 MiB). */
  maxTranscriptBytes?: number;
  /** Largest notes file read (default 256 KiB). */
  maxNotesBytes?: number;
  onWarning?: (warning: string) => void;
}

const DEFAULT_TRANSCRIPT_BYTES = 16 * 1024 * 1024;
const DEFAULT_NOTES_BYTES = 256 * 1024;

/**
 * Reads the gather phase's material from disk: the project's sessions of engram and of Claude
 * Code active since the last consolidation, newest first, each with its notes and messages. A
 * session that cannot be read is skipped with a warning; a missing folder has no sessions.
 */
export async function gatherSessionFiles(options: GatherSessionFilesOptions): Promise<GatheredSession[]> {
  const warn = options.onWarning ?? (() => undefined);
  const slug = projectSlug(options.projectRoot);
  const found: Array<{ summary: SessionSummary; source: GatheredSession['source']; notesPath?: string }> = [];
  if (options.engramHome !== undefined) {
    for (const summary of await listSessions({ projectDirectory: join(options.engramHome, 'projects', slug) }))
      found.push({
        summary,
        source: 'engram',
        notesPath: sessionPaths({ home: options.engramHome, cwd: options.projectRoot, sessionId: summary.sessionId })
          .notes,
      });
  }
  if (options.claudeHome !== undefined) {
    for (const summary of await listSessions({ projectDirectory: join(options.claudeHome, 'projects', slug) }))
      found.push({ summary, source: 'claude-code' });
  }
  const recent = found
    .filter(({ summary }) => options.since === null || summary.updatedAt > options.since)
    .sort((a, b) =>
      a.summary.updatedAt < b.summary.updatedAt ? 1 : a.summary.updatedAt > b.summary.updatedAt ? -1 : 0,
    )
    .slice(0, Math.max(0, options.maxSessions));
  const sessions: GatheredSession[] = [];
  for (const { summary, source, notesPath } of recent) {
    const session: GatheredSession = {
      sessionId: summary.sessionId,
      source,
      updatedAt: summary.updatedAt,
      messages: [],
    };
    if (notesPath !== undefined) {
      try {
        const notes = await nodeNotesFiles.read(notesPath, {
          maxBytes: options.maxNotesBytes ?? DEFAULT_NOTES_BYTES,
          label: 'Session notes',
        });
        if (notes !== undefined) session.notes = notes;
      } catch (error) {
        warn(`session-notes-unreadable: ${summary.sessionId}: ${(error as Error).message}`);
      }
    }
    if (summary.sizeBytes <= (options.maxTranscriptBytes ?? DEFAULT_TRANSCRIPT_BYTES)) {
      try {
        // engram's sessions are written in Claude Code's envelope too; the format is detected.
        const transcript = await readTranscriptFile(summary.path, {
          sessionId: summary.sessionId,
          maxBytes: options.maxTranscriptBytes ?? DEFAULT_TRANSCRIPT_BYTES,
        });
        session.messages = transcript.conversation.messages
          .filter(
            (message) => (message.role === 'user' || message.role === 'assistant') && !message.meta && message.text,
          )
          .map((message) => ({
            role: message.role as 'user' | 'assistant',
            text: message.text,
            ...(message.timestamp !== undefined && { timestamp: message.timestamp }),
          }));
      } catch (error) {
        warn(`transcript-unreadable: ${summary.sessionId}: ${(error as Error).message}`);
      }
    } else warn(`transcript-too-large: ${summary.sessionId}: ${summary.sizeBytes} bytes, notes only`);
    if (session.notes !== undefined || session.messages.length > 0) sessions.push(session);
  }
  return sessions;
}
