/**
 * Every default number of SPEC.md, in one place. Each is a setting: the config loader layers
 * ~/.engram/config.json, the project's .engram.json, environment variables and CLI flags on top.
 */
export interface Settings {
  store: { url: string; busyTimeoutMs: number };
  memory: { maxContentBytes: number; maxNameLength: number; maxDescriptionLength: number };
  project: { id: string };
  recall: {
    topK: number;
    minScore: number;
    recencyBase: number;
    ageNoteDays: number;
    staleDays: number;
    llmManifestMax: number;
    llmMaxPicks: number;
    fullTextK1: number;
    fullTextB: number;
    recencyFloor: number;
    llmTimeoutMs: number;
    llmMaxOutputTokens: number;
    llmQueryMaxTokens: number;
  };
  injection: { maxTokens: number };
  tokens: { bytesPerTextToken: number; bytesPerJsonToken: number };
  index: { maxLines: number; maxBytes: number; entryMaxChars: number };
  dedupe: { cosineThreshold: number; lexicalThreshold: number; candidateLimit: number };
  aging: { archiveAfterDays: number; archiveBelowImportance: number; intervalHours: number };
  extraction: { maxMemoriesPerTurn: number; maxOutputTokens: number; agentMaxTurns: number; manifestMax: number };
  session: {
    contextWindow: number;
    outputReserve: number;
    warnRatios: number[];
    toolResultThresholdBytes: number;
    toolResultPreviewBytes: number;
    fileCacheEntries: number;
    fileCacheBytes: number;
    microcompactIdleMinutes: number;
    microcompactKeepRecent: number;
  };
  notes: {
    initThresholdTokens: number;
    minGrowthTokens: number;
    minToolCalls: number;
    sectionMaxTokens: number;
    fileMaxTokens: number;
  };
  compaction: { bufferTokens: number; thresholdRatio: number; maxRetries: number; circuitBreakerFailures: number };
  dream: { minHours: number; scanMinutes: number; minSessions: number; lockStaleMinutes: number };
  server: { host: string; port: number; token: string; maxBodyBytes: number };
  embedding: {
    provider: EmbeddingProvider;
    baseUrl: string;
    model: string;
    apiKey: string;
    dimensions: number;
    batchSize: number;
    timeoutMs: number;
    /** Recall waits at most this long for the query's vector, then ranks by full-text alone. */
    queryTimeoutMs: number;
    maxRetries: number;
    retryBaseDelayMs: number;
    retryMaxDelayMs: number;
    /** k of reciprocal rank fusion: how much the top of each ranking outweighs the rest. */
    fusionK: number;
  };
}

/** Which embedder computes vectors: none (full-text only, nothing leaves the machine) or an OpenAI-compatible endpoint. */
export type EmbeddingProvider = 'none' | 'openai-compatible';

/** One setting: its dotted path, the environment variable that sets it, and what it means. */
export interface SettingDefinition {
  path: string;
  env?: string;
  description: string;
  secret?: boolean;
}

