/**
 * Every default number of SPEC.md, in one place. Each is a setting: the config loader layers
 * ~/.engram/config.json, the project's .engram.json, environment variables and CLI flags on top.
 */
export interface Settings {
  store: { url: string; busyTimeoutMs: number; poolSize: number; statementTimeoutMs: number; connectTimeoutMs: number };
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
    fullTextCoverage: number;
    contextNeighbourWeight: number;
    contextSessionWeight: number;
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
  extraction: {
    maxMemoriesPerTurn: number;
    maxOutputTokens: number;
    agentMaxTurns: number;
    manifestMax: number;
    maxInputTokens: number;
    messageMaxChars: number;
    toolResultMaxChars: number;
    knownMaxTokens: number;
    timeoutMs: number;
    leaseMs: number;
    retryBaseDelayMs: number;
    retryMaxDelayMs: number;
    pollIntervalMs: number;
    retainDays: number;
  };
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
    /** Per-model windows overriding contextWindow: `<model>=<tokens>` entries, comma-separated; a trailing `*` matches a prefix. */
    modelContextWindows: string;
    /** Ask the provider to clear old tool results server-side (Anthropic `clear_tool_uses`) instead of clearing them locally. */
    serverContextEditing: boolean;
    /** Bytes one page of a stored tool result returns to the model (read_persisted_output). */
    toolResultPageBytes: number;
    /** Pending transcript lines are written this often: a crash loses at most this much. */
    transcriptFlushMs: number;
    /** Bytes read from the end of each transcript to list sessions (the metadata is re-appended within it). */
    listingTailBytes: number;
    /** Items the todo list holds at most, and characters per item. */
    todoMaxItems: number;
    todoItemMaxChars: number;
    /** Characters of the plan (`Session.setPlan`) at most: it is re-injected after every compaction. */
    planMaxChars: number;
    /** Output cap of each request of an agent turn (runAgentTurn). */
    maxOutputTokens: number;
    /** Model rounds ending in tool calls one agent turn may make before it stops. */
    maxToolRounds: number;
  };
  notes: {
    initThresholdTokens: number;
    minGrowthTokens: number;
    minToolCalls: number;
    sectionMaxTokens: number;
    fileMaxTokens: number;
    /** A file replacing the default notes template (ten `#` sections); '' = the default. */
    templatePath: string;
    /** A file replacing the default notes update prompt; '' = the default. */
    promptPath: string;
    updateMaxOutputTokens: number;
    maxFileBytes: number;
  };
  compaction: {
    bufferTokens: number;
    thresholdRatio: number;
    maxRetries: number;
    circuitBreakerFailures: number;
    summaryMaxOutputTokens: number;
    keepRecentMaxTokens: number;
    reinjectMaxFiles: number;
    reinjectFileMaxTokens: number;
    reinjectMaxTokens: number;
    toolResultMaxChars: number;
  };
  dream: { minHours: number; scanMinutes: number; minSessions: number; lockStaleMinutes: number };
  memoryTool: { viewMaxChars: number; maxFileBytes: number; maxPathLength: number; maxLines: number };
  sandbox: {
    timeoutMs: number;
    outputMaxBytes: number;
    readMaxBytes: number;
    listMaxEntries: number;
    searchMaxMatches: number;
    searchMaxFiles: number;
    searchMaxFileBytes: number;
    searchTimeoutMs: number;
    maxPathLength: number;
    maxCommandLength: number;
  };
  locks: { waitMs: number; leaseMs: number; pollMaxMs: number };
  jobs: { maxAttempts: number; maxPayloadBytes: number };
  explicitMemory: {
    importance: number;
    maxIntentsPerMessage: number;
    maxStatementChars: number;
    maxMessageChars: number;
    forgetMinCoverage: number;
    forgetMinLead: number;
    forgetCandidates: number;
  };
  migrate: { pageSize: number };
  instructions: {
    managedPath: string;
    /** Extra folders (":"-separated, absolute or ~/) that @imports of instruction files may reach. */
    allowImportsFrom: string;
    maxImportDepth: number;
    maxFileBytes: number;
    maxTotalBytes: number;
    maxFiles: number;
    maxRuleEntries: number;
    maxPathPatterns: number;
  };
  chat: {
    /** Largest file write_file writes (the reference chat agent). */
    writeMaxBytes: number;
    /** Longest line (a paste included) the chat terminal takes as one message; longer input is refused. */
    inputMaxBytes: number;
  };
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
  model: {
    provider: ModelProvider;
    model: string;
    sideModel: string;
    baseUrl: string;
    apiKey: string;
    anthropicApiKey: string;
    anthropicBaseUrl: string;
    openaiApiKey: string;
    openaiBaseUrl: string;
    /** Budget of one generate() call, retries and waits between them included. */
    timeoutMs: number;
    maxRetries: number;
    retryBaseDelayMs: number;
    retryMaxDelayMs: number;
  };
}

