import { EngramError, isEngramError } from '../kernel/errors.js';
import type {
  ContentBlock,
  LanguageModelResponse,
  LanguageModelStopReason,
  LanguageModelUsage,
  ToolUseBlock,
} from '../contracts/language-model.js';
import { toolUses } from '../contracts/language-model-content.js';
import type { Session, ToolResultInput } from '../session/session.js';
import type { SessionTool } from '../contracts/session-tool.js';

/** One user turn of an agent: the message, the tools it may run, streaming and interruption. */
export interface AgentTurnOptions {
  /** What the user said. */
  content: string | readonly ContentBlock[];
  /** Injected context for this turn only (recalled memory): a meta message before the user's, never the system prompt. */
  context?: string;
  /** The tools to run, by name; default the session's own. Their definitions are not sent: the session's are (a stable prefix). */
  tools?: readonly SessionTool[];
  /** Streamed answer text. */
  onTextDelta?: (text: string) => void;
  /** Called before each tool call runs (a status line, a log). */
  onToolCall?: (call: ToolUseBlock) => void;
  /** Interrupts the turn: the model request is aborted, running tools see the signal, unanswered calls get an error result. */
  signal?: AbortSignal;
  /** Model rounds that may end in tool calls before the turn stops (default `session.maxToolRounds`). */
  maxToolRounds?: number;
  /** Output cap of each request (default `session.maxOutputTokens`). */
  maxOutputTokens?: number;
}

/** What one turn did. */
export interface AgentTurnResult {
  /** The final answer's text (the last response's text). */
  text: string;
  /** Model requests made. */
  requests: number;
  toolCalls: number;
  /** `end`/`max_tokens`/`other` from the model, or `max-tool-rounds` when the turn was cut. */
  stopReason: LanguageModelStopReason | 'max-tool-rounds';
  /** Usage summed over the turn's requests. */
  usage: LanguageModelUsage;
  /** The last response. */
  response: LanguageModelResponse;
}

const INTERRUPTED = 'Interrupted by the user before this tool ran.';
/** Keeps the replacement result far under any tool-result threshold, so it is never stored. */
const RESULT_ERROR_MAX_CHARS = 500;

/**
 * Runs one agent turn on a session: adds the user message, then asks the model and runs the tools
 * it calls until it answers without tools (or `maxToolRounds` is reached). Every step goes through
 * the session, so accounting, tool-result storage, microcompaction, notes and compaction apply.
 * @example
 * const result = await runAgentTurn(session, { content: 'What does src/a.ts export?', onTextDelta: (t) => process.stdout.write(t) });
 */
export async function runAgentTurn(session: Session, options: AgentTurnOptions): Promise<AgentTurnResult> {
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'runAgentTurn takes { content, tools?, ... }.');
  const maxToolRounds = checkCount(options.maxToolRounds ?? session.settings.session.maxToolRounds, 'maxToolRounds');
  const maxOutputTokens = options.maxOutputTokens ?? session.settings.session.maxOutputTokens;
  const runners = new Map((options.tools ?? session.tools).map((tool) => [tool.definition.name, tool]));
  options.signal?.throwIfAborted();
  session.addUserMessage(options.content, { ...(options.context !== undefined && { context: options.context }) });
  const usage: LanguageModelUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  let requests = 0;
  let toolCalls = 0;
  let rounds = 0;
  for (;;) {
    const request = await session.prepareRequest({
      maxOutputTokens,
      ...(options.signal && { signal: options.signal }),
    });
    const response = await session.model.generate({
      ...request,
      ...(options.onTextDelta && { onTextDelta: options.onTextDelta }),
    });
    requests += 1;
    addUsage(usage, response.usage);
    session.recordResponse(response);
    const calls = toolUses(response);
    if (calls.length === 0)
      return { text: response.text, requests, toolCalls, stopReason: response.stopReason ?? 'end', usage, response };
    toolCalls += calls.length;
    await addResults(session, await runTools(session, calls, runners, options));
    rounds += 1;
    if (rounds >= maxToolRounds)
      return { text: response.text, requests, toolCalls, stopReason: 'max-tool-rounds', usage, response };
    options.signal?.throwIfAborted();
  }
}

/**
 * Adds the tool results; when the session cannot keep them (storage or transcript refused:
 * STORE_ERROR, CONFLICT, PAYLOAD_TOO_LARGE), the calls are answered with short error results that
 * need no storage instead, so the model learns what happened and the session is never left with
 * unanswered calls. A session that refuses even those (closed) throws the first error.
 */
async function addResults(session: Session, results: ToolResultInput[]): Promise<void> {
  try {
    await session.addToolResults(results);
  } catch (error) {
    const reason = isEngramError(error)
      ? `${error.code}: ${error.message}`
      : error instanceof Error
        ? error.message
        : String(error);
    const content = `Error: the tool ran, but its result could not be kept (${reason.slice(0, RESULT_ERROR_MAX_CHARS)}).`;
    try {
      await session.addToolResults(results.map((result) => ({ toolUseId: result.toolUseId, content, isError: true })));
    } catch {
      throw error;
    }
  }
}

/** Runs the calls one after another (tools may depend on each other's effects); a failure becomes an error result. */
async function runTools(
  session: Session,
  calls: readonly ToolUseBlock[],
  runners: Map<string, SessionTool>,
  options: AgentTurnOptions,
): Promise<ToolResultInput[]> {
  const results: ToolResultInput[] = [];
  const signal = options.signal ?? new AbortController().signal;
  for (const call of calls) {
    if (signal.aborted) {
      results.push({ toolUseId: call.id, content: INTERRUPTED, isError: true });
      continue;
    }
    const tool = runners.get(call.name);
    if (!tool) {
      results.push({
        toolUseId: call.id,
        content: `Unknown tool ${call.name}; the tools are: ${[...runners.keys()].join(', ') || 'none'}.`,
        isError: true,
      });
      continue;
    }
    options.onToolCall?.(call);
    try {
      const output = await tool.run(structuredClone(call.input), {
        sessionId: session.sessionId,
        toolUseId: call.id,
        signal,
      });
      if (output === null || typeof output !== 'object' || typeof output.content !== 'string')
        throw new Error(`tool ${call.name} returned no content string`);
      results.push({ ...output, toolUseId: call.id });
    } catch (error) {
      const message = isEngramError(error)
        ? `${error.code}: ${error.message}`
        : error instanceof Error
          ? error.message
          : String(error);
      results.push({ toolUseId: call.id, content: `Error: ${message}`, isError: true });
    }
  }
  return results;
}

function addUsage(total: LanguageModelUsage, usage: LanguageModelUsage): void {
  total.inputTokens += usage.inputTokens;
  total.outputTokens += usage.outputTokens;
  total.cacheReadTokens = (total.cacheReadTokens ?? 0) + (usage.cacheReadTokens ?? 0);
  total.cacheWriteTokens = (total.cacheWriteTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
}

function checkCount(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000)
    throw new EngramError('INVALID_INPUT', `${name} must be a whole number from 1 to 1000.`);
  return value;
}