export const DEFAULT_SETTINGS: Settings = {
  store: { url: '', busyTimeoutMs: 5_000 },
  memory: { maxContentBytes: 64 * 1024, maxNameLength: 80, maxDescriptionLength: 300 },
  project: { id: '' },
  recall: {
    topK: 6,
    minScore: 0.25,
    recencyBase: 0.98,
    ageNoteDays: 2,
    staleDays: 30,
    llmManifestMax: 200,
    llmMaxPicks: 5,
    fullTextK1: 1.2,
    fullTextB: 0.3,
    recencyFloor: 0.5,
    llmTimeoutMs: 10_000,
    llmMaxOutputTokens: 256,
    llmQueryMaxTokens: 2_000,
  },
  injection: { maxTokens: 3_000 },
  tokens: { bytesPerTextToken: 4, bytesPerJsonToken: 2 },
  index: { maxLines: 200, maxBytes: 25_000, entryMaxChars: 150 },
  dedupe: { cosineThreshold: 0.85, lexicalThreshold: 0.8, candidateLimit: 20 },
  aging: { archiveAfterDays: 90, archiveBelowImportance: 0.5, intervalHours: 24 },
  extraction: { maxMemoriesPerTurn: 5, maxOutputTokens: 2_000, agentMaxTurns: 5, manifestMax: 200 },
  session: {
    contextWindow: 200_000,
    outputReserve: 20_000,
    warnRatios: [0.7, 0.85, 0.92],
    toolResultThresholdBytes: 50_000,
    toolResultPreviewBytes: 2_000,
    fileCacheEntries: 100,
    fileCacheBytes: 25 * 1024 * 1024,
    microcompactIdleMinutes: 60,
    microcompactKeepRecent: 5,
  },
  notes: {
    initThresholdTokens: 40_000,
    minGrowthTokens: 5_000,
    minToolCalls: 3,
    sectionMaxTokens: 2_000,
    fileMaxTokens: 12_000,
  },
  compaction: { bufferTokens: 13_000, thresholdRatio: 0.92, maxRetries: 3, circuitBreakerFailures: 3 },
  dream: { minHours: 24, scanMinutes: 10, minSessions: 5, lockStaleMinutes: 60 },
  server: { host: '127.0.0.1', port: 7437, token: '', maxBodyBytes: 1024 * 1024 },
  embedding: {
    provider: 'none',
    baseUrl: '',
    model: '',
    apiKey: '',
    dimensions: 0,
    batchSize: 64,
    timeoutMs: 30_000,
    queryTimeoutMs: 5_000,
    maxRetries: 3,
    retryBaseDelayMs: 500,
    retryMaxDelayMs: 30_000,
    fusionK: 60,
  },
};

