/**
 * The one interface engram needs from a language model: a request in, content blocks and usage out.
 * Side queries (LLM selection of memories), extraction, forked helpers and summaries all go through
 * it; providers (Anthropic's Messages API, OpenAI-compatible endpoints) implement it in their own
 * modules under src/adapters/models, and raise `EngramError` with a MODEL_* code on failure.
 */

/** Who said a message. The system prompt is not a message: it is `LanguageModelRequest.system`. */
export type LanguageModelRole = 'user' | 'assistant';

export interface TextBlock {
  type: 'text';
  text: string;
}

/** The model asks for a tool to be run; `input` is the JSON object the model produced. */
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** The answer to a tool use, sent back in a user message. */
export interface ToolResultBlock {
  type: 'tool_result';
  toolUseId: string;
  content: string;
  isError?: boolean;
}

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;

export interface LanguageModelMessage {
  role: LanguageModelRole;
  /** A string is one text block. */
  content: string | readonly ContentBlock[];
  /**
   * Marks the end of a prefix the provider may cache, as `SystemBlock.cache` does (Anthropic: a
   * breakpoint on the message's last block). A session marks its latest message, so the whole
   * conversation so far is served from the cache on the next request and by forked helpers.
   */
  cache?: boolean;
}

/**
 * One block of the system prompt. `cache: true` marks the end of a prefix the provider may cache
 * (Anthropic: a `cache_control: {type: 'ephemeral'}` breakpoint; providers without explicit
 * caching ignore it). Put stable text first and mark the last stable block.
 */
export interface SystemBlock {
  text: string;
  cache?: boolean;
}

/** A tool the model may call: its name, what it does, and a JSON Schema (type object) for its input. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** `auto` (default when tools are given), `none`, `any` (must call some tool) or one named tool. */
export type ToolChoice = 'auto' | 'none' | 'any' | { name: string };

/** `text` (default) or `json`: the answer must be one JSON value, which a provider may enforce natively. */
export type LanguageModelResponseFormat = 'text' | 'json';

export interface LanguageModelRequest {
  /** Instructions placed before the messages; a string is one uncached block. */
  system?: string | readonly SystemBlock[];
  /** The conversation so far, oldest first; the last one is usually the user's. */
  messages: readonly LanguageModelMessage[];
  /** Upper bound on generated tokens. */
  maxOutputTokens: number;
  responseFormat?: LanguageModelResponseFormat;
  tools?: readonly ToolDefinition[];
  toolChoice?: ToolChoice;
  temperature?: number;
  /** Aborts the request; an implementation rejects promptly (code MODEL_ABORTED) once it fires. */
  signal?: AbortSignal;
  /** Overrides the model's per-request timeout (code MODEL_TIMEOUT when it passes). */
  timeoutMs?: number;
  /**
   * Streams the answer: called with each piece of text as the provider produces it (providers that
   * cannot stream call it once with the whole text). The response is the same as without it.
   */
  onTextDelta?: (text: string) => void;
  /**
   * Server-side context editing where the provider supports it (Anthropic's `clear_tool_uses`,
   * FORMATS §4.2); providers without it ignore it and report no edits.
   */
  contextEditing?: ContextEditingRequest;
}

/** Anthropic's `clear_tool_uses_20250919` edit, in engram's names. */
export interface ContextEditingRequest {
  clearToolUses: {
    /** Clear once the input passes this many tokens (provider default 100,000). */
    triggerInputTokens?: number;
    /** Keep this many most recent tool uses (provider default 3). */
    keepToolUses?: number;
    /** Clear nothing unless at least this many tokens go (so breaking the prompt cache is worth it). */
    clearAtLeastTokens?: number;
    /** Tool names whose results are never cleared (put the memory tool here). */
    excludeTools?: string[];
    /** Also blank the tool_use inputs. */
    clearToolInputs?: boolean;
  };
}

/** One edit the provider applied server-side. */
export interface AppliedContextEdit {
  type: string;
  clearedToolUses?: number;
  clearedInputTokens?: number;
}

/** Tokens a request consumed, as the provider reported them. */
export interface LanguageModelUsage {
  /** Input tokens not served from or written to the cache (Anthropic's `input_tokens`). */
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache. */
  cacheReadTokens?: number;
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens?: number;
}

/** Why the model stopped: a final answer, a tool call to run, the output cap, or something else. */
export type LanguageModelStopReason = 'end' | 'tool_use' | 'max_tokens' | 'other';

export interface LanguageModelResponse {
  /** The text blocks joined: the answer when no tools are involved. */
  text: string;
  /** Every block of the answer in order; absent means one text block equal to `text`. */
  content?: ContentBlock[];
  stopReason?: LanguageModelStopReason;
  usage: LanguageModelUsage;
  /** Context edits the provider applied (only when the request asked for them). */
  contextEdits?: AppliedContextEdit[];
}

/** A language model engram can ask a question. Implementations must not retain or mutate the request. */
export interface LanguageModel {
  /** Who serves it, e.g. `anthropic`, `openai-compatible`, `scripted`. */
  readonly provider: string;
  /** The provider's model name. */
  readonly modelId: string;
  /**
   * `false` when a call is too slow for a user who is waiting (claude-code starts a CLI process per
   * call): recall's LLM selection then leaves the model out unless a call names it; background work
   * (extraction) still uses it. Absent means interactive.
   */
  readonly interactive?: boolean;
  /**
   * Sends one request (retrying 429, 5xx and overloaded answers with backoff); rejects with an
   * EngramError: MODEL_ABORTED, MODEL_TIMEOUT, MODEL_RATE_LIMITED (retries used up),
   * MODEL_UNAVAILABLE (server or network), MODEL_AUTH (key refused), MODEL_REQUEST_INVALID
   * (the provider refused the request), MODEL_OUTPUT_INVALID (an answer engram cannot read).
   */
  generate(request: LanguageModelRequest): Promise<LanguageModelResponse>;
}
