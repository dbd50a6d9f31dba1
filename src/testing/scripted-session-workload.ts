import { estimateMessagesTokens } from '../session/context-budget.js';
import { estimateJsonTokens, estimateTextTokens } from '../kernel/token-estimate.js';
import type {
  ContentBlock,
  LanguageModelMessage,
  LanguageModelRequest,
  TextBlock,
  ToolUseBlock,
} from '../contracts/language-model.js';
import { systemText } from '../contracts/language-model-content.js';
import type { SessionTool } from '../contracts/session-tool.js';
import type { ScriptedModelMessage } from './loopback-model-server.js';

/**
 * A deterministic coding-agent workload for long-session tests and the `session` benchmark: turn N
 * asks about a module, the "model" reads files with a `read_file` tool (results of 1–30 KB, every
 * seventh one far over the tool-result threshold) and answers; notes-update and summary requests
 * from the session's helpers are answered too. The answers depend only on the request, so the same
 * responder drives the loopback Anthropic server and a ScriptedLanguageModel.
 */

/** Which of the session's callers sent a request. */
export type WorkloadRequestKind = 'turn' | 'notes' | 'summary';

export interface SessionWorkloadOptions {
  /** Bytes of an ordinary tool result: from `min` to `max` (default 1 KB to 30 KB). */
  resultBytes?: { min: number; max: number };
  /** Every this many tool calls, a result of `bigResultBytes` (default every 7th, 120 KB). */
  bigResultEvery?: number;
  bigResultBytes?: number;
  /** Bytes of a final answer (default 300 to 1,500). */
  answerBytes?: { min: number; max: number };
}

const NOTES_MARKER = '<current-notes>';
const SUMMARY_MARKER = 'write a detailed summary of the conversation so far';
const WORDS = [
  'export',
  'function',
  'const',
  'return',
  'session',
  'message',
  'tokens',
  'context',
  'window',
  'notes',
  'compact',
  'result',
  'value',
  'await',
  'import',
  'interface',
];

/** A number from a 32-bit hash of the text: the workload's only source of variety. */
export function workloadHash(text: string): number {
  let hash = 2166136261;
  for (let index = 0; index < text.length; index += 1) hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  return hash >>> 0;
}