export const SETTING_DEFINITIONS: readonly SettingDefinition[] = [
  { path: 'store.url', env: 'ENGRAM_STORE', description: 'Store location: a SQLite file path or sqlite://<path>; default <ENGRAM_HOME>/engram.db' },
  { path: 'store.busyTimeoutMs', env: 'ENGRAM_BUSY_TIMEOUT_MS', description: 'How long a writer waits for a lock held by another process' },
  { path: 'memory.maxContentBytes', description: 'Largest content one memory may hold' },
  { path: 'memory.maxNameLength', description: 'Longest memory name (slug)' },
  { path: 'memory.maxDescriptionLength', description: 'Longest one-line description' },
  { path: 'project.id', env: 'ENGRAM_PROJECT', description: 'Explicit project id; default from .engram.json, the git remote or the path' },
  { path: 'recall.topK', env: 'ENGRAM_TOP_K', description: 'Memories recalled per query' },
  { path: 'recall.minScore', env: 'ENGRAM_MIN_SCORE', description: 'Normalized score below which a memory is not recalled' },
  { path: 'recall.recencyBase', description: 'Recency factor per day since last access' },
  { path: 'recall.ageNoteDays', description: 'Older than this, a recalled memory carries its age' },
  { path: 'recall.staleDays', description: 'Older than this, a memory is marked stale' },
  { path: 'recall.llmManifestMax', description: 'Manifest entries given to an LLM retriever' },
  { path: 'recall.llmMaxPicks', description: 'Memories an LLM retriever may pick' },
  { path: 'recall.fullTextK1', description: 'BM25 k1 of full-text relevance: how fast repeated words stop adding' },
  { path: 'recall.fullTextB', description: 'BM25 b of full-text relevance: how much longer memories are discounted (0..1)' },
  { path: 'recall.recencyFloor', description: 'Least recency weight age can leave a memory (0..1): weight = floor + (1 - floor) x recencyBase^days' },
  { path: 'recall.llmTimeoutMs', description: 'How long the LLM retriever may take before recall falls back to ranking alone' },
  { path: 'recall.llmMaxOutputTokens', description: 'Output token cap of the LLM retriever call' },
  { path: 'recall.llmQueryMaxTokens', description: 'Longest user message shown to the LLM retriever (longer is cut)' },
  { path: 'injection.maxTokens', description: 'Token budget of the <memory_context> block' },
  { path: 'tokens.bytesPerTextToken', description: 'Bytes per token when estimating the size of text' },
  { path: 'tokens.bytesPerJsonToken', description: 'Bytes per token when estimating the size of JSON (denser than text)' },
  { path: 'index.maxLines', description: 'MEMORY.md line cap' },
  { path: 'index.maxBytes', description: 'MEMORY.md byte cap' },
  { path: 'index.entryMaxChars', description: 'Longest MEMORY.md entry line' },
  { path: 'dedupe.cosineThreshold', description: 'Embedding similarity at which a new memory updates an old one' },
  { path: 'dedupe.lexicalThreshold', description: 'Lexical similarity at which a new memory updates an old one (no embedder)' },
  { path: 'dedupe.candidateLimit', description: 'Memories of the same scope compared with each new one (closest by full-text or vector search)' },
  { path: 'aging.archiveAfterDays', description: 'Days without access after which unimportant memories are archived' },
  { path: 'aging.archiveBelowImportance', description: 'Importance below which aging archives' },
  { path: 'aging.intervalHours', description: 'Hours between aging runs inside the service (engram serve); 0 turns them off' },
  { path: 'extraction.maxMemoriesPerTurn', description: 'Memories one extraction may write' },
  { path: 'extraction.maxOutputTokens', description: 'Output token cap of one extraction call' },
  { path: 'extraction.agentMaxTurns', description: 'Turns of the agent-mode extraction helper' },
  { path: 'extraction.manifestMax', description: 'Existing memories shown to the extraction helper' },
  { path: 'session.contextWindow', description: 'Context window in tokens' },
  { path: 'session.outputReserve', description: 'Tokens reserved for the model output' },
  { path: 'session.warnRatios', description: 'Context usage ratios that raise warnings' },
  { path: 'session.toolResultThresholdBytes', description: 'Tool results above this are stored on disk' },
  { path: 'session.toolResultPreviewBytes', description: 'Preview kept in place of a stored tool result' },
  { path: 'session.fileCacheEntries', description: 'File-read dedupe LRU entries' },
  { path: 'session.fileCacheBytes', description: 'File-read dedupe LRU bytes' },
  { path: 'session.microcompactIdleMinutes', description: 'Idle minutes after which old tool results are cleared' },
  { path: 'session.microcompactKeepRecent', description: 'Recent tool results microcompaction keeps' },
  { path: 'notes.initThresholdTokens', description: 'Context size before session notes start' },
  { path: 'notes.minGrowthTokens', description: 'Token growth required between notes updates' },
  { path: 'notes.minToolCalls', description: 'Tool calls between notes updates' },
  { path: 'notes.sectionMaxTokens', description: 'Session notes per-section cap' },
  { path: 'notes.fileMaxTokens', description: 'Session notes whole-file cap' },
  { path: 'compaction.bufferTokens', description: 'Compaction fires at effective window minus this' },
  { path: 'compaction.thresholdRatio', description: 'Compaction fires at this share of the window' },
  { path: 'compaction.maxRetries', description: 'Retries of a too-long compaction request' },
  { path: 'compaction.circuitBreakerFailures', description: 'Failed compactions in a row before giving up' },
  { path: 'dream.minHours', description: 'Hours between consolidations' },
  { path: 'dream.scanMinutes', description: 'Minutes between consolidation gate scans' },
  { path: 'dream.minSessions', description: 'New sessions required before consolidating' },
  { path: 'dream.lockStaleMinutes', description: 'Age after which a consolidation lock is taken over' },
  { path: 'server.host', env: 'ENGRAM_HOST', description: 'Address the service binds; non-loopback requires a token' },
  { path: 'server.port', env: 'ENGRAM_PORT', description: 'Port the service listens on' },
  { path: 'server.token', env: 'ENGRAM_TOKEN', description: 'Bearer token required on every request when set', secret: true },
  { path: 'server.maxBodyBytes', description: 'Largest request body the service accepts' },
  { path: 'embedding.provider', env: 'ENGRAM_EMBEDDING_PROVIDER', description: 'Embedder: none (full-text recall only) or openai-compatible (OpenAI, Ollama, vLLM, LM Studio, TEI)' },
  { path: 'embedding.baseUrl', env: 'ENGRAM_EMBEDDING_BASE_URL', description: 'Base URL of the embeddings API, e.g. https://api.openai.com/v1 or http://localhost:11434/v1' },
  { path: 'embedding.model', env: 'ENGRAM_EMBEDDING_MODEL', description: 'Embedding model id, e.g. text-embedding-3-small or nomic-embed-text' },
  { path: 'embedding.apiKey', env: 'ENGRAM_EMBEDDING_API_KEY', description: 'Bearer token for the embeddings API (none for local servers)', secret: true },
  { path: 'embedding.dimensions', env: 'ENGRAM_EMBEDDING_DIMENSIONS', description: 'Expected vector length; 0 learns it from the first answer' },
  { path: 'embedding.batchSize', env: 'ENGRAM_EMBEDDING_BATCH_SIZE', description: 'Texts sent per embeddings request' },
  { path: 'embedding.timeoutMs', env: 'ENGRAM_EMBEDDING_TIMEOUT_MS', description: 'How long one embeddings request may take' },
  { path: 'embedding.queryTimeoutMs', description: 'How long recall waits for the query vector before ranking by full-text alone' },
  { path: 'embedding.maxRetries', env: 'ENGRAM_EMBEDDING_MAX_RETRIES', description: 'Retries after 429, 5xx or network errors, with exponential backoff' },
  { path: 'embedding.retryBaseDelayMs', description: 'First backoff delay; doubles on each retry' },
  { path: 'embedding.retryMaxDelayMs', description: 'Longest wait between retries, Retry-After included' },
  { path: 'embedding.fusionK', description: 'k of reciprocal rank fusion of full-text and vector rankings' },
];

