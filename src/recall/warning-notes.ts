/**
 * Which degradation warnings a person is told, and in what words. Results keep every code (a
 * script or the viewer decides); human text leaves out `vector-search-unavailable` when no embedder
 * is configured at all: full-text recall is then the user's configuration, not a degradation
 * (`engram status` says "vector search: off"). With an embedder configured, it is said.
 */
export function warningNotes(warnings: readonly string[], options: { embedderConfigured: boolean }): string[] {
  const notes: string[] = [];
  for (const code of new Set(warnings)) {
    if (code === 'vector-search-unavailable' && !options.embedderConfigured) continue;
    notes.push(WARNING_TEXT[code] ?? code);
  }
  return notes;
}

const WARNING_TEXT: Record<string, string> = {
  'vector-search-unavailable':
    'vector-search-unavailable: an embedder is configured but the store keeps no vectors; recall is full-text only',
  'vectors-missing': 'vectors-missing: the store has no vectors yet; run "engram reindex" (recall is full-text only)',
  'vector-space-differs':
    'vector-space-differs: the stored vectors come from another embedding model; run "engram reindex" (recall is full-text only)',
  'embedding-failed': 'embedding-failed: the embedder did not answer; full-text only this time',
};
