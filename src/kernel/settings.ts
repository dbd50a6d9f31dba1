import {
  choice,
  flag,
  integer,
  number,
  numbers,
  text,
  type SettingDefinition,
  type SettingGroups,
  type SettingRow,
} from './setting-definition.js';

/**
 * Every setting of engram, each stated once: its default (SPEC.md's numbers), its range or allowed
 * values, the environment variable that sets it and one line saying what it means. The `Settings`
 * type, the frozen `DEFAULT_SETTINGS` and `SETTING_DEFINITIONS` (what `engram config` lists) are
 * derived from the table below; setting-definition.ts says what a row is and holds the builders the
 * rows are written with, setting-checks.ts the checks the config loader applies to each layer
 * (~/.engram/config.json, the project's .engram.json, environment variables, CLI flags).
 */

/** Which embedder computes vectors: none (full-text only, nothing leaves the machine) or an OpenAI-compatible endpoint. */
export const EMBEDDING_PROVIDERS = ['none', 'openai-compatible'] as const;
export type EmbeddingProvider = (typeof EMBEDDING_PROVIDERS)[number];

/**
 * Which language model engram asks: `auto` (Anthropic when its key is set, else an OpenAI-compatible
 * endpoint when its key or base URL is set, else none), one provider by name, or `none` (offline).
 */