/**
 * Bounds beyond "a non-negative number": shares and similarities lie in 0..1, a port fits 16 bits,
 * counts are whole numbers.
 */
export const SETTING_RANGES: Readonly<Record<string, { minimum?: number; maximum?: number; integer?: boolean }>> = {
  'store.busyTimeoutMs': { integer: true },
  'memory.maxContentBytes': { minimum: 1, integer: true },
  'memory.maxNameLength': { minimum: 1, integer: true },
  'memory.maxDescriptionLength': { minimum: 1, integer: true },
  'recall.topK': { minimum: 1, maximum: 1_000, integer: true },
  'recall.minScore': { maximum: 1 },
  'recall.recencyBase': { maximum: 1 },
  'recall.recencyFloor': { maximum: 1 },
  'recall.llmManifestMax': { integer: true },
  'recall.llmMaxPicks': { integer: true },
  'injection.maxTokens': { minimum: 1, integer: true },
  'index.maxLines': { minimum: 1, integer: true },
  'index.maxBytes': { minimum: 1, integer: true },
  'index.entryMaxChars': { minimum: 1, integer: true },
  'dedupe.cosineThreshold': { maximum: 1 },
  'dedupe.lexicalThreshold': { maximum: 1 },
  'aging.archiveBelowImportance': { maximum: 1 },
  'extraction.maxMemoriesPerTurn': { integer: true },
  'compaction.thresholdRatio': { maximum: 1 },
  'session.warnRatios': { maximum: 1 },
  'server.port': { maximum: 65_535, integer: true },
  'server.maxBodyBytes': { minimum: 1, integer: true },
};

/** Reads a setting by dotted path. */
export function getSetting(settings: Settings, path: string): unknown {
  let node: unknown = settings;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
