import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngramError, type EngramErrorCode } from '../../kernel/errors.js';
import { readJsonAnswer } from '../../kernel/json-answer.js';
import type {
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelStopReason,
  LanguageModelUsage,
} from '../../contracts/language-model.js';
import { systemText } from '../../contracts/language-model-content.js';
import { ENGRAM_NESTED_ENV } from '../../kernel/nested-call.js';
import { JSON_ANSWER_INSTRUCTION } from './json-answer-instruction.js';
import { checkLanguageModelRequest } from './language-model-request-check.js';
import { checkModelId } from './model-adapter-options.js';

export interface ClaudeCodeLanguageModelOptions {
  /** A Claude Code model alias (`haiku`, `sonnet`, `opus`) or a full model id. */
  model: string;
  /** The Claude Code CLI: a path, or a name looked up on PATH (default `claude`). */
  command?: string;
  /** How long one call may take, the CLI's start included (default 120 s); a request's `timeoutMs` overrides it. */
  timeoutMs?: number;
  /** The CLI's environment (default this process's); engram adds its nested-call guard and a retry cap. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Where the CLI runs (default the system's temporary folder, so no project's files are in its way). */
  cwd?: string;
}

const DEFAULT_TIMEOUT_MS = 120_000;
/** A JSON result larger than this is not an answer engram asked for. */
const MAX_STDOUT_BYTES = 16 * 1024 * 1024;
const STDERR_TAIL_BYTES = 4_096;
/** Time the CLI gets to exit after SIGTERM before it is killed. */
const KILL_GRACE_MS = 2_000;
/** Claude Code retries a refused login 10 times over minutes by default: one retry is enough for a background job. */
const CLI_MAX_RETRIES = '1';
/** Used when a request has no system prompt, so the CLI's own coding-agent prompt is not sent. */
const PLAIN_SYSTEM_PROMPT = 'Answer the request.';

/** What `claude -p --output-format json` prints, in the fields engram reads. */
interface ClaudeCodeResult {
  type?: unknown;
  is_error?: unknown;
  result?: unknown;
  stop_reason?: unknown;
  api_error_status?: unknown;
  usage?: {
    input_tokens?: unknown;
    output_tokens?: unknown;
    cache_read_input_tokens?: unknown;
    cache_creation_input_tokens?: unknown;
  };
}

/**
 * A LanguageModel that runs each request through the local Claude Code CLI headless, with the user's
 * own Claude Code login (most Claude Code users have no API key): `claude -p --output-format json`
 * with the prompt on stdin, no tools, `--safe-mode` (no hooks, plugins, MCP servers or CLAUDE.md, so
 * engram's own hooks never run inside it and it never recurses), no transcript written, and
 * `ENGRAM_NESTED=1` in its environment as a second guard the hooks check. One process per call
 * (about a second or more), so it is `interactive: false`: recall's LLM selection leaves it out;
 * extraction, which runs in the background, uses it. Requests with tools are refused.
 * @example
 * const model = new ClaudeCodeLanguageModel({ model: 'haiku' });
 * const answer = await model.generate({ messages: [{ role: 'user', content: 'Hello' }], maxOutputTokens: 100 });
 */
export class ClaudeCodeLanguageModel implements LanguageModel {
  readonly provider = 'claude-code';
  readonly modelId: string;
  readonly interactive = false;
  readonly command: string;
  readonly #timeoutMs: number;
  readonly #env: Readonly<Record<string, string | undefined>> | undefined;
  readonly #cwd: string | undefined;