/** Which embedder computes vectors: none (full-text only, nothing leaves the machine) or an OpenAI-compatible endpoint. */
export type EmbeddingProvider = 'none' | 'openai-compatible';

/**
 * Which language model engram asks: `auto` (Anthropic when its key is set, else an OpenAI-compatible
 * endpoint when its key or base URL is set, else none), one provider by name, or `none` (offline).
 */
export type ModelProvider = 'auto' | 'anthropic' | 'openai-compatible' | 'none';

/** Model ids used when `model.model` / `model.sideModel` are empty: a capable one and a cheap one for side queries and extraction. */
export const DEFAULT_MODEL_IDS = {
  anthropic: { main: 'claude-sonnet-5-5', side: 'claude-haiku-5-5' },
  'openai-compatible': { main: 'gpt-5.4', side: 'gpt-5.4-mini' },
} as const;

/** One setting: its dotted path, the environment variable that sets it, and what it means. */
export interface SettingDefinition {
  path: string;
  env?: string;
  description: string;
  secret?: boolean;
}

export const DEFAULT_SETTINGS: Settings = {
  store: { url: '', busyTimeoutMs: 5_000, poolSize: 10, statementTimeoutMs: 30_000, connectTimeoutMs: 10_000 },
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
    fullTextCoverage: 0.5,
    contextNeighbourWeight: 0.3,
    contextSessionWeight: 0.1,
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
  extraction: {
    maxMemoriesPerTurn: 5,
    maxOutputTokens: 2_000,
    agentMaxTurns: 5,
    manifestMax: 200,
    maxInputTokens: 24_000,
    messageMaxChars: 16_000,
    toolResultMaxChars: 1_000,
    knownMaxTokens: 1_500,
    timeoutMs: 60_000,
    leaseMs: 600_000,
    retryBaseDelayMs: 5_000,
    retryMaxDelayMs: 600_000,
    pollIntervalMs: 1_000,
    retainDays: 7,
  },
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
    modelContextWindows: '',
    serverContextEditing: false,
    toolResultPageBytes: 20_000,
    transcriptFlushMs: 100,
    listingTailBytes: 64 * 1024,
    todoMaxItems: 200,
    todoItemMaxChars: 2_000,
    planMaxChars: 20_000,
    maxOutputTokens: 8_192,
    maxToolRounds: 25,
  },
  notes: {
    initThresholdTokens: 40_000,
    minGrowthTokens: 5_000,
    minToolCalls: 3,
    sectionMaxTokens: 2_000,
    fileMaxTokens: 12_000,
    templatePath: '',
    promptPath: '',
    updateMaxOutputTokens: 8_000,
    maxFileBytes: 1024 * 1024,
  },
  compaction: {
    bufferTokens: 13_000,
    thresholdRatio: 0.92,
    maxRetries: 3,
    circuitBreakerFailures: 3,
    summaryMaxOutputTokens: 20_000,
    keepRecentMaxTokens: 40_000,
    reinjectMaxFiles: 5,
    reinjectFileMaxTokens: 5_000,
    reinjectMaxTokens: 20_000,
    toolResultMaxChars: 10_000,
  },
  dream: { minHours: 24, scanMinutes: 10, minSessions: 5, lockStaleMinutes: 60 },
  memoryTool: { viewMaxChars: 16_000, maxFileBytes: 128 * 1024, maxPathLength: 512, maxLines: 999_999 },
  sandbox: {
    timeoutMs: 10_000,
    outputMaxBytes: 64 * 1024,
    readMaxBytes: 256 * 1024,
    listMaxEntries: 500,
    searchMaxMatches: 200,
    searchMaxFiles: 5_000,
    searchMaxFileBytes: 1024 * 1024,
    searchTimeoutMs: 5_000,
    maxPathLength: 1_024,
    maxCommandLength: 4_096,
  },
  locks: { waitMs: 10_000, leaseMs: 15_000, pollMaxMs: 100 },
  jobs: { maxAttempts: 5, maxPayloadBytes: 1024 * 1024 },
  explicitMemory: {
    importance: 0.8,
    maxIntentsPerMessage: 5,
    maxStatementChars: 1_000,
    maxMessageChars: 200_000,
    forgetMinCoverage: 0.75,
    forgetMinLead: 0.2,
    forgetCandidates: 10,
  },
  migrate: { pageSize: 500 },
  instructions: {
    managedPath: '/etc/claude-code/CLAUDE.md',
    allowImportsFrom: '',
    maxImportDepth: 5,
    maxFileBytes: 4 * 1024 * 1024,
    maxTotalBytes: 32 * 1024 * 1024,
    maxFiles: 1_000,
    maxRuleEntries: 10_000,
    maxPathPatterns: 1_000,
  },
  chat: { writeMaxBytes: 1024 * 1024, inputMaxBytes: 256 * 1024 },
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
  model: {
    provider: 'auto',
    model: '',
    sideModel: '',
    baseUrl: '',
    apiKey: '',
    anthropicApiKey: '',
    anthropicBaseUrl: '',
    openaiApiKey: '',
    openaiBaseUrl: '',
    timeoutMs: 120_000,
    maxRetries: 3,
    retryBaseDelayMs: 1_000,
    retryMaxDelayMs: 60_000,
  },
};

