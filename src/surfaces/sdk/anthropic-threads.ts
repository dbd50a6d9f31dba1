// Anthropic's message threads (beta): the server holds the conversation, so a request that continues
// a thread sends only the new messages and neither `system` nor `tools`. The wrapper keeps what each
// thread said so far, by the id of its last reply, so extraction still sees the whole conversation
// under one name and a tool loop over a thread is queued once, with its final answer.
import type { ConversationMessage } from '../../contracts/conversation.js';
import { shortHash } from './wrapped-call.js';

type Json = Record<string, unknown>;

/** What a thread said before a request: its conversation's name and its messages. */
export interface ThreadTurns {
  sessionId: string;
  messages: ConversationMessage[];
}

/** How many threads are followed at once; the oldest is let go past it (its next turn is then named by its reply id). */
const MAX_THREADS = 256;

/** The `thread` field of a request: `{ type: 'create' }` or `{ type: 'continue', previous_message_id }`. */
export function threadOf(params: Json): { type: string; previousMessageId?: string } | undefined {
  const thread = params.thread as Json | null | undefined;
  if (!thread || typeof thread !== 'object' || typeof thread.type !== 'string') return undefined;
  const previous = thread.previous_message_id;
  return { type: thread.type, ...(typeof previous === 'string' && { previousMessageId: previous }) };
}

/** A request that continues a thread: its system prompt is the server's, so memory cannot be added to it. */
export function continuesThread(params: Json): boolean {
  return threadOf(params)?.type === 'continue';
}

/** The threads one wrapped client (and the clients derived from it) is in, by the id of each one's last reply. */
export class AnthropicThreads {
  readonly #byReply = new Map<string, ThreadTurns>();

  /** What came before a continuing request: the kept turns, or a name from the reply it continues when they are not kept. */
  before(params: Json): { turns?: ThreadTurns; seed?: string } | undefined {
    const thread = threadOf(params);
    if (thread?.type !== 'continue' || thread.previousMessageId === undefined) return undefined;
    const turns = this.#byReply.get(thread.previousMessageId);
    return turns ? { turns } : { seed: `sdk-anthropic-thread-${shortHash(thread.previousMessageId)}` };
  }

  /** Keeps a threaded request's conversation under its reply's id; the entry it continued is let go. */
  keep(params: Json, replyId: string | undefined, turns: ThreadTurns): void {
    const thread = threadOf(params);
    if (!thread || replyId === undefined || replyId === '') return;
    if (thread.previousMessageId !== undefined) this.#byReply.delete(thread.previousMessageId);
    this.#byReply.delete(replyId);
    this.#byReply.set(replyId, { sessionId: turns.sessionId, messages: [...turns.messages] });
    while (this.#byReply.size > MAX_THREADS) {
      const oldest = this.#byReply.keys().next().value;
      if (oldest === undefined) break;
      this.#byReply.delete(oldest);
    }
  }
}
