/**
 * engram's warnings: what a result carries when it did less than asked and went on (a backend
 * without a capability, a model or embedder that failed, text left out of a write). Results hold the
 * codes (a script or the viewer decides what to do); `describeWarning` is the one place that words
 * them for people, so the CLI, the service, the MCP server and `onWarning` say the same thing.
 */

/** Every warning code, by where it arises. The values are the strings results have always carried. */
export const WARNING_CODES = [
  // Recall and dedupe without (working) vectors.
  'vector-search-unavailable',
  'vectors-missing',
  'vector-space-differs',
  'embedding-failed',
  'vectors-not-stored',
  // Recall's bookkeeping and the LLM retriever.
  'hits-not-recorded',
  'llm-selection-failed',
  'llm-selection-timeout',
  'llm-selection-malformed-output',
  'llm-selection-unknown-handles',
  'llm-selection-too-many-picks',
  // The memory turn, failing open.
  'recall-failed',
  'recall-aborted',
  'recall-timed-out',
  // Writes.
  'write-lock-unavailable',
  'secrets-redacted',
  'private-content-removed',
  // Extraction.
  'extraction-queue-unavailable',
] as const;

export type WarningCode = (typeof WARNING_CODES)[number];

/** What a warning may say beyond its code; every field optional, none ever holds a secret. */
export interface WarningDetails {
  /** What it is about, as the start of a sentence: "The memory", "Memory m_…", "The import". */
  subject?: string;
  /** How many secrets were redacted, or blocks removed. */
  count?: number;
  /** The kinds of secret redacted (never the secrets). */
  kinds?: readonly string[];
  /** How many saved memories were left without a vector. */
  memories?: number;
  /** The message of the error behind it. */
  message?: string;
}

/** A warning with its details, as `onWarning` receives it. */
export interface EngramWarning {
  code: WarningCode;
  details?: WarningDetails;
}

/** Whether a string is one of engram's warning codes. */
export function isWarningCode(value: unknown): value is WarningCode {
  return typeof value === 'string' && (WARNING_CODES as readonly string[]).includes(value);
}

// What a person is told for a bare code; a code without a line here is shown as the code.
const WARNING_TEXT: Partial<Record<WarningCode, string>> = {
  'vector-search-unavailable': 'an embedder is configured but the store keeps no vectors; recall is full-text only',
  'vectors-missing': 'the store has no vectors yet; run "engram reindex" (recall is full-text only)',
  'vector-space-differs':
    'the stored vectors come from another embedding model; run "engram reindex" (recall is full-text only)',
  'embedding-failed': 'the embedder did not answer; full-text only this time',
};

/**
 * A warning in words for people: `<code>: <what happened and what to do>`, or the code alone when
 * there is nothing more to say. Details make it specific (how many, which kinds, which memory).
 * @example
 * describeWarning('vectors-missing'); // 'vectors-missing: the store has no vectors yet; run "engram reindex" …'
 */
export function describeWarning(warning: WarningCode | EngramWarning | string): string {
  const { code, details = {} } = typeof warning === 'string' ? { code: warning } : warning;
  const text = detailedText(code, details) ?? (isWarningCode(code) ? WARNING_TEXT[code] : undefined);
  return text === undefined ? code : `${code}: ${text}`;
}

function detailedText(code: string, details: WarningDetails): string | undefined {
  const subject = details.subject ?? 'The memory';
  if (code === 'secrets-redacted' && details.count !== undefined)
    return `${subject} was stored with ${details.count} secret(s) replaced by [REDACTED:<kind>] (${(details.kinds ?? []).join(', ')}).`;
  if (code === 'private-content-removed' && details.count !== undefined)
    return `${subject} was stored without ${details.count} private or injected block(s).`;
  if (details.memories !== undefined && (code === 'embedding-failed' || code === 'vector-space-differs'))
    return `${details.memories} memories were saved without a vector; run "engram reindex" later.`;
  if (code === 'vectors-not-stored' && details.message !== undefined)
    return `${details.message}; run "engram reindex" later.`;
  return details.message;
}

/**
 * Which of a result's warnings a person is told, in words. Results keep every code; the words leave
 * out `vector-search-unavailable` when no embedder is configured at all: full-text recall is then
 * the user's configuration, not a degradation (`engram status` says "vector search: off"). With an
 * embedder configured, it is said.
 */
export function warningNotes(warnings: readonly string[], options: { embedderConfigured: boolean }): string[] {
  const notes: string[] = [];
  for (const code of new Set(warnings)) {
    if (code === 'vector-search-unavailable' && !options.embedderConfigured) continue;
    notes.push(describeWarning(code));
  }
  return notes;
}