  constructor(options: ClaudeCodeLanguageModelOptions) {
    if (options === null || typeof options !== 'object')
      throw new EngramError('CONFIG_INVALID', 'ClaudeCodeLanguageModel takes an options object with a model.');
    this.modelId = checkModelId(
      options.model,
      'set model.sideModel / ENGRAM_SIDE_MODEL to a Claude Code model alias (haiku, sonnet, opus) or a model id.',
    );
    const command = options.command ?? 'claude';
    if (
      typeof command !== 'string' ||
      command.trim() === '' ||
      command.length > 4_096 ||
      /[\u0000-\u001F]/.test(command)
    )
      throw new EngramError(
        'CONFIG_INVALID',
        'model.claudeCodeCommand (ENGRAM_CLAUDE_CODE_COMMAND) must name the claude CLI: a path or a command on PATH.',
      );
    this.command = command;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3_600_000)
      throw new EngramError(
        'CONFIG_INVALID',
        `timeoutMs must be a whole number from 1 to 3600000, got ${String(timeoutMs)}.`,
      );
    this.#timeoutMs = timeoutMs;
    this.#env = options.env;
    this.#cwd = options.cwd;
  }

  async generate(request: LanguageModelRequest): Promise<LanguageModelResponse> {
    checkLanguageModelRequest(request);
    if (request.tools !== undefined && request.tools.length > 0)
      throw new EngramError(
        'MODEL_REQUEST_INVALID',
        'The claude-code provider runs Claude Code with no tools, so it cannot serve a request with tools (agent-mode extraction): use cheap mode, or an API key.',
      );
    if (request.signal?.aborted) throw aborted();
    const json = request.responseFormat === 'json';
    const system = [systemText(request.system), json ? JSON_ANSWER_INSTRUCTION : ''].filter(Boolean).join('\n\n');
    // The system prompt goes in a file (argv is small and visible to other users in ps); the conversation on stdin.
    const folder = await mkdtemp(join(tmpdir(), 'engram-claude-code-'));
    try {
      const systemFile = join(folder, 'system.txt');
      await writeFile(systemFile, system === '' ? PLAIN_SYSTEM_PROMPT : system, { mode: 0o600 });
      const run = await this.#run(systemFile, promptText(request.messages), request);
      const result = readResult(run);
      const text = typeof result.result === 'string' ? result.result : '';
      const stopReason = stopReasonOf(result.stop_reason);
      const answer = json
        ? readJsonAnswer(text, stopReason === 'max_tokens' ? 'max_tokens' : 'end', 'Claude Code')
        : text;
      request.onTextDelta?.(answer);
      return { text: answer, content: [{ type: 'text', text: answer }], stopReason, usage: usageOf(result.usage) };
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }

  #run(systemFile: string, prompt: string, request: LanguageModelRequest): Promise<CliRun> {
    const timeoutMs = request.timeoutMs ?? this.#timeoutMs;
    const args = [
      '-p',
      '--output-format',
      'json',
      '--model',
      this.modelId,
      '--tools',
      '',
      '--safe-mode',
      '--no-session-persistence',
      '--max-turns',
      '1',
      '--system-prompt-file',
      systemFile,
    ];
    const base = this.#env ?? process.env;
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(base)) if (value !== undefined) env[key] = value;
    env[ENGRAM_NESTED_ENV] = '1';
    env.CLAUDE_CODE_MAX_RETRIES ??= CLI_MAX_RETRIES;
    env.CLAUDE_CODE_MAX_OUTPUT_TOKENS = String(request.maxOutputTokens);
    return new Promise((resolve, reject) => {
      const child = spawn(this.command, args, {
        cwd: this.#cwd ?? tmpdir(),
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      let stderr = '';
      let ended: 'timeout' | 'abort' | 'too-large' | undefined;
      let settled = false;
      let killTimer: NodeJS.Timeout | undefined;
      const stop = (why: 'timeout' | 'abort' | 'too-large'): void => {
        if (ended || settled) return;
        ended = why;
        child.kill('SIGTERM');
        killTimer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
        killTimer.unref();
      };
      const timer = setTimeout(() => stop('timeout'), timeoutMs);
      const onAbort = (): void => stop('abort');
      request.signal?.addEventListener('abort', onAbort, { once: true });
      const finish = (outcome: { run: CliRun } | { error: EngramError }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (killTimer) clearTimeout(killTimer);
        request.signal?.removeEventListener('abort', onAbort);
        if ('run' in outcome) resolve(outcome.run);
        else reject(outcome.error);
      };
      child.stdout.on('data', (chunk: Buffer) => {
        stdoutBytes += chunk.length;
        if (stdoutBytes > MAX_STDOUT_BYTES) stop('too-large');
        else stdout.push(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
      });
      child.on('error', (error: NodeJS.ErrnoException) => {
        finish({
          error:
            error.code === 'ENOENT'
              ? new EngramError(
                  'MODEL_NOT_CONFIGURED',
                  `The Claude Code CLI ${JSON.stringify(this.command)} was not found: install Claude Code, or set ENGRAM_CLAUDE_CODE_COMMAND (model.claudeCodeCommand) to its path.`,
                  { cause: error },
                )
              : new EngramError('MODEL_UNAVAILABLE', `Could not run the Claude Code CLI: ${error.message}`, {
                  cause: error,
                }),
        });
      });
      child.on('close', (code, signal) => {
        if (ended === 'timeout')
          return finish({
            error: new EngramError(
              'MODEL_TIMEOUT',
              `The Claude Code CLI did not answer within ${timeoutMs} ms and was stopped (extraction.timeoutMs / model.timeoutMs).`,
            ),
          });
        if (ended === 'abort') return finish({ error: aborted() });
        if (ended === 'too-large')
          return finish({
            error: new EngramError(
              'MODEL_OUTPUT_INVALID',
              `The Claude Code CLI printed more than ${MAX_STDOUT_BYTES} bytes; it was stopped.`,
            ),
          });
        finish({ run: { code, signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr } });
      });
      // The CLI may exit before reading its input (a bad flag, no login): that is reported by its exit, not here.
      child.stdin.on('error', () => {});
      child.stdin.end(prompt);
    });
  }
}

/** How the CLI ended: its exit code or signal and what it printed. */
interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The conversation as one prompt: a single user message as it is, several as labelled turns. */
function promptText(messages: readonly LanguageModelMessage[]): string {
  if (messages.length === 1 && messages[0]!.role === 'user') return blockText(messages[0]!);
  return messages
    .map((message) => `${message.role === 'user' ? 'User' : 'Assistant'}:\n${blockText(message)}`)
    .join('\n\n');
}

function blockText(message: LanguageModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((block) => {
      if (block.type === 'text') return block.text;
      if (block.type === 'tool_use') return `[tool call ${block.name}: ${JSON.stringify(block.input)}]`;
      return `[tool result${block.isError ? ' (error)' : ''}: ${block.content}]`;
    })
    .join('\n');
}

/** The CLI's result object, or the error its exit and text say. */
function readResult(run: CliRun): ClaudeCodeResult {
  const result = lastResultObject(run.stdout);
  const failed = run.code !== 0 || result === undefined || result.is_error === true;
  if (!failed) return result;
  const said = typeof result?.result === 'string' ? result.result : '';
  const how = run.signal ? `was killed by ${run.signal}` : `exited with code ${String(run.code)}`;
  const detail = clip(said || run.stderr.trim() || 'no output');
  const status = typeof result?.api_error_status === 'number' ? result.api_error_status : undefined;
  const code = failureCode(said, status, result === undefined && run.code === 0);
  const hint =
    code === 'MODEL_AUTH'
      ? ' Claude Code is not logged in or its login was refused: run `claude` and /login (or set ANTHROPIC_API_KEY for engram).'
      : '';
  throw new EngramError(code, `The Claude Code CLI ${how}: ${detail}.${hint}`, {
    details: { exitCode: run.code, ...(status !== undefined && { apiErrorStatus: status }) },
  });
}

function failureCode(said: string, status: number | undefined, unreadable: boolean): EngramErrorCode {
  if (unreadable) return 'MODEL_OUTPUT_INVALID';
  if (status === 401 || status === 403 || /not logged in|\/login|failed to authenticate|invalid api key/i.test(said))
    return 'MODEL_AUTH';
  if (status === 429) return 'MODEL_RATE_LIMITED';
  if (status === 400 || status === 413) return 'MODEL_REQUEST_INVALID';
  return 'MODEL_UNAVAILABLE';
}

/** The last line of stdout that is a JSON object of type `result` (the CLI prints one; warnings may precede it). */
function lastResultObject(stdout: string): ClaudeCodeResult | undefined {
  const lines = stdout.trim().split('\n').reverse();
  for (const line of lines) {
    const trimmed = line.trim();
    if (!trimmed.startsWith('{')) continue;
    try {
      const value = JSON.parse(trimmed) as unknown;
      if (value !== null && typeof value === 'object' && (value as ClaudeCodeResult).type === 'result')
        return value as ClaudeCodeResult;
    } catch {
      // Not the result line.
    }
  }
  return undefined;
}

function stopReasonOf(value: unknown): LanguageModelStopReason {
  if (value === 'end_turn' || value === 'stop_sequence' || value === undefined || value === null) return 'end';
  if (value === 'max_tokens') return 'max_tokens';
  return 'other';
}

function usageOf(usage: ClaudeCodeResult['usage']): LanguageModelUsage {
  const count = (value: unknown): number =>
    typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
  return {
    inputTokens: count(usage?.input_tokens),
    outputTokens: count(usage?.output_tokens),
    cacheReadTokens: count(usage?.cache_read_input_tokens),
    cacheWriteTokens: count(usage?.cache_creation_input_tokens),
  };
}

function aborted(): EngramError {
  return new EngramError('MODEL_ABORTED', 'The Claude Code call was aborted.');
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