export const SETTING_DEFINITIONS: readonly SettingDefinition[] = [
  { path: 'store.url', env: 'ENGRAM_STORE', description: 'Store location: a SQLite file path, sqlite://<path>, or postgres://user:password@host:port/database?schema=name; default <ENGRAM_HOME>/engram.db' },
  { path: 'store.busyTimeoutMs', env: 'ENGRAM_BUSY_TIMEOUT_MS', description: 'How long a writer waits for a lock held by another process' },
  { path: 'store.poolSize', env: 'ENGRAM_STORE_POOL_SIZE', description: 'Postgres: connections one engram process keeps at most (the URL\'s ?pool= wins)' },
  { path: 'store.statementTimeoutMs', env: 'ENGRAM_STORE_STATEMENT_TIMEOUT_MS', description: 'Postgres: longest one statement may run, 0 for no limit (the URL\'s ?statement_timeout= wins)' },
  { path: 'store.connectTimeoutMs', description: 'Postgres: how long to wait for a connection to the server (the URL\'s ?connect_timeout= in seconds wins)' },
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
  { path: 'recall.fullTextCoverage', description: 'How strongly memories holding more of the query (IDF-weighted share of its words) win: BM25 x share^this; 0 turns it off (0..4)' },
  { path: 'recall.contextNeighbourWeight', description: 'Share of the best full-text relevance of a memory from the same or an adjacent source turn of the same session added to a hit (0..1; 0 off)' },
  { path: 'recall.contextSessionWeight', description: 'Share of the best full-text relevance of another memory from the same source session added to a hit (0..1; 0 off)' },
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
  { path: 'extraction.maxInputTokens', description: 'Conversation text one extraction call reads at most; a longer span is read in several calls, split between turns' },
  { path: 'extraction.messageMaxChars', description: 'Characters of one message an extraction reads (longer: its start and end)' },
  { path: 'extraction.toolResultMaxChars', description: 'Characters of one tool result an extraction reads' },
  { path: 'extraction.knownMaxTokens', description: 'Budget of the already-known memories (recalled this turn) shown to the extractor' },
  { path: 'extraction.timeoutMs', description: 'How long one extraction model call may take' },
  { path: 'extraction.leaseMs', description: 'How long a worker holds an extraction job before another may take it over (a dead worker)' },
  { path: 'extraction.retryBaseDelayMs', description: 'Wait before retrying a failed extraction job; doubles on each attempt' },
  { path: 'extraction.retryMaxDelayMs', description: 'Longest wait before retrying a failed extraction job' },
  { path: 'extraction.pollIntervalMs', description: 'How often an idle extraction worker looks for jobs other processes queued' },
  { path: 'extraction.retainDays', description: 'How long finished extraction jobs and their per-turn records are kept before the worker deletes them (the cursor is kept)' },
  { path: 'explicitMemory.importance', description: 'Importance of a memory the user asked for in so many words ("remember that …", "always …")' },
  { path: 'explicitMemory.maxIntentsPerMessage', description: 'Remember/forget statements taken from one user message at most' },
  { path: 'explicitMemory.maxStatementChars', description: 'Longest sentence read as an explicit statement (longer ones are pasted text, not statements)' },
  { path: 'explicitMemory.maxMessageChars', description: 'Longest user message explicit memory reads; longer is refused' },
  { path: 'explicitMemory.forgetMinCoverage', description: 'Share of the words of "forget that …" a memory must hold to be archived (0..1)' },
  { path: 'explicitMemory.forgetMinLead', description: 'How much closer (word overlap, 0..1) the best match must be than the next before "forget" archives it' },
  { path: 'explicitMemory.forgetCandidates', description: 'Memories of the write scope compared with a "forget" statement' },
  { path: 'session.contextWindow', description: 'Context window in tokens' },
  { path: 'session.outputReserve', description: 'Tokens reserved for the model output' },
  { path: 'session.warnRatios', description: 'Context usage ratios that raise warnings' },
  { path: 'session.toolResultThresholdBytes', description: 'Tool results above this are stored on disk' },
  { path: 'session.toolResultPreviewBytes', description: 'Preview kept in place of a stored tool result' },
  { path: 'session.fileCacheEntries', description: 'File-read dedupe LRU entries' },
  { path: 'session.fileCacheBytes', description: 'File-read dedupe LRU bytes' },
  { path: 'session.microcompactIdleMinutes', description: 'Idle minutes after which old tool results are cleared' },
  { path: 'session.microcompactKeepRecent', description: 'Recent tool results microcompaction keeps' },
  { path: 'session.modelContextWindows', env: 'ENGRAM_MODEL_CONTEXT_WINDOWS', description: 'Context window per model, overriding session.contextWindow: comma-separated <model>=<tokens> (k/m suffixes allowed), a trailing * matches a prefix, e.g. claude-sonnet-4-5=1m,gpt-4o*=128k' },
  { path: 'session.serverContextEditing', description: "true: ask Anthropic models to clear old tool results server-side (context editing, clear_tool_uses) instead of clearing them in the session's messages" },
  { path: 'session.toolResultPageBytes', description: 'Bytes of a stored tool result one read_persisted_output call returns at most' },
  { path: 'session.transcriptFlushMs', description: 'Milliseconds between writes of pending session transcript lines (a crash loses at most this much)' },
  { path: 'session.listingTailBytes', description: 'Bytes read from the end of each session transcript to list sessions' },
  { path: 'session.todoMaxItems', description: 'Items a session todo list holds at most' },
  { path: 'session.todoItemMaxChars', description: 'Characters of one session todo item at most' },
  { path: 'session.planMaxChars', description: 'Characters of the session plan at most (re-injected after each compaction)' },
  { path: 'session.maxOutputTokens', description: 'Output cap of each model request of an agent turn' },
  { path: 'session.maxToolRounds', description: 'Model rounds ending in tool calls one agent turn may make' },
  { path: 'notes.initThresholdTokens', description: 'Context size before session notes start' },
  { path: 'notes.minGrowthTokens', description: 'Token growth required between notes updates' },
  { path: 'notes.minToolCalls', description: 'Tool calls between notes updates' },
  { path: 'notes.sectionMaxTokens', description: 'Session notes per-section cap' },
  { path: 'notes.fileMaxTokens', description: 'Session notes whole-file cap' },
  { path: 'notes.templatePath', env: 'ENGRAM_NOTES_TEMPLATE', description: 'Markdown file replacing the session notes template (one heading per section); empty for the default ten sections' },
  { path: 'notes.promptPath', env: 'ENGRAM_NOTES_PROMPT', description: 'Text file replacing the session notes update prompt ({{notes}}, {{sections}}, {{sectionMaxTokens}}, {{fileMaxTokens}} are filled in); empty for the default' },
  { path: 'notes.updateMaxOutputTokens', description: 'Output cap of one session notes update' },
  { path: 'notes.maxFileBytes', description: 'Largest session notes, notes template or notes prompt file read' },
  { path: 'compaction.bufferTokens', description: 'Compaction fires at effective window minus this' },
  { path: 'compaction.thresholdRatio', description: 'Compaction fires at this share of the window' },
  { path: 'compaction.maxRetries', description: 'Retries of a too-long compaction request' },
  { path: 'compaction.circuitBreakerFailures', description: 'Failed compactions in a row before giving up' },
  { path: 'compaction.summaryMaxOutputTokens', description: 'Output cap of the summarizer request when compaction cannot use the session notes' },
  { path: 'compaction.keepRecentMaxTokens', description: 'Most tokens of recent messages a compaction from session notes keeps verbatim after the summary' },
  { path: 'compaction.reinjectMaxFiles', description: 'Most recently read files re-injected after a compaction' },
  { path: 'compaction.reinjectFileMaxTokens', description: 'Tokens of one re-injected file (longer files are cut; the model can read them again)' },
  { path: 'compaction.reinjectMaxTokens', description: 'Tokens of all re-injected files together' },
  { path: 'compaction.toolResultMaxChars', description: 'Characters of one tool result the summarizer is sent (longer ones keep their head and tail)' },
  { path: 'dream.minHours', description: 'Hours between consolidations' },
  { path: 'dream.scanMinutes', description: 'Minutes between consolidation gate scans' },
  { path: 'dream.minSessions', description: 'New sessions required before consolidating' },
  { path: 'dream.lockStaleMinutes', description: 'Age after which a consolidation lock is taken over' },
  { path: 'memoryTool.viewMaxChars', description: 'Characters one memory-tool view returns; longer files are read in ranges (view_range)' },
  { path: 'memoryTool.maxFileBytes', description: 'Largest memory file (frontmatter and content) the memory tool creates or edits' },
  { path: 'memoryTool.maxPathLength', description: 'Longest path the memory tool accepts' },
  { path: 'memoryTool.maxLines', description: 'Line limit past which the memory tool refuses to view a file' },
  { path: 'sandbox.timeoutMs', description: 'How long a sandboxed shell command may run before it is killed' },
  { path: 'sandbox.outputMaxBytes', description: 'Output of a sandboxed command kept (the rest is cut, and the command stopped)' },
  { path: 'sandbox.readMaxBytes', description: 'Largest slice of a file the sandboxed read tool returns' },
  { path: 'sandbox.listMaxEntries', description: 'Entries the sandboxed directory listing shows' },
  { path: 'sandbox.searchMaxMatches', description: 'Matching lines the sandboxed search returns' },
  { path: 'sandbox.searchMaxFiles', description: 'Files the sandboxed search reads at most' },
  { path: 'sandbox.searchMaxFileBytes', description: 'Files larger than this are skipped by the sandboxed search' },
  { path: 'sandbox.searchTimeoutMs', description: 'Time budget of one sandboxed search, regular expressions included' },
  { path: 'sandbox.maxPathLength', description: 'Longest path the sandboxed tools accept' },
  { path: 'sandbox.maxCommandLength', description: 'Longest command line the sandboxed shell accepts' },
  { path: 'locks.waitMs', description: 'How long a store lock (e.g. dedupe on write) is waited for before LOCK_TIMEOUT' },
  { path: 'locks.leaseMs', description: 'Lease of a held store lock, renewed while held; a holder silent this long is taken over' },
  { path: 'locks.pollMaxMs', description: 'Longest pause between tries while waiting for a store lock held by another process' },
  { path: 'jobs.maxAttempts', description: 'Runs a background job gets before it is marked failed' },
  { path: 'jobs.maxPayloadBytes', description: 'Largest JSON payload one background job may carry' },
  { path: 'migrate.pageSize', description: 'Records engram migrate reads and writes per transaction (a resumed copy redoes at most one page)' },
  { path: 'instructions.managedPath', env: 'ENGRAM_MANAGED_INSTRUCTIONS', description: 'Managed-policy instruction file loaded first (Claude Code\'s /etc/claude-code/CLAUDE.md); empty for none' },
  {
    path: 'instructions.allowImportsFrom',
    description: 'Folders (":"-separated, absolute or ~/) that @imports may reach besides the defaults: the project and ~/.claude for project files, home for user files',
  },
  { path: 'instructions.maxImportDepth', description: '@path imports followed at most this many levels deep (deeper ones are reported, not loaded)' },
  { path: 'instructions.maxFileBytes', description: 'Instruction files larger than this are skipped with a warning' },
  { path: 'instructions.maxTotalBytes', description: 'Bytes of instruction files loaded in all; later files are skipped with a warning' },
  { path: 'instructions.maxFiles', description: 'Instruction files (rules and imports included) loaded at most' },
  { path: 'instructions.maxRuleEntries', description: 'Directory entries looked at under each .claude/rules folder at most' },
  { path: 'chat.writeMaxBytes', description: 'Largest file the chat agent\'s write_file tool writes (after the user confirms)' },
  { path: 'chat.inputMaxBytes', description: 'Longest line (a paste included) engram chat takes as one message' },
  { path: 'instructions.maxPathPatterns', description: 'Glob patterns one rule\'s paths: may expand to (braces included); the rest are dropped with a warning' },
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
  { path: 'model.provider', env: 'ENGRAM_MODEL_PROVIDER', description: 'Language model: auto (Anthropic if its key is set, else OpenAI-compatible if its key or base URL is set, else none), anthropic, openai-compatible or none (offline)' },
  { path: 'model.model', env: 'ENGRAM_MODEL', description: 'Model id for the main work; default claude-sonnet-5-5 (Anthropic) or gpt-5.4 (OpenAI); required for other OpenAI-compatible servers' },
  { path: 'model.sideModel', env: 'ENGRAM_SIDE_MODEL', description: 'Cheap model id for side queries (LLM recall selection) and extraction; default claude-haiku-5-5, gpt-5.4-mini, or model.model on other servers' },
  { path: 'model.baseUrl', env: 'ENGRAM_MODEL_BASE_URL', description: "Base URL of the chosen provider's API; overrides ANTHROPIC_BASE_URL / OPENAI_BASE_URL" },
  { path: 'model.apiKey', env: 'ENGRAM_MODEL_API_KEY', description: "API key of the chosen provider; overrides ANTHROPIC_API_KEY / OPENAI_API_KEY", secret: true },
  { path: 'model.anthropicApiKey', env: 'ANTHROPIC_API_KEY', description: 'Anthropic API key; with provider auto, setting it selects Anthropic', secret: true },
  { path: 'model.anthropicBaseUrl', env: 'ANTHROPIC_BASE_URL', description: 'Anthropic Messages API root; default https://api.anthropic.com' },
  { path: 'model.openaiApiKey', env: 'OPENAI_API_KEY', description: 'OpenAI (or compatible server) API key; with provider auto and no Anthropic key, selects openai-compatible', secret: true },
  { path: 'model.openaiBaseUrl', env: 'OPENAI_BASE_URL', description: 'OpenAI-compatible API root, e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM), http://localhost:1234/v1 (LM Studio)' },
  { path: 'model.timeoutMs', env: 'ENGRAM_MODEL_TIMEOUT_MS', description: 'How long one model call may take, retries and the waits between them included' },
  { path: 'model.maxRetries', env: 'ENGRAM_MODEL_MAX_RETRIES', description: 'Retries after 429, 5xx, overloaded (529) or network errors, with exponential backoff and jitter' },
  { path: 'model.retryBaseDelayMs', description: 'First backoff delay of a model call; doubles on each retry (with jitter)' },
  { path: 'model.retryMaxDelayMs', description: 'Longest wait between model retries; a Retry-After longer than this ends the retries' },
];

