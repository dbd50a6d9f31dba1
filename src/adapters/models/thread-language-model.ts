import { Worker } from 'node:worker_threads';
import { EngramError, type EngramErrorCode } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import type { LanguageModel, LanguageModelRequest, LanguageModelResponse } from '../../contracts/language-model.js';
import { selectLanguageModel } from './create-language-model.js';
import { checkLanguageModelRequest } from './language-model-request-check.js';
import { checkStreamingAndContextEditing } from './model-streaming-request.js';

/** The model a thread builds: model settings (with the provider chosen) and which of its models. */
export interface ThreadModelSpec {
  settings: Settings['model'];
  purpose: 'main' | 'side';
}

/** Main thread → model thread. */
export type ThreadMessage =
  | {
      type: 'generate';
      id: number;
      request: Omit<LanguageModelRequest, 'signal' | 'onTextDelta'>;
      stream: boolean;
    }
  | { type: 'abort'; id: number; reason: string };

/** Model thread → main thread. */
export type ThreadReply =
  | { type: 'delta'; id: number; text: string }
  | { type: 'answer'; id: number; response: LanguageModelResponse }
  | { type: 'error'; id: number; error: { code: EngramErrorCode; message: string; details?: Record<string, unknown> } };

interface Call {
  resolve: (response: LanguageModelResponse) => void;
  reject: (error: unknown) => void;
  onTextDelta?: (text: string) => void;
}

/**
 * A LanguageModel whose calls run in a worker thread that never keeps the process alive: engram's
 * background work in someone else's process (the client wrappers' extraction) must let that
 * process exit once its own work is done, and an HTTP call to a model that hangs holds a socket and
 * the SDK's timer for as long as the call may last. The thread is unref'd, so a process with nothing
 * else to do exits with a call still running (the job it served waits in the store for the next
 * worker); `keepAlive()` refs it while a caller waits for the answers (`flush()`).
 * @example
 * const model = new ThreadLanguageModel({ settings: settings.model, purpose: 'side' });
 * const release = model.keepAlive();
 * try { await model.generate(request); } finally { release(); await model.close(); }
 */
export class ThreadLanguageModel implements LanguageModel {
  readonly provider: string;
  readonly modelId: string;
  readonly interactive = false;
  readonly #spec: ThreadModelSpec;
  #worker: Worker | undefined;
  readonly #calls = new Map<number, Call>();
  #next = 0;
  #holds = 0;

  /** Reads the selection now (CONFIG_INVALID or MODEL_NOT_CONFIGURED here); the thread starts on the first call. */
  constructor(spec: ThreadModelSpec) {
    const selection = selectLanguageModel({ model: spec.settings });
    if (selection.provider === 'none')
      throw new EngramError('MODEL_NOT_CONFIGURED', `No language model is configured (${selection.reason}).`);
    this.#spec = { settings: structuredClone(spec.settings), purpose: spec.purpose };
    this.provider = selection.provider;
    this.modelId = spec.purpose === 'side' ? selection.sideModel : selection.model;
  }

  generate(request: LanguageModelRequest): Promise<LanguageModelResponse> {
    try {
      // Checked here as the adapters check it: a bad request is refused before it crosses to the thread.
      checkLanguageModelRequest(request);
      checkStreamingAndContextEditing(request);
    } catch (error) {
      return Promise.reject(error);
    }
    const { signal, onTextDelta, ...rest } = request;
    if (signal?.aborted) return Promise.reject(aborted(signal));
    let worker: Worker;
    try {
      worker = this.#thread();
    } catch (error) {
      return Promise.reject(
        new EngramError('MODEL_UNAVAILABLE', `The model thread could not start: ${(error as Error).message}`, {
          cause: error,
        }),
      );
    }
    const id = this.#next++;
    return new Promise<LanguageModelResponse>((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.#calls.delete(id)) return;
        worker.postMessage({ type: 'abort', id, reason: String(signal?.reason ?? 'aborted') } satisfies ThreadMessage);
        reject(aborted(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      this.#calls.set(id, {
        resolve: (response) => {
          done();
          resolve(response);
        },
        reject: (error) => {
          done();
          reject(error);
        },
        ...(onTextDelta && { onTextDelta }),
      });
      try {
        worker.postMessage({
          type: 'generate',
          id,
          request: rest,
          stream: onTextDelta !== undefined,
        } satisfies ThreadMessage);
      } catch (error) {
        // A value no thread can receive (a function, a symbol) where the request holds plain data.
        this.#calls.get(id)?.reject(
          new EngramError('MODEL_REQUEST_INVALID', `The request cannot reach the model: ${(error as Error).message}`, {
            cause: error,
          }),
        );
        this.#calls.delete(id);
      }
    });
  }

  /** Keeps the process alive for the thread's calls until the returned function is called (a caller waits for them). */
  keepAlive(): () => void {
    this.#holds += 1;
    this.#worker?.ref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds -= 1;
      if (this.#holds === 0) this.#worker?.unref();
    };
  }

  /** Ends the thread; calls still running fail with MODEL_ABORTED. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll(new EngramError('MODEL_ABORTED', 'The model thread was closed.'));
    await worker?.terminate();
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    // Run from the TypeScript sources (the tests), the thread first registers tsx, as the caller did.
    const entry = new URL(`./language-model-thread.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);
    const worker = entry.pathname.endsWith('.ts')
      ? new Worker(
          `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`,
          { eval: true, workerData: this.#spec },
        )
      : new Worker(entry, { workerData: this.#spec });
    worker.on('message', (reply: ThreadReply) => {
      const call = this.#calls.get(reply.id);
      if (!call) return;
      if (reply.type === 'delta') {
        try {
          call.onTextDelta?.(reply.text);
        } catch {
          // A listener's bug is not the model's failure.
        }
        return;
      }
      this.#calls.delete(reply.id);
      if (reply.type === 'answer') call.resolve(reply.response);
      else
        call.reject(
          new EngramError(reply.error.code, reply.error.message, {
            ...(reply.error.details && { details: reply.error.details }),
          }),
        );
    });
    const lost = (why: string): void => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#failAll(new EngramError('MODEL_UNAVAILABLE', `The model thread stopped: ${why}.`));
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    // After the listeners: adding a message listener refs the thread's port again.
    if (this.#holds === 0) worker.unref();
    this.#worker = worker;
    return worker;
  }

  #failAll(error: EngramError): void {
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const call of calls) call.reject(error);
  }
}

function aborted(signal: AbortSignal): EngramError {
  return new EngramError('MODEL_ABORTED', `The model call was aborted: ${String(signal.reason ?? 'aborted')}`, {
    cause: signal.reason,
  });
}