/** Deterministic source-like text of about `bytes` bytes (ASCII, so bytes = characters). */
export function workloadText(seed: string, bytes: number): string {
  const lines: string[] = [];
  let length = 0;
  for (let line = 0; length < bytes; line += 1) {
    const hash = workloadHash(`${seed}:${line}`);
    const words = Array.from({ length: 4 + (hash % 9) }, (_, index) => WORDS[(hash >>> (index * 2)) % WORDS.length]!);
    const text = `${String(line + 1).padStart(5)}  ${words.join(' ')};`;
    lines.push(text);
    length += text.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

/** The user's message of turn `turn` (1-based). */
export function workloadUserMessage(turn: number): string {
  return `Turn ${turn}: look at src/module-${turn % 97}.ts and tell me what ${WORDS[turn % WORDS.length]} does there; keep the answer short.`;
}

/** Which session caller sent these messages (notes helper, summarizer, or an agent turn). */
export function classifyWorkloadRequest(messages: readonly LanguageModelMessage[]): WorkloadRequestKind {
  const last = messages.at(-1);
  const text = last ? textOf(last.content) : '';
  if (text.includes(NOTES_MARKER)) return 'notes';
  if (text.includes(SUMMARY_MARKER)) return 'summary';
  return 'turn';
}

/** Tool calls turn N makes: 0 every fourth turn (a plain answer, a natural break), else 1 to 3 rounds. */
export function workloadToolRounds(turn: number): number {
  return turn % 4 === 0 ? 0 : 1 + (workloadHash(`rounds:${turn}`) % 3);
}

/** The answer to one request, in engram's terms (the loopback servers and ScriptedLanguageModel both take it). */
export function workloadAnswer(
  messages: readonly LanguageModelMessage[],
  options: SessionWorkloadOptions = {},
): ScriptedModelMessage {
  const kind = classifyWorkloadRequest(messages);
  if (kind === 'notes') return { text: notesAnswer(messages) };
  if (kind === 'summary') return { text: summaryAnswer(messages) };
  const last = messages.at(-1)!;
  const turn = latestTurn(messages);
  const results = typeof last.content === 'string' ? [] : last.content.filter((block) => block.type === 'tool_result');
  const round = results.length === 0 ? 0 : roundOf(results[0]!.type === 'tool_result' ? results[0]!.toolUseId : '') + 1;
  if (round < workloadToolRounds(turn)) {
    const call: ToolUseBlock = {
      type: 'tool_use',
      id: `toolu_${turn}_${round}`,
      name: 'read_file',
      input: { path: `src/module-${(turn * 7 + round) % 97}.ts`, call: `${turn}.${round}` },
    };
    return { content: [{ type: 'text', text: `Reading ${String(call.input.path)}.` }, call] };
  }
  const answer = options.answerBytes ?? { min: 300, max: 1_500 };
  const bytes = answer.min + (workloadHash(`answer:${turn}`) % Math.max(1, answer.max - answer.min));
  return { text: `Turn ${turn} answer: ${workloadText(`answer:${turn}`, bytes)}` };
}

/**
 * The workload's answer for an in-process ScriptedLanguageModel, with the input tokens a provider
 * would report (engram's estimate of system + tools + every message, tool results included).
 */
export function workloadScriptedAnswer(
  request: LanguageModelRequest,
  options: SessionWorkloadOptions = {},
): ScriptedModelMessage {
  return { ...workloadAnswer(request.messages, options), usage: { inputTokens: estimatedInputTokens(request) } };
}

/** Engram's estimate of a request's input: system text, tool definitions as JSON, messages. */
export function estimatedInputTokens(request: Pick<LanguageModelRequest, 'system' | 'tools' | 'messages'>): number {
  const tools = request.tools && request.tools.length > 0 ? estimateJsonTokens(JSON.stringify(request.tools)) : 0;
  return estimateTextTokens(systemText(request.system)) + tools + estimateMessagesTokens(request.messages);
}

/** The `read_file` tool of the workload: deterministic content whose size follows the options. */
export function workloadReadFileTool(options: SessionWorkloadOptions = {}): SessionTool {
  const sizes = options.resultBytes ?? { min: 1_000, max: 30_000 };
  const bigEvery = options.bigResultEvery ?? 7;
  const bigBytes = options.bigResultBytes ?? 120_000;
  let calls = 0;
  return {
    definition: {
      name: 'read_file',
      description: 'Reads a file of the project and returns its text with line numbers.',
      inputSchema: {
        type: 'object',
        properties: { path: { type: 'string' }, call: { type: 'string' } },
        required: ['path'],
      },
    },
    async run(input) {
      calls += 1;
      const path = String(input.path);
      const seed = `${path}:${String(input.call)}`;
      const bytes =
        calls % bigEvery === 0 ? bigBytes : sizes.min + (workloadHash(seed) % Math.max(1, sizes.max - sizes.min));
      const content = workloadText(seed, bytes);
      return { content, filesRead: [{ path, content: content.slice(0, 4_000) }] };
    },
  };
}

function latestTurn(messages: readonly LanguageModelMessage[]): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    if (message.role !== 'user') continue;
    const match = /^Turn (\d+):/m.exec(textOf(message.content));
    if (match) return Number(match[1]);
  }
  return 0;
}

function roundOf(toolUseId: string): number {
  const match = /_(\d+)$/.exec(toolUseId);
  return match ? Number(match[1]) : 0;
}

function notesAnswer(messages: readonly LanguageModelMessage[]): string {
  const turn = latestTurn(messages.slice(0, -1));
  return [
    `<section name="Session Title">\nReviewing modules, one question a turn\n</section>`,
    `<section name="Current State">\nAnswered up to turn ${turn}; next: the module the user names.\n</section>`,
    `<section name="Worklog">\n- turns 1..${turn}: read modules with read_file, answered briefly\n</section>`,
  ].join('\n');
}

function summaryAnswer(messages: readonly LanguageModelMessage[]): string {
  const turn = latestTurn(messages.slice(0, -1));
  return [
    '<analysis>Walked through the turns in order.</analysis>',
    '<summary>',
    '1. Primary Request and Intent: the user asks about one module per turn and wants short answers.',
    '2. Key Technical Concepts: sessions, tokens, compaction.',
    `3. Files and Code Sections: src/module-*.ts read up to turn ${turn}.`,
    '4. Errors and fixes: none.',
    '5. Problem Solving: each question answered from the file read.',
    `6. All user messages: Turn 1 .. Turn ${turn}, each "look at src/module-N.ts".`,
    '7. Pending Tasks: none.',
    `8. Current Work: turn ${turn}.`,
    '9. Optional Next Step: wait for the next question.',
    '</summary>',
  ].join('\n');
}

function textOf(content: string | readonly ContentBlock[]): string {
  if (typeof content === 'string') return content;
  return content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}
