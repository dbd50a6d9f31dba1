import type { ScriptedModelError } from './loopback-model-server.js';

/** A thread request the server refuses: the error, and the `error.details.error_code` the SDK reads. */
export interface ThreadRefusal {
  error: ScriptedModelError;
  errorCode?: string;
}

/**
 * Message threads (beta, `thread: { type: 'create' }` then `{ type: 'continue', previous_message_id }`):
 * the server holds the system prompt, the tools and the messages, so a continuing request sends only
 * its new messages, and neither `system` nor `tools` (refused as the API does).
 */
export class MessageThreads {
  readonly #held = new Map<string, { system: unknown; tools: unknown; messages: unknown[] }>();

  /** A threaded request read as the whole conversation; undefined for an unthreaded one. */
  read(raw: unknown): { body: Record<string, unknown> } | ThreadRefusal | undefined {
    const body = raw as Record<string, unknown> | null;
    const thread = body && typeof body === 'object' ? (body.thread as Record<string, unknown> | undefined) : undefined;
    if (!thread || typeof thread !== 'object') return undefined;
    if (thread.type === 'create') return { body: body! };
    if (thread.type !== 'continue') return refuse("thread.type: Input should be 'create' or 'continue'");
    for (const field of ['system', 'tools'])
      if (body![field] !== undefined) return refuse(`${field}: cannot be set when continuing a thread`);
    const held = this.#held.get(String(thread.previous_message_id));
    if (!held) return { error: { kind: 'not_found', message: 'Thread not found.' }, errorCode: 'thread_not_found' };
    const messages = Array.isArray(body!.messages) ? (body!.messages as unknown[]) : [];
    return {
      body: {
        ...body,
        ...(held.system !== undefined && { system: held.system }),
        ...(held.tools !== undefined && { tools: held.tools }),
        messages: [...held.messages, ...messages],
      },
    };
  }

  /** Keeps the conversation with its reply, under the reply's id (what the next turn continues from). */
  hold(rendered: Record<string, unknown>, body: Record<string, unknown>): void {
    const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
    this.#held.set(String(rendered.id), {
      system: body.system,
      tools: body.tools,
      messages: [...messages, { role: 'assistant', content: rendered.content }],
    });
  }
}

function refuse(message: string): ThreadRefusal {
  return { error: { kind: 'invalid_request', message } };
}
