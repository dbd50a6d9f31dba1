/**
 * The one interface engram needs from a language model: a single request in, text and usage out.
 * Side queries (LLM selection of memories), extraction and summaries all go through it; providers
 * (Anthropic's Messages API, OpenAI-compatible endpoints) implement it in their own modules.
 */

/** Who said a message. The system prompt is not a message: it is `LanguageModelRequest.system`. */
export type LanguageModelRole = 'user' | 'assistant';

export interface LanguageModelMessage {
  role: LanguageModelRole;
  content: string;
}

/** `text` (default) or `json`: the answer must be one JSON value, which a provider may enforce natively. */
export type LanguageModelResponseFormat = 'text' | 'json';

export interface LanguageModelRequest {
  /** Instructions placed before the messages. */
  system?: string;
  /** The conversation so far, oldest first; the last one is usually the user's. */
  messages: readonly LanguageModelMessage[];
  /** Upper bound on generated tokens. */
  maxOutputTokens: number;
  responseFormat?: LanguageModelResponseFormat;
  /** Aborts the request; an implementation rejects promptly once it fires. */
  signal?: AbortSignal;
}

/** Tokens a request consumed, as the provider reported them. */
export interface LanguageModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache. */
  cacheReadTokens?: number;
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens?: number;
}

export interface LanguageModelResponse {
  text: string;
  usage: LanguageModelUsage;
}

/** A language model engram can ask a question. Implementations must not retain or mutate the request. */
export interface LanguageModel {
  /** Who serves it, e.g. `anthropic`, `openai-compatible`, `scripted`. */
  readonly provider: string;
  /** The provider's model name. */
  readonly modelId: string;
  /** Sends one request; rejects on transport errors, refusals it cannot express as text, and aborts. */
  generate(request: LanguageModelRequest): Promise<LanguageModelResponse>;
}
