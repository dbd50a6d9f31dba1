import type { ConversationMessage, ConversationRole } from '../../contracts/conversation.js';
import type { ParsedTranscript } from './claude-code-transcript.js';

/**
 * Plain text as a conversation. When lines start with a speaker (`User:`, `Human:`, `Assistant:`,
 * `AI:`, `Claude:`), each such line begins a message and the lines under it continue it; text
 * before the first speaker is the user's. Otherwise every paragraph (separated by a blank line) is
 * one user message.
 *
 * Message ids are the position and a hash of the text (`m2-3f9a…`), so appending to the file keeps
 * the ids of what was there (a second `engram extract` reads only what is new) while a message
 * that grew gets a new id. Lines added to the last message are recognised as growth: the message
 * lists the ids it had at its earlier line ends as `partIds`, so the cursor re-reads that message
 * alone. Text added to the end of its last line cannot be told from an edit: everything is read
 * again (the cursor's fallback), never nothing.
 */
const SPEAKER = /^\s*(user|human|assistant|ai|claude)\s*:\s?/i;
// Ids of earlier versions kept per message: a cursor older than this many added lines reads all again.
const MAX_EARLIER_VERSIONS = 32;

export interface PlainTextTranscriptOptions {
  sessionId?: string;
}

/** Reads plain text as a conversation. Pure. */
export function parsePlainTextTranscript(text: string, options: PlainTextTranscriptOptions = {}): ParsedTranscript {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const dialogue = lines.some((line) => SPEAKER.test(line));
  const entries = dialogue ? speakerTurns(lines) : paragraphs(lines);
  const messages: ConversationMessage[] = [];
  for (const entry of entries) {
    const messageText = entry.lines.join('\n').trim();
    if (messageText === '') continue;
    const ids = versionIds(`m${messages.length + 1}`, entry.lines);
    messages.push({
      id: ids.at(-1)!,
      role: entry.role,
      text: messageText,
      ...(ids.length > 1 && { partIds: ids.slice(-1 - MAX_EARLIER_VERSIONS, -1) }),
    });
  }
  return { conversation: { sessionId: options.sessionId ?? 'text', messages }, warnings: [], skippedLines: 0 };
}

interface TextEntry {
  role: ConversationRole;
  lines: string[];
}

function speakerTurns(lines: readonly string[]): TextEntry[] {
  const turns: TextEntry[] = [];
  let current: TextEntry = { role: 'user', lines: [] };
  for (const line of lines) {
    const match = SPEAKER.exec(line);
    if (match) {
      turns.push(current);
      const speaker = match[1]!.toLowerCase();
      current = {
        role: speaker === 'user' || speaker === 'human' ? 'user' : 'assistant',
        lines: [line.slice(match[0].length)],
      };
    } else {
      current.lines.push(line);
    }
  }
  turns.push(current);
  return turns;
}

function paragraphs(lines: readonly string[]): TextEntry[] {
  const found: TextEntry[] = [];
  let current: string[] = [];
  for (const line of [...lines, '']) {
    if (line.trim() === '') {
      if (current.length > 0) found.push({ role: 'user', lines: current });
      current = [];
    } else {
      current.push(line);
    }
  }
  return found;
}

/** The message's id at each of its line ends that holds text, oldest first: `<base>-<hash of the lines so far>`. */
function versionIds(base: string, lines: readonly string[]): string[] {
  const ids: string[] = [];
  const hash = new TextHash();
  for (const line of lines) {
    hash.add(`${line}\n`);
    if (line.trim() !== '') ids.push(`${base}-${hash.hex()}`);
  }
  return ids;
}

/** A short stable fingerprint of a text (48 bits as hex), for message ids of formats that carry none. */
export function textFingerprint(text: string): string {
  const hash = new TextHash();
  hash.add(text);
  return hash.hex();
}

/** FNV-1a-style hashing of UTF-16 code units in two 32-bit lanes (48 bits shown): stable ids, no I/O, no dependency. */
class TextHash {
  #low = 0x811c9dc5;
  #high = 0x050c5d1f;

  add(text: string): void {
    for (let index = 0; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      this.#low = Math.imul(this.#low ^ code, 0x01000193) >>> 0;
      this.#high = Math.imul(this.#high ^ code, 0x5bd1e995) >>> 0;
    }
  }

  hex(): string {
    return `${this.#low.toString(16).padStart(8, '0')}${this.#high.toString(16).padStart(8, '0').slice(0, 4)}`;
  }
}
