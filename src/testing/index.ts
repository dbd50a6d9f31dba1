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