/**
 * Bounds beyond "a non-negative number": shares and similarities lie in 0..1, a port fits 16 bits,
 * counts are whole numbers.
 */
export const SETTING_RANGES: Readonly<Record<string, { minimum?: number; maximum?: number; integer?: boolean }>> = {
  'store.busyTimeoutMs': { integer: true },
  'store.poolSize': { minimum: 1, maximum: 1_000, integer: true },
  'store.statementTimeoutMs': { integer: true },
  'store.connectTimeoutMs': { integer: true },
  'memory.maxContentBytes': { minimum: 1, integer: true },
  'memory.maxNameLength': { minimum: 1, integer: true },
  'memory.maxDescriptionLength': { minimum: 1, integer: true },
  'recall.topK': { minimum: 1, maximum: 1_000, integer: true },
  'recall.minScore': { maximum: 1 },
  'recall.recencyBase': { maximum: 1 },
  'recall.recencyFloor': { maximum: 1 },
  'recall.fullTextCoverage': { maximum: 4 },
  'recall.contextNeighbourWeight': { maximum: 1 },
  'recall.contextSessionWeight': { maximum: 1 },
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
  'extraction.agentMaxTurns': { minimum: 1, maximum: 100, integer: true },
  'extraction.maxOutputTokens': { minimum: 1, integer: true },
  'extraction.maxInputTokens': { minimum: 500, integer: true },
  'extraction.messageMaxChars': { minimum: 100, integer: true },
  'extraction.toolResultMaxChars': { integer: true },
  'extraction.knownMaxTokens': { integer: true },
  'extraction.timeoutMs': { minimum: 1, integer: true },
  'extraction.leaseMs': { minimum: 1_000, maximum: 86_400_000, integer: true },
  'extraction.retryBaseDelayMs': { integer: true },
  'extraction.retryMaxDelayMs': { integer: true },
  'extraction.pollIntervalMs': { minimum: 10, integer: true },
  'extraction.retainDays': { minimum: 1, maximum: 3_650 },
  'explicitMemory.importance': { maximum: 1 },
  'explicitMemory.maxIntentsPerMessage': { minimum: 1, maximum: 100, integer: true },
  'explicitMemory.maxStatementChars': { minimum: 20, integer: true },
  'explicitMemory.maxMessageChars': { minimum: 1_000, integer: true },
  'explicitMemory.forgetMinCoverage': { minimum: 0.1, maximum: 1 },
  'explicitMemory.forgetMinLead': { maximum: 1 },
  'explicitMemory.forgetCandidates': { minimum: 1, maximum: 100, integer: true },
  'compaction.thresholdRatio': { maximum: 1 },
  'notes.updateMaxOutputTokens': { minimum: 1, maximum: 1_000_000, integer: true },
  'notes.maxFileBytes': { minimum: 1_024, integer: true },
  'compaction.maxRetries': { maximum: 20, integer: true },
  'compaction.circuitBreakerFailures': { minimum: 1, maximum: 100, integer: true },
  'compaction.summaryMaxOutputTokens': { minimum: 256, integer: true },
  'compaction.keepRecentMaxTokens': { integer: true },
  'compaction.reinjectMaxFiles': { maximum: 50, integer: true },
  'compaction.reinjectFileMaxTokens': { integer: true },
  'compaction.reinjectMaxTokens': { integer: true },
  'compaction.toolResultMaxChars': { minimum: 200, integer: true },
  'session.warnRatios': { maximum: 1 },
  'session.toolResultPageBytes': { minimum: 1, integer: true },
  'session.transcriptFlushMs': { maximum: 60_000, integer: true },
  'session.listingTailBytes': { minimum: 4_096, maximum: 16 * 1024 * 1024, integer: true },
  'session.todoMaxItems': { minimum: 1, maximum: 10_000, integer: true },
  'session.todoItemMaxChars': { minimum: 10, integer: true },
  'session.planMaxChars': { minimum: 100, maximum: 1_000_000, integer: true },
  'session.maxOutputTokens': { minimum: 1, integer: true },
  'session.maxToolRounds': { minimum: 1, maximum: 1_000, integer: true },
  'memoryTool.viewMaxChars': { minimum: 1_000, integer: true },
  'memoryTool.maxFileBytes': { minimum: 1, integer: true },
  'memoryTool.maxPathLength': { minimum: 32, integer: true },
  'memoryTool.maxLines': { minimum: 1, integer: true },
  'sandbox.timeoutMs': { minimum: 1, integer: true },
  'sandbox.outputMaxBytes': { minimum: 1, integer: true },
  'sandbox.readMaxBytes': { minimum: 1, integer: true },
  'sandbox.listMaxEntries': { minimum: 1, integer: true },
  'sandbox.searchMaxMatches': { minimum: 1, integer: true },
  'sandbox.searchMaxFiles': { minimum: 1, integer: true },
  'sandbox.searchMaxFileBytes': { minimum: 1, integer: true },
  'sandbox.searchTimeoutMs': { minimum: 1, integer: true },
  'sandbox.maxPathLength': { minimum: 32, integer: true },
  'sandbox.maxCommandLength': { minimum: 32, integer: true },
  'locks.waitMs': { integer: true },
  'locks.leaseMs': { minimum: 100, integer: true },
  'locks.pollMaxMs': { minimum: 1, integer: true },
  'jobs.maxAttempts': { minimum: 1, maximum: 1_000, integer: true },
  'jobs.maxPayloadBytes': { minimum: 1, integer: true },
  'migrate.pageSize': { minimum: 1, maximum: 10_000, integer: true },
  'instructions.maxImportDepth': { maximum: 20, integer: true },
  'instructions.maxFileBytes': { minimum: 1, integer: true },
  'instructions.maxTotalBytes': { minimum: 1, integer: true },
  'instructions.maxFiles': { minimum: 1, integer: true },
  'instructions.maxRuleEntries': { minimum: 1, integer: true },
  'instructions.maxPathPatterns': { minimum: 1, integer: true },
  'chat.writeMaxBytes': { minimum: 1, integer: true },
  'chat.inputMaxBytes': { minimum: 1, integer: true },
  'server.port': { maximum: 65_535, integer: true },
  'server.maxBodyBytes': { minimum: 1, integer: true },
  'model.timeoutMs': { minimum: 1, maximum: 3_600_000, integer: true },
  'model.maxRetries': { maximum: 20, integer: true },
  'model.retryBaseDelayMs': { maximum: 3_600_000, integer: true },
  'model.retryMaxDelayMs': { maximum: 3_600_000, integer: true },
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
