import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { autoCompactThreshold } from '../src/session/compaction/compaction-policy.js';
import { estimateMessageTokens } from '../src/session/context-budget.js';
import { DEFAULT_SETTINGS } from '../src/kernel/settings.js';
import type {
  ContentBlock,
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  ToolUseBlock,
} from '../src/contracts/language-model.js';
import { runAgentTurn } from '../src/agent/agent-turn.js';
import { Session } from '../src/session/session.js';
import { ScriptedLanguageModel } from '../src/testing/scripted-language-model.js';
import {
  classifyWorkloadRequest,
  estimatedInputTokens,
  workloadAnswer,
  workloadReadFileTool,
  workloadScriptedAnswer,
  workloadUserMessage,
} from '../src/testing/scripted-session-workload.js';
import { quantile, round } from './statistics.js';
import { openSession } from '../src/node/session-open.js';

/**
 * Part `session`: a 1,000-turn scripted coding session (src/testing/scripted-session-workload.ts:
 * tool results of 1–30 KB, every 7th 120 KB) on the default settings (200K window), in process, with
 * the input tokens a provider would report (engram's estimate of each request). Measures how often
 * compaction fires per 200K tokens of conversation traffic (target ≤ 3), the input tokens sent per
 * turn against a baseline that only drops the oldest messages to fit, and the share of request bytes
 * that repeat the previous request's prefix outside compactions (target ≥ 95%).
 */

const TURNS = Number(process.env.ENGRAM_BENCH_SESSION_TURNS ?? 1_000);
const SYSTEM =
  'You are a careful coding assistant working in this repository. Standing rules: answer briefly; never edit files without asking.';

interface RequestRecord {
  kind: 'turn' | 'notes' | 'summary';
  turn: number;
  tokens: number;
  bytes: number;
  sharedBytes: number;
  afterLayerChange: boolean;
}

/** Wraps a model to record what each request carried. */
class RecordingModel implements LanguageModel {
  readonly provider = 'recording';
  readonly modelId: string;
  readonly records: RequestRecord[] = [];
  turn = 0;
  layerChanged = false;
  #previous = '';

  constructor(readonly inner: LanguageModel) {
    this.modelId = inner.modelId;
  }

