// `engram/testing`: test doubles for code that uses engram, with no test runner needed: a scripted
// LanguageModel and loopback servers speaking the real wire protocols (Anthropic Messages, OpenAI
// chat completions and Responses, Gemini generateContent, /v1/embeddings). The conformance suites
// register vitest tests, so they are a separate entry, `engram/testing/suites`: importing this one
// never loads vitest.
// test/exports.test.ts pins this list: a change to it is a deliberate diff.
export {
  ScriptedLanguageModel,
  type ScriptedAnswer,
  type ScriptedLanguageModelOptions,
} from './scripted-language-model.js';
export { startAnthropicMessagesServer, type AnthropicMessagesServerOptions } from './anthropic-messages-server.js';
export {
  startOpenAiChatCompletionsServer,
  type OpenAiChatCompletionsServerOptions,
} from './openai-chat-completions-server.js';
export { startOpenAiResponsesServer, type OpenAiResponsesServerOptions } from './openai-responses-server.js';
export {
  startGeminiGenerateContentServer,
  type GeminiGenerateContentServerOptions,
} from './gemini-generate-content-server.js';
export type {
  LanguageModelServer,
  RecordedModelRequest,
  ModelRequestSummary,
  ModelServerReply,
  ModelServerResponder,
  ScriptedModelMessage,
  ScriptedModelError,
  ScriptedStreamBreak,
} from './loopback-model-server.js';
export {
  startEmbeddingsServer,
  hashedWordVector,
  embeddingsResponseBody,
  embeddingsErrorBody,
  type EmbeddingsServer,
  type EmbeddingsServerOptions,
  type RecordedEmbeddingsRequest,
  type ScriptedEmbeddingsResponse,
} from './openai-compatible-embeddings-server.js';
