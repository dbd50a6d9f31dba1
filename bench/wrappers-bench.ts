import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { withMemory } from '../src/surfaces/sdk/with-memory.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';
import { makeMemories, makeQueries, makeVocabulary, seededRandom } from './synthetic-memories.js';
import { quantile, round } from './statistics.js';

/**
 * Part `wrappers`: what `withMemory` adds to a streamed Anthropic call at 10,000 memories, against
 * the same SDK client unwrapped in the same run and the same loopback server (calls alternate, so
 * both see the same machine). Before the first byte: call start to the first text delta (target: p95
 * added ≤ 10 ms). At the end: the last event to the end of the consumer's loop (target: zero added,
 * extraction is queued after the last event). Queued extraction is flushed between calls, untimed.
 */

const MEMORIES = Number(process.env.ENGRAM_BENCH_WRAPPER_MEMORIES ?? 10_000);
const CALLS = Number(process.env.ENGRAM_BENCH_WRAPPER_CALLS ?? 200);
const WARMUP = 20;
const ANSWER = 'The deploy target is the Frankfurt region, and the staging database runs Postgres 15 as agreed.';

export interface WrapperBenchResult {
  memories: number;
  calls: number;
  firstDeltaMs: { unwrapped: Quantiles; wrapped: Quantiles; addedP95: number; addedP50: number };
  endOfStreamMs: { unwrapped: Quantiles; wrapped: Quantiles; addedP95: number };
  injected: number;
}

interface Quantiles {
  p50: number;
  p95: number;
}

export async function benchWrappersPart(): Promise<WrapperBenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-wrappers-'));
  const path = join(directory, 'engram.db');
  const server = await startAnthropicMessagesServer({ streamChunkCharacters: 16 });
  try {
    const vocabulary = makeVocabulary(5_000, seededRandom(7));
    const memories = makeMemories(MEMORIES, { seed: MEMORIES, scopeCount: 1, vocabulary });
    const store = new SqliteMemoryStore({ path });
    await store.open();
    for (let start = 0; start < memories.length; start += 500)
      await store.createMany(memories.slice(start, start + 500), { actor: 'bench' });
    await store.close();
    const queries = makeQueries(memories, CALLS + WARMUP, 11);

    let injected = 0;
    const plain = new Anthropic({ apiKey: 'bench', baseURL: server.url, maxRetries: 0 });
    const wrapped = withMemory(new Anthropic({ apiKey: 'bench', baseURL: server.url, maxRetries: 0 }), {
      store: path,
      cwd: directory,
      env: { ENGRAM_HOME: join(directory, 'home'), ENGRAM_MODEL_PROVIDER: 'none' },
      scopes: ['project:bench-0', 'global'],
      recallTimeoutMs: 10_000,
      onEvent: (event) => {
        if (event.type === 'memory-injected') injected += 1;
      },
    });
    const samples = {
      plainFirst: [] as number[],
      wrappedFirst: [] as number[],
      plainEnd: [] as number[],
      wrappedEnd: [] as number[],
    };
    for (const [index, query] of queries.entries()) {
      server.script({ message: { text: ANSWER } }, { message: { text: ANSWER } });
      // Alternate which goes first, so neither always gets the warmer server.
      const order = index % 2 === 0 ? (['plain', 'wrapped'] as const) : (['wrapped', 'plain'] as const);
      for (const which of order) {
        const client = which === 'plain' ? plain : wrapped;
        const timing = await streamedCall(client, query.text);
        if (index < WARMUP) continue;
        (which === 'plain' ? samples.plainFirst : samples.wrappedFirst).push(timing.firstDeltaMs);
        (which === 'plain' ? samples.plainEnd : samples.wrappedEnd).push(timing.endMs);
      }
      await wrapped.memory.flush();
    }
    await wrapped.memory.close();
    const quantiles = (values: number[]): Quantiles => ({
      p50: round(quantile(values, 0.5)),
      p95: round(quantile(values, 0.95)),
    });
    const result: WrapperBenchResult = {
      memories: MEMORIES,
      calls: CALLS,
      firstDeltaMs: {
        unwrapped: quantiles(samples.plainFirst),
        wrapped: quantiles(samples.wrappedFirst),
        addedP95: round(quantile(samples.wrappedFirst, 0.95) - quantile(samples.plainFirst, 0.95)),
        addedP50: round(quantile(samples.wrappedFirst, 0.5) - quantile(samples.plainFirst, 0.5)),
      },
      endOfStreamMs: {
        unwrapped: quantiles(samples.plainEnd),
        wrapped: quantiles(samples.wrappedEnd),
        addedP95: round(quantile(samples.wrappedEnd, 0.95) - quantile(samples.plainEnd, 0.95)),
      },
      injected,
    };
    console.log(
      `wrappers: ${MEMORIES} memories, ${CALLS} calls: first delta p95 ${result.firstDeltaMs.unwrapped.p95} ms unwrapped, ` +
        `${result.firstDeltaMs.wrapped.p95} ms wrapped (added p95 ${result.firstDeltaMs.addedP95} ms, p50 ${result.firstDeltaMs.addedP50} ms); ` +
        `end of stream added p95 ${result.endOfStreamMs.addedP95} ms; ${injected} calls got memories`,
    );
    return result;
  } finally {
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** One streamed call: time to the first text delta, and from the last event to the end of the loop. */
async function streamedCall(client: Anthropic, question: string): Promise<{ firstDeltaMs: number; endMs: number }> {
  const started = performance.now();
  const stream = await client.messages.create({
    model: 'claude-bench',
    max_tokens: 256,
    stream: true,
    system: 'You are a concise assistant.',
    messages: [{ role: 'user', content: question }],
  });
  let firstDelta = 0;
  let lastEvent = 0;
  for await (const event of stream) {
    if (firstDelta === 0 && event.type === 'content_block_delta') firstDelta = performance.now();
    lastEvent = performance.now();
  }
  const ended = performance.now();
  return { firstDeltaMs: firstDelta - started, endMs: ended - lastEvent };
}
