import type { CompactBoundary, SessionMessage, SessionTranscriptSink } from '../contracts/session-message.js';
import type { SessionEvents } from './session-events.js';
import { freezeMessage } from './session-message-helpers.js';

/**
 * A session's live message list, kept in step with its transcript: a message joins the list only
 * once the transcript took its line, so the two never disagree, and a compaction's swap of the
 * whole list is all or nothing. Messages are frozen, so each request repeats the previous one.
 */
export class SessionMessageLog {
  readonly #transcript: SessionTranscriptSink | undefined;
  readonly #events: SessionEvents;
  readonly #now: () => Date;
  readonly #generateId: () => string;
  #messages: SessionMessage[];
  #lastUuid: string | null;
  #createdAt: string | undefined;

  constructor(options: {
    transcript: SessionTranscriptSink | undefined;
    events: SessionEvents;
    now: () => Date;
    generateId: () => string;
    /** Where the list starts: empty, or what a resumed transcript held. */
    start: { messages: SessionMessage[]; lastUuid: string | null; createdAt: string | undefined };
  }) {
    this.#transcript = options.transcript;
    this.#events = options.events;
    this.#now = options.now;
    this.#generateId = options.generateId;
    this.#messages = options.start.messages;
    this.#lastUuid = options.start.lastUuid;
    this.#createdAt = options.start.createdAt;
  }

  /** The live list (a compaction replaces it). */
  get messages(): readonly SessionMessage[] {
    return this.#messages;
  }

  /** The uuid the next message's transcript line chains from (null before the first). */
  get lastUuid(): string | null {
    return this.#lastUuid;
  }

  /** When the session's first message was made. */
  get createdAt(): string | undefined {
    return this.#createdAt;
  }

  /** A new message with a fresh uuid and the time now, appended to the transcript and the list. */
  append(fields: Pick<SessionMessage, 'role' | 'content'> & Partial<SessionMessage>): SessionMessage {
    const message = freezeMessage({ uuid: this.#generateId(), timestamp: this.#now().toISOString(), ...fields });
    this.#push(message);
    return message;
  }

  /** A compaction's result: the boundary, then the new list chained from it; when the transcript refuses a line the list stays as it was. */
  replace(boundary: CompactBoundary, messages: readonly SessionMessage[]): void {
    const before = { messages: this.#messages, lastUuid: this.#lastUuid };
    try {
      this.#transcript?.append({ kind: 'compact-boundary', boundary: { ...boundary }, parentUuid: null });
      this.#messages = [];
      this.#lastUuid = boundary.uuid;
      for (const message of messages) this.#push(freezeMessage(message));
    } catch (error) {
      // The transcript refused a line (its messages were all accepted before, so this is rare): the session stays as it was.
      this.#messages = before.messages;
      this.#lastUuid = before.lastUuid;
      throw error;
    }
  }

  /** Microcompaction's lighter list: the transcript keeps the messages as they were sent. */
  rewrite(messages: readonly SessionMessage[]): void {
    this.#messages = messages.map(freezeMessage);
  }

  /** The transcript takes the message first: an entry it refuses (PAYLOAD_TOO_LARGE, INVALID_INPUT) changes nothing. */
  #push(message: SessionMessage): void {
    this.#transcript?.append({ kind: 'message', message, parentUuid: this.#lastUuid });
    this.#messages.push(message);
    this.#lastUuid = message.uuid;
    this.#createdAt ??= message.timestamp;
    this.#events.emit('message-added', { message });
  }
}