export const MODEL_PROVIDERS = ['auto', 'anthropic', 'openai-compatible', 'none', 'claude-code'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/** Model ids used when `model.model` / `model.sideModel` are empty: a capable one and a cheap one for side queries and extraction. */
export const DEFAULT_MODEL_IDS = {
  anthropic: { main: 'claude-sonnet-5-5', side: 'claude-haiku-5-5' },
  'openai-compatible': { main: 'gpt-5.4', side: 'gpt-5.4-mini' },
  // Claude Code's own aliases: the CLI maps them to its current models.
  'claude-code': { main: 'sonnet', side: 'haiku' },
} as const;

/** The table: one row per setting, grouped as `Settings` is (`recall.topK` is the row `topK` of `recall`). */
const SETTINGS_TABLE = {
  store: {
    url: text(
      '',
      'Store location: a SQLite file path, sqlite://<path>, or postgres://user:password@host:port/database?schema=name; default <ENGRAM_HOME>/engram.db',
      { env: 'ENGRAM_STORE' },
    ),
    busyTimeoutMs: integer(5_000, 'How long a writer waits for a lock held by another process', {
      env: 'ENGRAM_BUSY_TIMEOUT_MS',
    }),
    poolSize: integer(10, "Postgres: connections one engram process keeps at most (the URL's ?pool= wins)", {
      minimum: 1,
      maximum: 1_000,
      env: 'ENGRAM_STORE_POOL_SIZE',
    }),
    statementTimeoutMs: integer(
      30_000,
      "Postgres: longest one statement may run, 0 for no limit (the URL's ?statement_timeout= wins)",
      { env: 'ENGRAM_STORE_STATEMENT_TIMEOUT_MS' },
    ),
    connectTimeoutMs: integer(
      10_000,
      "Postgres: how long to wait for a connection to the server (the URL's ?connect_timeout= in seconds wins)",
    ),
  },
  memory: {
    maxContentBytes: integer(64 * 1024, 'Largest content one memory may hold', { minimum: 1 }),
    maxNameLength: integer(80, 'Longest memory name (slug)', { minimum: 1 }),
    maxDescriptionLength: integer(300, 'Longest one-line description', { minimum: 1 }),
  },
  project: {
    id: text('', 'Explicit project id; default from .engram.json, the git remote or the path', {
      env: 'ENGRAM_PROJECT',
    }),
  },
  recall: {
    topK: integer(8, 'Memories recalled per query at most (injection stops earlier when the token budget is full)', {
      minimum: 1,
      maximum: 1_000,
      env: 'ENGRAM_TOP_K',
    }),
    minScore: number(0.1, 'Normalized score (relative to the best match) below which a memory is not recalled', {
      maximum: 1,
      env: 'ENGRAM_MIN_SCORE',
    }),
    recencyBase: number(0.98, 'Recency factor per day since last access', { maximum: 1 }),
    ageNoteDays: number(2, 'Older than this, a recalled memory carries its age'),
    staleDays: number(30, 'Older than this, a memory is marked stale'),
    llmManifestMax: integer(200, 'Manifest entries given to an LLM retriever'),
    llmMaxPicks: integer(5, 'Memories an LLM retriever may pick'),
    fullTextK1: number(1.2, 'BM25 k1 of full-text relevance: how fast repeated words stop adding'),
    fullTextB: number(0.3, 'BM25 b of full-text relevance: how much longer memories are discounted (0..1)'),
    fullTextCoverage: number(
      0.5,
      'How strongly memories holding more of the query (IDF-weighted share of its words) win: BM25 x share^this; 0 turns it off (0..4)',
      { maximum: 4 },
    ),
    contextNeighbourWeight: number(
      0.3,
      'Share of the best full-text relevance of a memory from the same or an adjacent source turn of the same session added to a hit (0..1; 0 off)',
      { maximum: 1 },
    ),
    contextSessionWeight: number(
      0.1,
      'Share of the best full-text relevance of another memory from the same source session added to a hit (0..1; 0 off)',
      { maximum: 1 },
    ),
    recencyFloor: number(
      0.5,
      'Least recency weight age can leave a memory (0..1): weight = floor + (1 - floor) x recencyBase^days',
      { maximum: 1 },
    ),
    llmTimeoutMs: integer(10_000, 'How long the LLM retriever may take before recall falls back to ranking alone', {
      minimum: 1,
      maximum: 600_000,
    }),
    timeCapMs: integer(1_000, 'How long the memory turn may recall before a request goes on without memory', {
      minimum: 1,
      maximum: 600_000,
      env: 'ENGRAM_RECALL_TIME_CAP_MS',
    }),
    llmMaxOutputTokens: number(256, 'Output token cap of the LLM retriever call'),
    llmQueryMaxTokens: number(2_000, 'Longest user message shown to the LLM retriever (longer is cut)'),
    dateWeight: number(
      2,
      'Time-aware recall: relevance x (1 + this) for a memory written within a date the question names ("in July 2023", "on 13 October", "yesterday"); 0 off (0..10)',
      { maximum: 10 },
    ),
    dateAfterDays: number(
      7,
      'Days after a date named in a question during which a memory still counts as written in it (facts are told after the event)',
      { maximum: 366 },
    ),
    timeMentionWeight: number(
      1,
      'Time-aware recall: relevance x (1 + this) for a memory that says when (a date, weekday, "last week"), when the question asks when; 0 off (0..10)',
      { maximum: 10 },
    ),
    secondHopWeight: number(
      0.2,
      'Second hop: words the best hits share that the question lacks are searched again, each such hit adding up to this share of the best relevance (0..1; 0 off)',
      { maximum: 1 },
    ),
    secondHopTerms: integer(2, 'Words the second hop searches', { minimum: 1, maximum: 16 }),
    secondHopFrom: integer(5, 'Best first hits the second hop takes its words from', { minimum: 2, maximum: 50 }),
    duplicateSimilarity: number(
      0.8,
      'Diversity: a hit whose words overlap a better hit by at least this share (Jaccard) has its relevance x (1 - overlap) (0..1; 1 off)',
      { maximum: 1 },
    ),
    contextSittingWeight: number(
      0.4,
      'For memories whose source names no session: share of the best full-text relevance of another written within contextSittingMinutes of it added to a hit (0..1; 0 off)',
      { maximum: 1 },
    ),
    contextSittingMinutes: number(
      60,
      'How close in creation time two memories without a source session must be to count as written in one sitting (0..1440)',
      { maximum: 1_440 },
    ),
  },
  injection: {
    maxTokens: integer(3_000, 'Token budget of the <memory_context> block', { minimum: 1 }),
  },
  tokens: {
    bytesPerTextToken: number(4, 'Bytes per token when estimating the size of text'),
    bytesPerJsonToken: number(2, 'Bytes per token when estimating the size of JSON (denser than text)'),
  },
  index: {
    maxLines: integer(200, 'MEMORY.md line cap', { minimum: 1 }),
    maxBytes: integer(25_000, 'MEMORY.md byte cap', { minimum: 1 }),
    entryMaxChars: integer(150, 'Longest MEMORY.md entry line', { minimum: 1 }),
  },
  dedupe: {
    cosineThreshold: number(0.85, 'Embedding similarity at which a new memory updates an old one', { maximum: 1 }),
    lexicalThreshold: number(0.8, 'Lexical similarity at which a new memory updates an old one (no embedder)', {
      maximum: 1,
    }),
    candidateLimit: number(
      20,
      'Memories of the same scope compared with each new one (closest by full-text or vector search)',
    ),
  },
  aging: {
    archiveAfterDays: number(90, 'Days without access after which unimportant memories are archived'),
    archiveBelowImportance: number(0.5, 'Importance below which aging archives', { maximum: 1 }),
    intervalHours: number(24, 'Hours between aging runs inside the service (engram serve); 0 turns them off'),
  },
  extraction: {
    maxMemoriesPerTurn: integer(5, 'Memories one extraction may write'),
    maxOutputTokens: integer(2_000, 'Output token cap of one extraction call', { minimum: 1 }),
    agentMaxTurns: integer(5, 'Turns of the agent-mode extraction helper', { minimum: 1, maximum: 100 }),
    manifestMax: number(200, 'Existing memories shown to the extraction helper'),
    maxInputTokens: integer(
      24_000,
      'Conversation text one extraction call reads at most; a longer span is read in several calls, split between turns',
      { minimum: 500 },
    ),
    messageMaxChars: integer(16_000, 'Characters of one message an extraction reads (longer: its start and end)', {
      minimum: 100,
    }),
    toolResultMaxChars: integer(1_000, 'Characters of one tool result an extraction reads'),
    knownMaxTokens: integer(1_500, 'Budget of the already-known memories (recalled this turn) shown to the extractor'),
    timeoutMs: integer(60_000, 'How long one extraction model call may take', { minimum: 1 }),
    leaseMs: integer(
      60_000,
      "How long an extraction job's lease lasts without its worker's heartbeat (renewed every third of it while the job runs): a worker that stopped loses the job after this, one that died on this host at once",
      { minimum: 1_000, maximum: 86_400_000 },
    ),
    runTimeoutMs: integer(600_000, 'The longest one extraction job may run before it is stopped and retried', {
      minimum: 1_000,
      maximum: 86_400_000,
    }),
    retryBaseDelayMs: integer(5_000, 'Wait before retrying a failed extraction job; doubles on each attempt'),
    retryMaxDelayMs: integer(600_000, 'Longest wait before retrying a failed extraction job'),
    pollIntervalMs: integer(1_000, 'How often an idle extraction worker looks for jobs other processes queued', {
      minimum: 10,
    }),
    retainDays: number(
      7,
      'How long finished extraction jobs and their per-turn records are kept before the worker deletes them (the cursor is kept)',
      { minimum: 1, maximum: 3_650 },
    ),
  },
  explicitMemory: {
    importance: number(
      0.8,
      'Importance of a memory the user asked for in so many words ("remember that …", "always …")',
      { maximum: 1 },
    ),
    maxIntentsPerMessage: integer(5, 'Remember/forget statements taken from one user message at most', {
      minimum: 1,
      maximum: 100,
    }),
    maxStatementChars: integer(
      1_000,
      'Longest sentence read as an explicit statement (longer ones are pasted text, not statements)',
      { minimum: 20 },
    ),
    maxMessageChars: integer(200_000, 'Longest user message explicit memory reads; longer is refused', {
      minimum: 1_000,
    }),
    forgetMinCoverage: number(0.75, 'Share of the words of "forget that …" a memory must hold to be archived (0..1)', {
      minimum: 0.1,
      maximum: 1,
    }),
    forgetMinLead: number(
      0.2,
      'How much closer (word overlap, 0..1) the best match must be than the next before "forget" archives it',
      { maximum: 1 },
    ),
    forgetCandidates: integer(10, 'Memories of the write scope compared with a "forget" statement', {
      minimum: 1,
      maximum: 100,
    }),
  },
  session: {
    contextWindow: number(200_000, 'Context window in tokens'),
    outputReserve: number(20_000, 'Tokens reserved for the model output'),
    warnRatios: numbers([0.7, 0.85, 0.92], 'Context usage ratios that raise warnings', { maximum: 1 }),
    toolResultThresholdBytes: number(50_000, 'Tool results above this are stored on disk'),
    toolResultPreviewBytes: number(2_000, 'Preview kept in place of a stored tool result'),
    fileCacheEntries: number(100, 'File-read dedupe LRU entries'),
    fileCacheBytes: number(25 * 1024 * 1024, 'File-read dedupe LRU bytes'),
    microcompactIdleMinutes: number(60, 'Idle minutes after which old tool results are cleared'),
    microcompactKeepRecent: number(5, 'Recent tool results microcompaction keeps'),
    modelContextWindows: text(
      '',
      'Context window per model, overriding session.contextWindow: comma-separated <model>=<tokens> (k/m suffixes allowed), a trailing * matches a prefix, e.g. claude-sonnet-4-5=1m,gpt-4o*=128k',
      { env: 'ENGRAM_MODEL_CONTEXT_WINDOWS' },
    ),
    serverContextEditing: flag(
      false,
      "true: ask Anthropic models to clear old tool results server-side (context editing, clear_tool_uses) instead of clearing them in the session's messages",
    ),
    toolResultPageBytes: integer(
      20_000,
      'Bytes of a stored tool result one read_persisted_output call returns at most',
      { minimum: 1 },
    ),
    transcriptFlushMs: integer(
      100,
      'Milliseconds between writes of pending session transcript lines (a crash loses at most this much)',
      { maximum: 60_000 },
    ),
    listingTailBytes: integer(64 * 1024, 'Bytes read from the end of each session transcript to list sessions', {
      minimum: 4_096,
      maximum: 16 * 1024 * 1024,
    }),
    todoMaxItems: integer(200, 'Items a session todo list holds at most', { minimum: 1, maximum: 10_000 }),
    todoItemMaxChars: integer(2_000, 'Characters of one session todo item at most', { minimum: 10 }),
    planMaxChars: integer(20_000, 'Characters of the session plan at most (re-injected after each compaction)', {
      minimum: 100,
      maximum: 1_000_000,
    }),
    maxOutputTokens: integer(8_192, 'Output cap of each model request of an agent turn', { minimum: 1 }),
    maxToolRounds: integer(25, 'Model rounds ending in tool calls one agent turn may make', {
      minimum: 1,
      maximum: 1_000,
    }),
  },
  notes: {
    initThresholdTokens: number(40_000, 'Context size before session notes start'),
    minGrowthTokens: number(5_000, 'Token growth required between notes updates'),
    minToolCalls: number(3, 'Tool calls between notes updates'),
    sectionMaxTokens: number(2_000, 'Session notes per-section cap'),
    fileMaxTokens: number(12_000, 'Session notes whole-file cap'),
    templatePath: text(
      '',
      'Markdown file replacing the session notes template (one heading per section); empty for the default ten sections',
      { env: 'ENGRAM_NOTES_TEMPLATE' },
    ),
    promptPath: text(
      '',
      'Text file replacing the session notes update prompt ({{notes}}, {{sections}}, {{sectionMaxTokens}}, {{fileMaxTokens}} are filled in); empty for the default',
      { env: 'ENGRAM_NOTES_PROMPT' },
    ),
    updateMaxOutputTokens: integer(8_000, 'Output cap of one session notes update', { minimum: 1, maximum: 1_000_000 }),
    maxFileBytes: integer(1024 * 1024, 'Largest session notes, notes template or notes prompt file read', {
      minimum: 1_024,
    }),
  },
  compaction: {
    bufferTokens: number(13_000, 'Compaction fires at effective window minus this'),
    thresholdRatio: number(0.92, 'Compaction fires at this share of the window', { maximum: 1 }),
    maxRetries: integer(3, 'Retries of a too-long compaction request', { maximum: 20 }),
    circuitBreakerFailures: integer(3, 'Failed compactions in a row before giving up', { minimum: 1, maximum: 100 }),
    summaryMaxOutputTokens: integer(
      20_000,
      'Output cap of the summarizer request when compaction cannot use the session notes',
      { minimum: 256 },
    ),
    keepRecentMaxTokens: integer(
      40_000,
      'Most tokens of recent messages a compaction from session notes keeps verbatim after the summary',
    ),
    reinjectMaxFiles: integer(5, 'Most recently read files re-injected after a compaction', { maximum: 50 }),
    reinjectFileMaxTokens: integer(
      5_000,
      'Tokens of one re-injected file (longer files are cut; the model can read them again)',
    ),
    reinjectMaxTokens: integer(20_000, 'Tokens of all re-injected files together'),
    toolResultMaxChars: integer(
      10_000,
      'Characters of one tool result the summarizer is sent (longer ones keep their head and tail)',
      { minimum: 200 },
    ),
  },
  dream: {
    minHours: number(24, 'Hours between consolidations'),
    scanMinutes: number(10, 'Minutes between consolidation gate scans'),
    minSessions: number(5, 'New sessions required before consolidating'),
    lockStaleMinutes: number(60, 'Age after which a consolidation lock is taken over'),
    checkMinutes: number(
      10,
      'Minutes between the service checking the consolidation gates (engram serve); 0 turns automatic runs off',
    ),
    modelMaxTurns: integer(3, 'Turns of the consolidation helper when a model is configured', {
      minimum: 1,
      maximum: 20,
    }),
    manifestMax: integer(200, 'Memories of a scope shown to the consolidation helper', { minimum: 1 }),
    condenseAboveChars: integer(1_500, 'Memories longer than this may be condensed by the consolidation helper', {
      minimum: 100,
    }),
    maxOutputTokens: integer(4_000, 'Output token cap of one consolidation helper call', { minimum: 1 }),
    timeoutMs: integer(120_000, 'How long one consolidation helper call may take', { minimum: 1 }),
    gatherMaxTokens: integer(
      6_000,
      'Tokens of recent session notes and transcript lines shown to the consolidation helper (0: none)',
      { minimum: 0 },
    ),
    gatherMaxSessions: integer(20, 'Recent sessions the consolidation helper is shown material from', {
      minimum: 0,
      maximum: 200,
    }),
  },
  memoryTool: {
    viewMaxChars: integer(
      16_000,
      'Characters one memory-tool view returns; longer files are read in ranges (view_range)',
      { minimum: 1_000 },
    ),
    maxFileBytes: integer(
      128 * 1024,
      'Largest memory file (frontmatter and content) the memory tool creates or edits',
      { minimum: 1 },
    ),
    maxPathLength: integer(512, 'Longest path the memory tool accepts', { minimum: 32 }),
    maxLines: integer(999_999, 'Line limit past which the memory tool refuses to view a file', { minimum: 1 }),
  },
  sandbox: {
    timeoutMs: integer(10_000, 'How long a sandboxed shell command may run before it is killed', { minimum: 1 }),
    outputMaxBytes: integer(
      64 * 1024,
      'Output of a sandboxed command kept (the rest is cut, and the command stopped)',
      { minimum: 1 },
    ),
    readMaxBytes: integer(256 * 1024, 'Largest slice of a file the sandboxed read tool returns', { minimum: 1 }),
    listMaxEntries: integer(500, 'Entries the sandboxed directory listing shows', { minimum: 1 }),
    searchMaxMatches: integer(200, 'Matching lines the sandboxed search returns', { minimum: 1 }),
    searchMaxFiles: integer(5_000, 'Files the sandboxed search reads at most', { minimum: 1 }),
    searchMaxFileBytes: integer(1024 * 1024, 'Files larger than this are skipped by the sandboxed search', {
      minimum: 1,
    }),
    searchTimeoutMs: integer(5_000, 'Time budget of one sandboxed search, regular expressions included', {
      minimum: 1,
    }),
    maxPathLength: integer(1_024, 'Longest path the sandboxed tools accept', { minimum: 32 }),
    maxCommandLength: integer(4_096, 'Longest command line the sandboxed shell accepts', { minimum: 32 }),
  },
  locks: {
    waitMs: integer(10_000, 'How long a store lock (e.g. dedupe on write) is waited for before LOCK_TIMEOUT'),
    leaseMs: integer(
      15_000,
      'Lease of a held store lock, renewed while held; a holder silent this long is taken over',
      { minimum: 100 },
    ),
    pollMaxMs: integer(100, 'Longest pause between tries while waiting for a store lock held by another process', {
      minimum: 1,
    }),
  },
  jobs: {
    maxAttempts: integer(5, 'Runs a background job gets before it is marked failed', { minimum: 1, maximum: 1_000 }),
    maxPayloadBytes: integer(1024 * 1024, 'Largest JSON payload one background job may carry', { minimum: 1 }),
  },
  migrate: {
    pageSize: integer(
      500,
      'Records engram migrate reads and writes per transaction (a resumed copy redoes at most one page)',
      { minimum: 1, maximum: 10_000 },
    ),
  },
  instructions: {
    managedPath: text(
      '/etc/claude-code/CLAUDE.md',
      "Managed-policy instruction file loaded first (Claude Code's /etc/claude-code/CLAUDE.md); empty for none",
      { env: 'ENGRAM_MANAGED_INSTRUCTIONS' },
    ),
    allowImportsFrom: text(
      '',
      'Folders (":"-separated, absolute or ~/) that @imports may reach besides the defaults: the project and ~/.claude for project files, home for user files',
    ),
    maxImportDepth: integer(
      5,
      '@path imports followed at most this many levels deep (deeper ones are reported, not loaded)',
      { maximum: 20 },
    ),
    maxFileBytes: integer(4 * 1024 * 1024, 'Instruction files larger than this are skipped with a warning', {
      minimum: 1,
    }),
    maxTotalBytes: integer(
      32 * 1024 * 1024,
      'Bytes of instruction files loaded in all; later files are skipped with a warning',
      { minimum: 1 },
    ),
    maxFiles: integer(1_000, 'Instruction files (rules and imports included) loaded at most', { minimum: 1 }),
    maxRuleEntries: integer(10_000, 'Directory entries looked at under each .claude/rules folder at most', {
      minimum: 1,
    }),
    maxPathPatterns: integer(
      1_000,
      "Glob patterns one rule's paths: may expand to (braces included); the rest are dropped with a warning",
      { minimum: 1 },
    ),
  },
  chat: {
    writeMaxBytes: integer(
      1024 * 1024,
      "Largest file the chat agent's write_file tool writes (after the user confirms)",
      { minimum: 1 },
    ),
    inputMaxBytes: integer(256 * 1024, 'Longest line (a paste included) engram chat takes as one message', {
      minimum: 1,
    }),
  },
  server: {
    host: text('127.0.0.1', 'Address the service binds; non-loopback requires a token', { env: 'ENGRAM_HOST' }),
    port: integer(7437, 'Port the service listens on', { maximum: 65_535, env: 'ENGRAM_PORT' }),
    token: text('', 'Bearer token required on every request when set', { env: 'ENGRAM_TOKEN', secret: true }),
    maxBodyBytes: integer(1024 * 1024, 'Largest request body the service accepts', { minimum: 1 }),
    stopGraceMs: integer(
      5_000,
      "How long a long-running engram process (serve, mcp, the hooks' worker, chat) may finish its work after SIGTERM or SIGINT before it exits anyway; a second signal exits at once",
      { minimum: 1, maximum: 600_000, env: 'ENGRAM_STOP_GRACE_MS' },
    ),
  },
  embedding: {
    provider: choice(
      'none',
      'Embedder: none (full-text recall only) or openai-compatible (OpenAI, Ollama, vLLM, LM Studio, TEI)',
      { values: EMBEDDING_PROVIDERS, env: 'ENGRAM_EMBEDDING_PROVIDER' },
    ),
    baseUrl: text('', 'Base URL of the embeddings API, e.g. https://api.openai.com/v1 or http://localhost:11434/v1', {
      env: 'ENGRAM_EMBEDDING_BASE_URL',
    }),
    model: text('', 'Embedding model id, e.g. text-embedding-3-small or nomic-embed-text', {
      env: 'ENGRAM_EMBEDDING_MODEL',
    }),
    apiKey: text('', 'Bearer token for the embeddings API (none for local servers)', {
      env: 'ENGRAM_EMBEDDING_API_KEY',
      secret: true,
    }),
    dimensions: integer(0, 'Expected vector length; 0 learns it from the first answer', {
      maximum: 65_536,
      env: 'ENGRAM_EMBEDDING_DIMENSIONS',
    }),
    batchSize: integer(64, 'Texts sent per embeddings request', {
      minimum: 1,
      maximum: 2_048,
      env: 'ENGRAM_EMBEDDING_BATCH_SIZE',
    }),
    timeoutMs: integer(30_000, 'How long one embeddings request may take', {
      minimum: 1,
      maximum: 3_600_000,
      env: 'ENGRAM_EMBEDDING_TIMEOUT_MS',
    }),
    queryTimeoutMs: number(5_000, 'How long recall waits for the query vector before ranking by full-text alone'),
    maxRetries: integer(3, 'Retries after 429, 5xx or network errors, with exponential backoff', {
      maximum: 20,
      env: 'ENGRAM_EMBEDDING_MAX_RETRIES',
    }),
    retryBaseDelayMs: integer(500, 'First backoff delay; doubles on each retry', { maximum: 3_600_000 }),
    retryMaxDelayMs: integer(30_000, 'Longest wait between retries, Retry-After included', { maximum: 3_600_000 }),
    fusionK: number(60, 'k of reciprocal rank fusion of full-text and vector rankings'),
  },
  model: {
    provider: choice(
      'auto',
      'Language model: auto (Anthropic if its key is set, else OpenAI-compatible if its key or base URL is set, else claude-code inside Claude Code, else none), anthropic, openai-compatible, claude-code (the local claude CLI, your Claude Code login) or none (offline)',
      { values: MODEL_PROVIDERS, env: 'ENGRAM_MODEL_PROVIDER' },
    ),
    model: text(
      '',
      'Model id for the main work; default claude-sonnet-5-5 (Anthropic) or gpt-5.4 (OpenAI); required for other OpenAI-compatible servers',
      { env: 'ENGRAM_MODEL' },
    ),
    sideModel: text(
      '',
      'Cheap model id for side queries (LLM recall selection) and extraction; default claude-haiku-5-5, gpt-5.4-mini, or model.model on other servers',
      { env: 'ENGRAM_SIDE_MODEL' },
    ),
    baseUrl: text('', "Base URL of the chosen provider's API; overrides ANTHROPIC_BASE_URL / OPENAI_BASE_URL", {
      env: 'ENGRAM_MODEL_BASE_URL',
    }),
    apiKey: text('', 'API key of the chosen provider; overrides ANTHROPIC_API_KEY / OPENAI_API_KEY', {
      env: 'ENGRAM_MODEL_API_KEY',
      secret: true,
    }),
    anthropicApiKey: text('', 'Anthropic API key; with provider auto, setting it selects Anthropic', {
      env: 'ANTHROPIC_API_KEY',
      secret: true,
    }),
    anthropicBaseUrl: text('', 'Anthropic Messages API root; default https://api.anthropic.com', {
      env: 'ANTHROPIC_BASE_URL',
    }),
    openaiApiKey: text(
      '',
      'OpenAI (or compatible server) API key; with provider auto and no Anthropic key, selects openai-compatible',
      { env: 'OPENAI_API_KEY', secret: true },
    ),
    openaiBaseUrl: text(
      '',
      'OpenAI-compatible API root, e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM), http://localhost:1234/v1 (LM Studio)',
      { env: 'OPENAI_BASE_URL' },
    ),
    timeoutMs: integer(120_000, 'How long one model call may take, retries and the waits between them included', {
      minimum: 1,
      maximum: 3_600_000,
      env: 'ENGRAM_MODEL_TIMEOUT_MS',
    }),
    maxRetries: integer(
      3,
      'Retries after 429, 5xx, overloaded (529) or network errors, with exponential backoff and jitter',
      { maximum: 20, env: 'ENGRAM_MODEL_MAX_RETRIES' },
    ),
    retryBaseDelayMs: integer(1_000, 'First backoff delay of a model call; doubles on each retry (with jitter)', {
      maximum: 3_600_000,
    }),
    retryMaxDelayMs: integer(
      60_000,
      'Longest wait between model retries; a Retry-After longer than this ends the retries',
      { maximum: 3_600_000 },
    ),
    claudeCodeCommand: text(
      'claude',
      'The Claude Code CLI the claude-code provider runs headless (a path, or a name looked up on PATH)',
      { env: 'ENGRAM_CLAUDE_CODE_COMMAND' },
    ),
    insideClaudeCode: text(
      '',
      'Set by Claude Code in the processes it starts (CLAUDECODE=1): with provider auto and no model key or base URL, selects claude-code',
      { env: 'CLAUDECODE' },
    ),
  },
  wrappers: {
    recallTimeCapMs: integer(
      300,
      'How long withMemory and the AI SDK middleware may recall before a model call goes on without memory',
      { minimum: 1, maximum: 600_000, env: 'ENGRAM_WRAPPER_RECALL_TIME_CAP_MS' },
    ),
  },
  sync: {
    remote: text(
      '',
      'Personal git remote that global, user: and (see projectsToPersonal) project memories sync through; "engram sync --remote <url>" sets it. A project\'s .engram.json cannot.',
      { env: 'ENGRAM_SYNC_REMOTE' },
    ),
    projectRemote: text(
      '',
      "The git remote this project's team keeps its project memories in: put it in the project's .engram.json, committed with the code",
      { env: 'ENGRAM_SYNC_PROJECT_REMOTE' },
    ),
    branch: text('engram', 'Branch of a sync remote that holds the memories', { env: 'ENGRAM_SYNC_BRANCH' }),
    projectsToPersonal: flag(true, 'Projects without a team remote of their own sync through the personal remote', {
      env: 'ENGRAM_SYNC_PROJECTS_TO_PERSONAL',
    }),
    intervalMinutes: number(10, 'engram serve syncs this often in the background (0: only after writes)', {
      maximum: 10_080,
      env: 'ENGRAM_SYNC_INTERVAL_MINUTES',
    }),
    debounceSeconds: integer(20, 'After a write, background sync waits this long without another before it runs', {
      maximum: 86_400,
      env: 'ENGRAM_SYNC_DEBOUNCE_SECONDS',
    }),
    retryMinSeconds: integer(
      30,
      'First wait after background sync could not reach a remote; doubles after each failure',
      {
        minimum: 1,
        maximum: 86_400,
      },
    ),
    retryMaxMinutes: integer(60, 'Longest wait between background attempts while a remote stays unreachable', {
      minimum: 1,
      maximum: 10_080,
    }),
    timeoutMs: integer(120_000, 'Longest one git command of a sync may run (fetch and push included)', {
      minimum: 1_000,
      maximum: 3_600_000,
      env: 'ENGRAM_SYNC_TIMEOUT_MS',
    }),
    maxFileBytes: integer(
      1024 * 1024,
      'Largest memory file read from a remote; larger ones are left there and reported',
      {
        minimum: 1_024,
        maximum: 64 * 1024 * 1024,
      },
    ),
    machineName: text('', "This machine's name in the remote's commits; default the host name", {
      env: 'ENGRAM_SYNC_MACHINE',
    }),
  },
  hooks: {
    deadlineMs: integer(
      1_000,
      'How long a Claude Code hook may work before it answers with no context and logs why (the prompt never waits longer)',
      { minimum: 50, maximum: 60_000, env: 'ENGRAM_HOOK_DEADLINE_MS' },
    ),
    recall: flag(true, 'Claude Code hooks inject memory: the index at session start, recalled memories per prompt', {
      env: 'ENGRAM_HOOK_RECALL',
    }),
    extract: flag(true, 'Claude Code hooks queue extraction of the session at Stop, PreCompact and SessionEnd', {
      env: 'ENGRAM_HOOK_EXTRACT',
    }),
    worker: flag(
      true,
      'A queueing Claude Code hook starts a detached worker for the model work; false leaves the queue to engram serve',
      { env: 'ENGRAM_HOOK_WORKER' },
    ),
    sessionRootDays: integer(
      30,
      "Days a hooked session's project folder (fixed by its first hook, used by every later one whatever its cwd) is kept unused",
      { minimum: 1, maximum: 3_650 },
    ),
    transcriptReadTries: integer(
      8,
      "Drains that try to read a hooked session's transcript when reading fails in a way that may pass (an I/O error, too many open files), waiting 5 s doubling in between, before the event is given up (logged); a transcript that can never be read (gone, a folder, no permission) is given up at once",
      { minimum: 1, maximum: 100, env: 'ENGRAM_HOOK_TRANSCRIPT_READ_TRIES' },
    ),
    workerLingerMs: integer(
      3_600_000,
      "How long the hooks' worker stays for what waits to be retried (an event the store could not take, a failed extraction); what still waits then is left to the next hook, engram serve or engram queue run",
      { minimum: 0, maximum: 86_400_000, env: 'ENGRAM_HOOK_WORKER_LINGER_MS' },
    ),
    server: flag(
      true,
      'A prompt or session-start hook that no hook server answered starts one (engram.mjs hook serve: resident, on a unix socket in <ENGRAM_HOME>/run/, so later hooks start no Node); false: every hook runs in its own process',
      { env: 'ENGRAM_HOOK_SERVER' },
    ),
    serverIdleMs: integer(
      900_000,
      'How long the hook server stays with no hook asking before it exits (the next hook runs in its own process and starts it again)',
      { minimum: 200, maximum: 86_400_000, env: 'ENGRAM_HOOK_SERVER_IDLE_MS' },
    ),
    workerNice: integer(
      19,
      "Niceness of the hooks' detached worker (0 normal, 19 lowest): its model work and module loading never take the CPU from the hooks Claude Code is waiting for",
      { minimum: 0, maximum: 19 },
    ),
  },
} satisfies SettingGroups;

type SettingsTable = typeof SETTINGS_TABLE;

/** Every setting's value, grouped by subject; derived from the table, so a setting is added in one place. */
export type Settings = {
  [Group in keyof SettingsTable]: {
    [Key in keyof SettingsTable[Group]]: SettingsTable[Group][Key] extends { readonly default: infer Value }
      ? Value
      : never;
  };
};

/** A setting's dotted path, e.g. `'recall.topK'`. */
export type SettingPath = {
  [Group in keyof Settings & string]: `${Group}.${keyof Settings[Group] & string}`;
}[keyof Settings & string];

/** The type of the setting at `Path`. */
export type SettingValue<Path extends SettingPath> = Path extends `${infer Group extends keyof Settings}.${infer Key}`
  ? Key extends keyof Settings[Group]
    ? Settings[Group][Key]
    : never
  : never;

/** Every setting, in table order (the order `engram config` lists them in). */
export const SETTING_DEFINITIONS: readonly SettingDefinition[] = Object.freeze(
  Object.entries(SETTINGS_TABLE).flatMap(([group, rows]) =>
    Object.entries(rows as Record<string, SettingRow<SettingDefinition>>).map(
      ([key, row]) => Object.freeze({ path: `${group}.${key}`, ...row }) as SettingDefinition,
    ),
  ),
);

/** Every default, frozen: `DEFAULT_SETTINGS.recall.topK` is 8. */
export const DEFAULT_SETTINGS: { readonly [Group in keyof Settings]: Readonly<Settings[Group]> } = Object.freeze(
  Object.fromEntries(
    Object.entries(SETTINGS_TABLE).map(([group, rows]) => [
      group,
      Object.freeze(
        Object.fromEntries(
          Object.entries(rows as Record<string, SettingRow<SettingDefinition>>).map(([key, row]) => [key, row.default]),
        ),
      ),
    ]),
  ),
) as unknown as Settings;

const definitionsByPath = new Map(SETTING_DEFINITIONS.map((definition) => [definition.path, definition]));

/** The definition of the setting at `path`; undefined when no setting has that path. */
export function findSettingDefinition(path: string): SettingDefinition | undefined {
  return definitionsByPath.get(path);
}

/** Reads a setting by dotted path. */
export function getSetting(settings: Settings, path: string): unknown {
  let node: unknown = settings;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
