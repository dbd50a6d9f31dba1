import { integer, number, text, type SettingGroups } from './setting-definition.js';

/** The settings of the store and of what it holds and hands back: where the store is, memory limits, project identity, recall and ranking, injection, the index, dedupe and aging. Rows of settings.ts's table, kept in its order. */
export const MEMORY_SETTING_ROWS = {
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
    topK: integer(11, 'Memories recalled per query at most (injection stops earlier when the token budget is full)', {
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
    contextSittingStrength: number(
      1,
      'How the sitting share follows the lender: it lends contextSittingWeight x its relevance x (its relevance / the best hit)^this (0..2; 0 a flat share)',
      { maximum: 2 },
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
} satisfies SettingGroups;
