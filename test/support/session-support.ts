import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AnthropicLanguageModel } from '../../src/adapters/models/anthropic-language-model.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { estimateMessagesTokens } from '../../src/session/context-budget.js';
import { COMPACTION_SUMMARY_SECTIONS } from '../../src/session/compaction/compaction-summary.js';
import { estimateJsonTokens, estimateTextTokens } from '../../src/kernel/token-estimate.js';
import type { ContentBlock, LanguageModelMessage } from '../../src/contracts/language-model.js';
import type { SessionMessage } from '../../src/contracts/session-message.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer, RecordedModelRequest } from '../../src/testing/loopback-model-server.js';
import {
  classifyWorkloadRequest,
  workloadAnswer,
  type SessionWorkloadOptions,
  type WorkloadRequestKind,
} from '../../src/testing/scripted-session-workload.js';

/** Settings of a small window (40K tokens), scaled so every layer fires within a few hundred turns. */
export function smallWindowSettings(overrides: { contextWindow?: number } = {}): Settings {
  const settings = structuredClone(DEFAULT_SETTINGS) as Settings;
  settings.session.contextWindow = overrides.contextWindow ?? 40_000;
  settings.session.outputReserve = 4_000;
  settings.session.toolResultThresholdBytes = 12_000;
  settings.session.toolResultPreviewBytes = 1_000;
  settings.session.maxOutputTokens = 2_000;
  settings.notes.initThresholdTokens = 8_000;
  settings.notes.minGrowthTokens = 3_000;
  settings.notes.sectionMaxTokens = 600;
  settings.notes.fileMaxTokens = 3_000;
  settings.notes.updateMaxOutputTokens = 2_000;
  settings.compaction.bufferTokens = 3_000;
  settings.compaction.keepRecentMaxTokens = 8_000;
  settings.compaction.summaryMaxOutputTokens = 4_000;
  settings.compaction.reinjectMaxTokens = 4_000;
  settings.compaction.reinjectFileMaxTokens = 1_000;
  return settings;
}

/** Workload sizes that fit the small window. */
export const SMALL_WORKLOAD: SessionWorkloadOptions = {
  resultBytes: { min: 500, max: 6_000 },
  bigResultEvery: 7,
  bigResultBytes: 40_000,
  answerBytes: { min: 200, max: 900 },
};

/** A clock that moves `stepMs` each time it is read, from a fixed start. */
export function steppingClock(
  stepMs = 1_000,
  start = Date.parse('2026-03-01T09:00:00.000Z'),
): { now: () => Date; advance: (ms: number) => void } {
  let time = start;
  return {
    now: () => new Date((time += stepMs)),
    advance: (ms) => {
      time += ms;
    },
  };
}

/** Sequential ids, so runs are reproducible. */
export function sequentialIds(prefix = 'id'): () => string {
  let next = 0;
  return () => `${prefix}-${String((next += 1)).padStart(6, '0')}`;
}

export interface LoopbackModel {
  server: LanguageModelServer;
  model: AnthropicLanguageModel;
  close(): Promise<void>;
}

/** The loopback Anthropic server answering the workload, and the real SDK adapter pointed at it. */
export async function workloadServer(
  options: SessionWorkloadOptions = SMALL_WORKLOAD,
  modelId = 'claude-test-1',
): Promise<LoopbackModel> {
  const server = await startAnthropicMessagesServer({
    respond: (request) =>
      request.summary ? { message: workloadAnswer(request.summary.messages, options) } : undefined,
  });
  const model = new AnthropicLanguageModel({ model: modelId, baseUrl: server.url, apiKey: 'test-key' });
  return { server, model, close: () => server.close() };
}

/** The kind of a recorded request (agent turn, notes helper, summarizer). */
export function requestKind(request: RecordedModelRequest): WorkloadRequestKind {
  return classifyWorkloadRequest(request.summary?.messages ?? []);
}

/** Engram's estimate of a recorded request's input (system + tools + messages), as the session counts it. */
export function estimatedRequestTokens(request: RecordedModelRequest, settings: Settings): number {
  const body = request.body as { system?: Array<{ text: string }>; tools?: unknown[] };
  const system = (body.system ?? []).map((block) => block.text).join('\n\n');
  const tools = body.tools ?? [];
  return (
    estimateTextTokens(system) +
    (tools.length > 0 ? estimateJsonTokens(JSON.stringify(tools.map(stripCacheMark))) : 0) +
    estimateMessagesTokens(request.summary!.messages as LanguageModelMessage[], settings)
  );
}

/** system + tools + messages of a recorded request as bytes in prompt order; the last `]` of the messages left open so a longer conversation extends it. */
export function promptPrefixText(request: RecordedModelRequest): string {
  const body = request.body as { system?: unknown; tools?: unknown; messages: unknown[] };
  // A cache mark is not part of the prompt (the provider's cache key ignores it), and the latest
  // message carries it: compare the prompt without marks, a marked string as the plain string it is.
  const messages = JSON.stringify(body.messages.map(unmarkedMessage));
  return JSON.stringify(body.system ?? null) + JSON.stringify(body.tools ?? null) + messages.slice(0, -1);
}

/** A wire message as it would be sent without cache marks (the mark turns a string into one marked text block). */
export function unmarkedMessage(message: unknown): unknown {
  const { role, content } = message as { role: string; content: unknown };
  if (!Array.isArray(content)) return { role, content };
  const blocks = content.map(stripCacheMark);
  const only = blocks[0] as { type?: string; text?: string } | undefined;
  const wasString =
    blocks.length === 1 &&
    only?.type === 'text' &&
    Object.keys(only).length === 2 &&
    (content[0] as Record<string, unknown>).cache_control !== undefined;
  return { role, content: wasString ? only!.text : blocks };
}

function stripCacheMark(tool: unknown): unknown {
  const { cache_control: _mark, ...rest } = tool as Record<string, unknown>;
  return rest;
}

/** A temporary directory removed by the returned function. */
export async function temporaryDirectory(
  prefix = 'engram-session-',
): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/**
 * A summarizer's answer with the nine parts compaction requires (SPEC §2), each saying `gist`
 * briefly: small, so it compacts any conversation of a few thousand characters.
 */
export function ninePartSummary(gist: string): string {
  const parts = COMPACTION_SUMMARY_SECTIONS.map(
    (title, index) => `${index + 1}. ${title}: ${index === 0 ? gist : 'None.'}`,
  );
  return `<analysis>draft</analysis>\n<summary>\n${parts.join('\n')}\n</summary>`;
}

/** Every tool_result's tool_use is in the message just before it. */
export function toolPairsIntact(messages: readonly SessionMessage[]): boolean {
  return messages.every((item, index) => {
    if (typeof item.content === 'string') return true;
    return item.content.every((block) => {
      if (block.type !== 'tool_result') return true;
      const previous = messages[index - 1];
      return (
        previous !== undefined &&
        typeof previous.content !== 'string' &&
        previous.content.some((other) => other.type === 'tool_use' && other.id === block.toolUseId)
      );
    });
  });
}

/** Makes session messages numbered in the order made: uuid `${uuidPrefix}${n}`, timestamp `timestamp(n)`. */
export function numberedMessages(
  uuidPrefix: string,
  timestamp: (index: number) => string,
): (role: 'user' | 'assistant', content: string | ContentBlock[], extra?: Partial<SessionMessage>) => SessionMessage {
  let counter = 0;
  return (role, content, extra = {}) => {
    counter += 1;
    return { uuid: `${uuidPrefix}${counter}`, role, content, timestamp: timestamp(counter), ...extra };
  };
}
