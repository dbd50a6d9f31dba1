import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AnthropicLanguageModel } from '../src/adapters/models/anthropic-language-model.js';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import type { ConversationMessage } from '../src/contracts/conversation.js';
import { Extractor } from '../src/extraction/extractor.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';
import { median, quantile, round } from './statistics.js';
import { seededRandom } from './synthetic-memories.js';

/** What `npm run bench` reports for extraction (SPEC §3, layer 5; issue 4's targets). */
export interface ExtractionBenchResult {
  /** `Extractor.afterTurn` (queue the turn, return), over a session that grows turn by turn. Target p95 ≤ 5 ms. */
  afterTurn: {
    turns: number;
    messagesAtEnd: number;
    p50Ms: number;
    p95Ms: number;
    maxMs: number;
    targetP95Ms: number;
    /** A bare store.jobs.enqueue of a payload of the same size, timed in the same loop: the floor the machine allows. */
    bareEnqueueP50Ms: number;
    bareEnqueueP95Ms: number;
  };
  /** Model calls per turn in cheap mode: a run per turn, and turns queued while none ran (coalesced). Target ≤ 1. */
  cheapMode: {
    turns: number;
    modelCalls: number;
    callsPerTurn: number;
    coalescedTurns: number;
    coalescedModelCalls: number;
  };
  /** Tokens of one cheap extraction as the loopback Anthropic server counts them, and the share its prompt cache served. */
  tokens: {
    extractions: number;
    /** All input tokens of an extraction (uncached + cache read + cache write), median. */
    inputTokensPerExtraction: number;
    outputTokensPerExtraction: number;
    /** Cache-read tokens over all input tokens, all extractions but the first (which writes the cache). */
    cacheReadShare: number;
    /** Bytes of the fixed system prompt over all bytes sent: the byte-identical prefix share. */
    stablePrefixByteShare: number;
  };
}

const AFTER_TURN_TURNS = 300;
const MODEL_TURNS = 40;
const COALESCED_TURNS = 10;
const PROJECT = 'project:github.com/acme/bench';
const TOPICS = [
  'the billing service',
  'the deploy pipeline',
  'the staging database',
  'the mobile app',
  'the search index',
  'the on-call rotation',
];

/** A realistic turn of an agent session: a question, a reply with a tool call, the tool's output, a final answer. */
function makeTurn(index: number, random: () => number): ConversationMessage[] {
  const topic = TOPICS[Math.floor(random() * TOPICS.length)]!;
  const words = (count: number): string =>
    Array.from(
      { length: count },
      () =>
        ['check', 'config', 'version', 'timeout', 'owner', 'retry', 'schema', 'limit', 'queue', 'region'][
          Math.floor(random() * 10)
        ],
    ).join(' ');
  return [
    {
      id: `u${index}`,
      role: 'user',
      text: `About ${topic}: ${words(60)}. We decided it stays in eu-west-${index % 3}.`,
    },
    {
      id: `a${index}a`,
      role: 'assistant',
      text: `Let me look at ${topic}.`,
      toolCalls: [{ id: `t${index}`, name: 'Read', input: { file_path: `src/${index}.ts` } }],
    },
    {
      id: `r${index}`,
      role: 'tool',
      text: '',
      toolResults: [{ toolUseId: `t${index}`, content: `// file ${index}\n${words(500)}` }],
    },
    { id: `a${index}`, role: 'assistant', text: `${words(180)}.` },
  ];
}

