import { integer, number, type SettingGroups } from './setting-definition.js';

/**
 * Settings of memories and the paths they travel: the limits of one memory, recall and injection,
 * token estimates, the MEMORY.md index, writing (near-duplicates, extraction, explicit "remember"
 * statements), aging and consolidation ("dream").
 */

/** Rows of the settings table (settings.ts lists the groups in `engram config` order). */
export const MEMORY_SETTING_ROWS = {
  memory: {
    maxContentBytes: integer(64 * 1024, 'Largest content one memory may hold', { minimum: 1 }),
    maxNameLength: integer(80, 'Longest memory name (slug)', { minimum: 1 }),
    maxDescriptionLength: integer(300, 'Longest one-line description', { minimum: 1 }),
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
      600_000,
      'How long a worker holds an extraction job before another may take it over (a dead worker)',
      { minimum: 1_000, maximum: 86_400_000 },
    ),
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
} satisfies SettingGroups;
