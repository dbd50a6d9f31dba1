// The worker thread of thread-language-model.ts: builds the model the settings select and answers
// the requests the main thread sends, one message per request, its text deltas, its answer or error.
import { parentPort, workerData } from 'node:worker_threads';
import { isEngramError } from '../../kernel/errors.js';
import type { LanguageModelRequest } from '../../contracts/language-model.js';
import { createLanguageModel } from './create-language-model.js';
import type { ThreadMessage, ThreadModelSpec, ThreadReply } from './thread-language-model.js';

const spec = workerData as ThreadModelSpec;
const model = createLanguageModel({ model: spec.settings }, { purpose: spec.purpose });
const running = new Map<number, AbortController>();
const port = parentPort!;
const post = (reply: ThreadReply): void => port.postMessage(reply);

/**
 * What a fresh thread would otherwise load inside its first call, after that call's time budget
 * started: the provider's SDK and Node's fetch (undici, loaded on first use). The thread serves
 * background work, so its start may take that time; a call's budget is for the model (a call
 * made at once waits for this, as it would have waited inside the call).
 */
async function warm(): Promise<void> {
  const provider = model?.provider;
  try {
    if (provider === 'anthropic') await import('@anthropic-ai/sdk');
    else if (provider === 'openai-compatible') await import('openai');
    // Headers comes from the module fetch loads on its first call: loaded once, for both.
    new Headers();
  } catch {
    // The first call loads it again and reports what fails.
  }
}
const ready = warm();

// Messages wait for the warm-up in the order they came (an abort after its request).
port.on('message', (message: ThreadMessage) => void ready.then(() => handle(message)));

function handle(message: ThreadMessage): void {
  if (message.type === 'abort') {
    running.get(message.id)?.abort(new Error(message.reason));
    return;
  }
  const { id } = message;
  const controller = new AbortController();
  running.set(id, controller);
  const request: LanguageModelRequest = {
    ...message.request,
    signal: controller.signal,
    ...(message.stream && { onTextDelta: (text: string) => post({ type: 'delta', id, text }) }),
  };
  void (async () => {
    try {
      if (!model) throw new Error('No model is configured in this thread.');
      post({ type: 'answer', id, response: await model.generate(request) });
    } catch (error) {
      post({
        type: 'error',
        id,
        error: isEngramError(error)
          ? { code: error.code, message: error.message, ...(error.details && { details: error.details }) }
          : { code: 'MODEL_UNAVAILABLE', message: error instanceof Error ? error.message : String(error) },
      });
    } finally {
      running.delete(id);
    }
  })();
}
