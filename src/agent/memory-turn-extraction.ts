import type { Conversation } from '../contracts/conversation.js';
import type { Extractor } from '../extraction/extractor.js';
import type { RecalledMemory } from '../extraction/recalled-memories.js';
import { later, turnError, type ExtractionQueueResult, type MemoryTurnEvent } from './memory-injection.js';
import { MAX_ID_LENGTH, endsInToolCall, snapshotConversation } from './memory-turn-input.js';
import type { AfterResponseOptions } from './memory-turn-options.js';

/** What the queue needs of its memory turn: where events go, and the tracking its `flush()` waits on. */
export interface MemoryTurnExtractionHooks {
  emit(event: MemoryTurnEvent): void;
  track<T>(task: Promise<T>): Promise<T>;
}

/**
 * A memory turn's after-response step (`MemoryTurn.afterResponse`): queues extraction of each final
 * turn, one after another (the extractor's cursor is per conversation), and tells the extractor which
 * memories the model was given so it does not store them again.
 */
export class MemoryTurnExtraction {
  readonly #extractor: Pick<Extractor, 'afterTurn'> | undefined;
  readonly #hooks: MemoryTurnExtractionHooks;
  /** Injected memories not yet handed to a queued extraction: the extractor is told they are known. */
  readonly #unqueued = new Map<string, RecalledMemory>();
  /** The after-response steps run one after another (the extractor's cursor is per conversation). */
  #queueTail: Promise<unknown> = Promise.resolve();

  constructor(extractor: Pick<Extractor, 'afterTurn'> | undefined, hooks: MemoryTurnExtractionHooks) {
    this.#extractor = extractor;
    this.#hooks = hooks;
  }

  /** A memory the model was given: the next queued extraction is told it is known. */
  given(memory: RecalledMemory): void {
    // Only an extractor is told which memories were known; without one nothing would empty the map.
    if (this.#extractor) this.#unqueued.set(memory.id, memory);
  }

  /** A memory taken back before the model saw it. */
  takenBack(id: string): void {
    this.#unqueued.delete(id);
  }

  /** Queues the conversation's new messages (see `MemoryTurn.afterResponse`); never rejects. */
  queue(conversation: Conversation, options: AfterResponseOptions = {}): Promise<ExtractionQueueResult> {
    const given = (conversation as Partial<Conversation> | null)?.sessionId;
    const sessionId = typeof given === 'string' ? given.slice(0, MAX_ID_LENGTH) : '';
    if (!this.#extractor) {
      // Nothing will be told of them: kept, the map would grow for as long as the conversation runs.
      this.#unqueued.clear();
      return Promise.resolve({ status: 'off', jobs: 0, messages: 0 });
    }
    // Copied now: the caller's conversation may grow before the work runs.
    const snapshot = snapshotConversation(conversation);
    const final = typeof options?.final === 'boolean' ? options.final : !endsInToolCall(snapshot?.messages);
    if (!final) {
      this.#hooks.emit({ type: 'extraction-deferred', sessionId });
      return Promise.resolve({ status: 'deferred', jobs: 0, messages: 0 });
    }
    const own = [...this.#unqueued.values()];
    this.#unqueued.clear();
    const recalled = [...own, ...(Array.isArray(options?.recalled) ? options.recalled : [])];
    const extractor = this.#extractor;
    const task = this.#queueTail.then(() =>
      later(async (): Promise<ExtractionQueueResult> => {
        try {
          const result = await extractor.afterTurn(snapshot ?? conversation, { recalled });
          if (result.status === 'queued')
            this.#hooks.emit({
              type: 'extraction-queued',
              sessionId,
              jobs: result.jobs.length,
              messages: result.messages,
            });
          return {
            status: result.status,
            jobs: result.jobs.length,
            messages: result.messages,
            ...(result.warnings && { warnings: result.warnings }),
          };
        } catch (error) {
          // Told again with the next turn: nothing is lost, the extractor re-reads from its cursor.
          for (const memory of own) if (!this.#unqueued.has(memory.id)) this.#unqueued.set(memory.id, memory);
          const reported = turnError(error);
          this.#hooks.emit({ type: 'extraction-failed', sessionId, error: reported });
          return { status: 'failed', jobs: 0, messages: 0, error: reported };
        }
      }),
    );
    this.#queueTail = task;
    return this.#hooks.track(task);
  }
}