/** Runs the extraction benchmark on a temp SQLite store and a loopback Anthropic server (the real SDK). */
export async function benchExtraction(): Promise<ExtractionBenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-extraction-'));
  const server = await startAnthropicMessagesServer({
    // One memory for some turns, nothing for most: what a real cheap extractor answers.
    respond: (_request, index) => ({
      message: {
        text:
          index % 3 === 0
            ? JSON.stringify([
                {
                  type: 'project',
                  name: `fact-${index}`,
                  description: `Fact ${index}`,
                  content: `Decision number ${index} about the bench project.`,
                  importance: 0.5,
                  scope: 'project',
                },
              ])
            : '[]',
      },
    }),
  });
  try {
    const store = new SqliteMemoryStore({ path: join(directory, 'engram.db') });
    await store.open();
    const engram = new Engram({ store, defaultScope: PROJECT, readScopes: [PROJECT, 'global'], onWarning: () => {} });
    const random = seededRandom(42);

    // 1. afterTurn latency: queueing only; an offline drain now and then keeps the queue as short as a live worker would.
    const queueOnly = new Extractor({ engram, autoStart: false, explicit: false });
    const messages: ConversationMessage[] = [];
    const timings: number[] = [];
    const bare: number[] = [];
    for (let index = 0; index < AFTER_TURN_TURNS; index += 1) {
      const fresh = makeTurn(index, random);
      messages.push(...fresh);
      const conversation = { sessionId: 'bench-after-turn', messages: [...messages] };
      const start = process.hrtime.bigint();
      await queueOnly.afterTurn(conversation);
      timings.push(Number(process.hrtime.bigint() - start) / 1e6);
      const bareStart = process.hrtime.bigint();
      await store.jobs.enqueue({ queue: 'bench-baseline', key: `turn-${index}`, payload: { messages: fresh } });
      bare.push(Number(process.hrtime.bigint() - bareStart) / 1e6);
      if (index % 10 === 9) await queueOnly.drain();
    }

    // 2 and 3. Cheap mode through the SDK: one run per turn, then turns queued while none ran.
    const model = new AnthropicLanguageModel({
      model: 'claude-haiku-5-5',
      baseUrl: server.url,
      apiKey: 'sk-ant-bench',
      maxRetries: 0,
    });
    const extractor = new Extractor({ engram, model, autoStart: false });
    const session: ConversationMessage[] = [];
    const reports = [];
    const before = server.requests.length;
    for (let index = 0; index < MODEL_TURNS; index += 1) {
      session.push(...makeTurn(1_000 + index, random));
      await extractor.afterTurn({ sessionId: 'bench-cheap', messages: [...session] });
      reports.push(...Extractor.reports(await extractor.drain()));
    }
    const perTurnCalls = server.requests.length - before;
    const coalescedBefore = server.requests.length;
    for (let index = 0; index < COALESCED_TURNS; index += 1) {
      session.push(...makeTurn(2_000 + index, random));
      await extractor.afterTurn({ sessionId: 'bench-cheap', messages: [...session] });
    }
    await extractor.drain();
    const coalescedCalls = server.requests.length - coalescedBefore;

    const extracted = reports.filter((report) => report.modelCalls > 0);
    const totals = extracted.map(
      (report) => report.usage.inputTokens + report.usage.cacheReadTokens + report.usage.cacheWriteTokens,
    );
    const warm = extracted.slice(1);
    const warmInput = warm.reduce(
      (sum, report) => sum + report.usage.inputTokens + report.usage.cacheReadTokens + report.usage.cacheWriteTokens,
      0,
    );
    const warmCached = warm.reduce((sum, report) => sum + report.usage.cacheReadTokens, 0);
    const system = extracted.reduce((sum, report) => sum + report.sentBytes.system, 0);
    const total = extracted.reduce((sum, report) => sum + report.sentBytes.total, 0);
    await store.close();
    return {
      afterTurn: {
        turns: AFTER_TURN_TURNS,
        messagesAtEnd: messages.length,
        p50Ms: round(median(timings)),
        p95Ms: round(quantile(timings, 0.95)),
        maxMs: round(Math.max(...timings)),
        targetP95Ms: 5,
        bareEnqueueP50Ms: round(median(bare)),
        bareEnqueueP95Ms: round(quantile(bare, 0.95)),
      },
      cheapMode: {
        turns: MODEL_TURNS,
        modelCalls: perTurnCalls,
        callsPerTurn: round(perTurnCalls / MODEL_TURNS, 3),
        coalescedTurns: COALESCED_TURNS,
        coalescedModelCalls: coalescedCalls,
      },
      tokens: {
        extractions: extracted.length,
        inputTokensPerExtraction: Math.round(median(totals)),
        outputTokensPerExtraction: Math.round(median(extracted.map((report) => report.usage.outputTokens))),
        cacheReadShare: round(warmInput === 0 ? 0 : warmCached / warmInput, 3),
        stablePrefixByteShare: round(total === 0 ? 0 : system / total, 3),
      },
    };
  } finally {
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The bench part as `bench/run.ts` runs it: prints a table and returns the figures. */
export async function benchExtractionPart(): Promise<ExtractionBenchResult> {
  const result = await benchExtraction();
  console.log(
    '\nExtraction (in-process SQLite queue; cheap mode through the Anthropic SDK against the loopback server)',
  );
  console.table([
    { measure: 'afterTurn p50 ms', value: result.afterTurn.p50Ms },
    { measure: `afterTurn p95 ms (target ≤ ${result.afterTurn.targetP95Ms})`, value: result.afterTurn.p95Ms },
    {
      measure: 'bare store.jobs.enqueue p50 / p95 ms (the floor)',
      value: `${result.afterTurn.bareEnqueueP50Ms} / ${result.afterTurn.bareEnqueueP95Ms}`,
    },
    { measure: 'model calls per turn, cheap mode (target ≤ 1)', value: result.cheapMode.callsPerTurn },
    {
      measure: `model calls for ${result.cheapMode.coalescedTurns} turns queued while none ran`,
      value: result.cheapMode.coalescedModelCalls,
    },
    { measure: 'input tokens per extraction (median)', value: result.tokens.inputTokensPerExtraction },
    { measure: 'share of input served from the prompt cache', value: result.tokens.cacheReadShare },
    { measure: 'share of bytes sent that are the fixed prefix', value: result.tokens.stablePrefixByteShare },
  ]);
  return result;
}

// `npx tsx bench/extraction-bench.ts` runs this part alone.
if (import.meta.url === `file://${process.argv[1]}`) await benchExtractionPart();
