import { choice, integer, number, text, type SettingGroups } from './setting-definition.js';

/** Which embedder computes vectors: none (full-text only, nothing leaves the machine) or an OpenAI-compatible endpoint. */
export const EMBEDDING_PROVIDERS = ['none', 'openai-compatible'] as const;
export type EmbeddingProvider = (typeof EMBEDDING_PROVIDERS)[number];
export const FUSION_METHODS = ['weighted', 'reciprocal-rank'] as const;
export type FusionMethod = (typeof FUSION_METHODS)[number];

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

/** The settings of the models engram asks: the embedder, the language model (main and side), the wrappers. Rows of settings.ts's table, kept in its order. */
export const MODEL_SETTING_ROWS = {
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
    fusion: choice(
      'weighted',
      'How recall fuses full-text and vector rankings: weighted (full text × (1 − fusionWeight) + vector similarity × fusionWeight) or reciprocal-rank (Σ 1/(fusionK + rank))',
      { values: FUSION_METHODS },
    ),
    fusionWeight: number(
      0.15,
      "Weighted fusion: the vector similarity's share of relevance, 0..0.5 (0: full text alone, the question is not embedded; at most half, so full text's matches keep their standing; raise it for a strong embedder, measured with engram eval)",
      { maximum: 0.5 },
    ),
    fusionK: number(60, 'k of reciprocal rank fusion (embedding.fusion reciprocal-rank)'),
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
} satisfies SettingGroups;
