export { runMemoryStoreSuite, type MemoryStoreSuiteOptions, type MemoryStoreUnderTest } from './memory-store-suite.js';
export { ScriptedLanguageModel, type ScriptedAnswer, type ScriptedLanguageModelOptions } from './scripted-language-model.js';
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
export {
  runLanguageModelSuite,
  type LanguageModelSuiteOptions,
  type LanguageModelCapabilities,
  type SuiteModelOptions,
  type SuiteServerOptions,
} from './language-model-suite.js';
export { startAnthropicMessagesServer, anthropicErrorReply, summarizeMessagesRequest, type AnthropicMessagesServerOptions } from './anthropic-messages-server.js';
export { startOpenAiChatCompletionsServer, openAiErrorReply, summarizeChatRequest, type OpenAiChatCompletionsServerOptions } from './openai-chat-completions-server.js';
export type {
  LanguageModelServer,
  RecordedModelRequest,
  ModelRequestSummary,
  ModelServerReply,
  ModelServerResponder,
  ScriptedModelMessage,
  ScriptedModelError,
} from './loopback-model-server.js';
export { SimulatedPromptCache, type SimulatedPromptCacheOptions, type CachedUsage } from './simulated-prompt-cache.js';
export {
  workloadAnswer,
  workloadScriptedAnswer,
  workloadReadFileTool,
  workloadUserMessage,
  classifyWorkloadRequest,
  estimatedInputTokens,
  type SessionWorkloadOptions,
  type WorkloadRequestKind,
} from './scripted-session-workload.js';