  async generate(request: LanguageModelRequest): Promise<LanguageModelResponse> {
    const kind = classifyWorkloadRequest(request.messages);
    const prefix =
      JSON.stringify(request.system ?? null) +
      JSON.stringify(request.tools ?? null) +
      JSON.stringify(request.messages).slice(0, -1);
    const record: RequestRecord = {
      kind,
      turn: this.turn,
      tokens: estimatedInputTokens(request),
      bytes: prefix.length,
      sharedBytes: 0,
      afterLayerChange: false,
    };
    if (kind === 'turn') {
      record.sharedBytes = prefix.startsWith(this.#previous)
        ? this.#previous.length
        : commonPrefixLength(prefix, this.#previous);
      record.afterLayerChange = this.layerChanged;
      this.layerChanged = false;
      this.#previous = prefix;
    }
    this.records.push(record);
    return this.inner.generate(request);
  }
}

/** Runs the part and returns its figures. */
export async function benchSessionPart(): Promise<Record<string, unknown>> {
  const settings = DEFAULT_SETTINGS;
  const home = mkdtempSync(join(tmpdir(), 'engram-bench-session-'));
  try {
    const model = new RecordingModel(
      new ScriptedLanguageModel({
        whenExhausted: 'repeat-last',
        script: [(request) => workloadScriptedAnswer(request)],
      }),
    );
    const session = openSession({
      model,
      settings,
      home,
      cwd: '/bench/project',
      system: SYSTEM,
      tools: [workloadReadFileTool()],
    }).session;
    let trafficTokens = 0;
    let rawToolBytes = 0;
    const compactions: Array<{ turn: number; method: string; pre: number; post: number; modelCalls: number }> = [];
    session.on('message-added', ({ message }) => {
      trafficTokens += estimateMessageTokens(message, settings);
      for (const block of typeof message.content === 'string' ? [] : message.content)
        if (block.type === 'tool_result') rawToolBytes += block.content.length;
    });
    session.on('compaction-finished', (event) => {
      model.layerChanged = true;
      compactions.push({
        turn: model.turn,
        method: event.boundary.method,
        pre: event.preTokens,
        post: event.postTokens,
        modelCalls: event.modelCalls,
      });
      // The summary and re-injected messages are new context too, but not conversation traffic.
      trafficTokens -= event.postTokens;
    });
    session.on('microcompaction-applied', () => (model.layerChanged = true));
    const started = performance.now();
    for (let turn = 1; turn <= TURNS; turn += 1) {
      model.turn = turn;
      await runAgentTurn(session, { content: workloadUserMessage(turn) });
    }
    await session.waitForBackground();
    const elapsedMs = performance.now() - started;
    await session.close();

    const window = session.contextWindow;
    const turns = model.records.filter((record) => record.kind === 'turn');
    const perTurn = tokensPerTurn(turns);
    const steady = turns.filter((record) => !record.afterLayerChange);
    const baseline = await truncatingBaseline(settings.session.maxOutputTokens, window);
    const maxRequest = Math.max(...turns.map((record) => record.tokens));
    const result = {
      turns: TURNS,
      window,
      autoCompactThreshold: autoCompactThreshold(window, settings),
      elapsedMs: round(elapsedMs, 0),
      requests: {
        turns: turns.length,
        notes: model.records.filter((record) => record.kind === 'notes').length,
        summary: model.records.filter((record) => record.kind === 'summary').length,
      },
      overWindow: turns.filter((record) => record.tokens + settings.session.maxOutputTokens > window).length,
      maxRequestTokens: maxRequest,
      trafficTokens,
      compactions: compactions.length,
      compactionsPer200kTraffic: round((compactions.length * 200_000) / trafficTokens, 2),
      compactionMethods: countBy(compactions.map((compaction) => compaction.method)),
      compactionModelCalls: compactions.reduce((sum, compaction) => sum + compaction.modelCalls, 0),
      meanTokensAfterCompaction: round(mean(compactions.map((compaction) => compaction.post)), 0),
      persistedToolResults: session.stats.persistedToolResults,
      rawToolResultMB: round(rawToolBytes / 1e6, 1),
      notesUpdates: session.stats.notesUpdates,
      microcompactions: session.stats.microcompactions,
      tokensPerTurn: { mean: round(mean(perTurn), 0), p95: round(quantile(perTurn, 0.95), 0) },
      baselineTruncateTokensPerTurn: {
        mean: round(mean(baseline.perTurn), 0),
        p95: round(quantile(baseline.perTurn, 0.95), 0),
        truncations: baseline.truncations,
      },
      prefixReuseShareOutsideCompactions: round(
        sum(steady.map((record) => record.sharedBytes)) / sum(steady.map((record) => record.bytes)),
        4,
      ),
      prefixReuseShareAll: round(
        sum(turns.map((record) => record.sharedBytes)) / sum(turns.map((record) => record.bytes)),
        4,
      ),
      targets: { compactionsPer200kTraffic: '<= 3', prefixReuseShareOutsideCompactions: '>= 0.95', overWindow: 0 },
    };
    console.log(
      `\nSession engine (${TURNS}-turn scripted coding session, ${window} token window, in-process scripted model)`,
    );
    console.table([
      { measure: 'compactions per 200K tokens of traffic (target ≤ 3)', value: result.compactionsPer200kTraffic },
      {
        measure: 'compactions (by notes / by summary; model calls for them)',
        value: `${result.compactions} (${result.compactionMethods.notes ?? 0} / ${result.compactionMethods.summary ?? 0}; ${result.compactionModelCalls})`,
      },
      {
        measure: 'requests over the window (target 0); largest request tokens',
        value: `${result.overWindow}; ${result.maxRequestTokens}`,
      },
      {
        measure: 'input tokens per turn, mean / p95',
        value: `${result.tokensPerTurn.mean} / ${result.tokensPerTurn.p95}`,
      },
      {
        measure: 'baseline that truncates old turns, mean / p95',
        value: `${result.baselineTruncateTokensPerTurn.mean} / ${result.baselineTruncateTokensPerTurn.p95}`,
      },
      {
        measure: 'share of request bytes repeating the previous prefix, outside compactions (target ≥ 0.95)',
        value: result.prefixReuseShareOutsideCompactions,
      },
      { measure: 'same share over all requests', value: result.prefixReuseShareAll },
      {
        measure: 'notes updates; tool results persisted (MB raw)',
        value: `${result.notesUpdates}; ${result.persistedToolResults} (${result.rawToolResultMB})`,
      },
    ]);
    return result;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * The baseline: the same turns with no layer at all (results kept whole, no notes, no compaction);
 * before each request the oldest turns are dropped until the request fits the window.
 */
async function truncatingBaseline(
  maxOutputTokens: number,
  window: number,
): Promise<{ perTurn: number[]; truncations: number }> {
  const tool = workloadReadFileTool();
  const system = [{ text: SYSTEM, cache: true }];
  const tools = [tool.definition];
  const signal = new AbortController().signal;
  let messages: LanguageModelMessage[] = [];
  const perTurn: number[] = [];
  let truncations = 0;
  for (let turn = 1; turn <= TURNS; turn += 1) {
    messages.push({ role: 'user', content: workloadUserMessage(turn) });
    let sent = 0;
    for (;;) {
      while (estimatedInputTokens({ system, tools, messages }) + maxOutputTokens > window) {
        // Drop the oldest turn: up to the next user message that is not a tool result (pairs stay whole).
        const next = messages.findIndex(
          (message, index) => index > 0 && message.role === 'user' && typeof message.content === 'string',
        );
        if (next < 0) break;
        messages = messages.slice(next);
        truncations += 1;
      }
      sent += estimatedInputTokens({ system, tools, messages });
      const answer = workloadAnswer(messages);
      const content: ContentBlock[] = answer.content ?? [{ type: 'text', text: answer.text ?? '' }];
      messages.push({ role: 'assistant', content });
      const calls = content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
      if (calls.length === 0) break;
      const results: ContentBlock[] = [];
      for (const call of calls)
        results.push({
          type: 'tool_result',
          toolUseId: call.id,
          content: (await tool.run(call.input, { sessionId: 'baseline', toolUseId: call.id, signal })).content,
        });
      messages.push({ role: 'user', content: results });
    }
    perTurn.push(sent);
  }
  return { perTurn, truncations };
}

function tokensPerTurn(records: readonly RequestRecord[]): number[] {
  const byTurn = new Map<number, number>();
  for (const record of records) byTurn.set(record.turn, (byTurn.get(record.turn) ?? 0) + record.tokens);
  return [...byTurn.values()];
}

function commonPrefixLength(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let index = 0;
  while (index < limit && a.charCodeAt(index) === b.charCodeAt(index)) index += 1;
  return index;
}

const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0);
const mean = (values: readonly number[]): number => (values.length === 0 ? 0 : sum(values) / values.length);

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
