import { flag, integer, number, numbers, text, type SettingGroups } from './setting-definition.js';

/** The settings of what a session turns into memory: extraction, explicit memories, the session and its notes, compaction, the dream, the memory tool. Rows of settings.ts's table, kept in its order. */
export const SESSION_SETTING_ROWS = {
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
} satisfies SettingGroups;
