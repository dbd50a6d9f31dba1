import type { Memory } from '../memory/memory.js';
import type { PurgeOptions, PurgePlace } from '../memory/memory-purge.js';
import { EXTRACTION_QUEUE, extractionJobKey, turnCheckpointName } from './extraction-job-payload.js';

/**
 * What extraction kept of the conversation a purged memory came from: the extraction jobs of its
 * source session (a finished one whole, an unfinished one when it holds the source turn) and each
 * removed job's progress checkpoint (the model's kept answers). A memory with no session source
 * (saved by hand, imported) adds nothing.
 */
export function extractionPurgeOptions(states: readonly Memory[]): PurgeOptions {
  const turns = new Map<string, Set<string>>();
  for (const state of states) {
    const sessionId = state.source?.sessionId;
    if (!sessionId) continue;
    const quotes = turns.get(sessionId) ?? new Set<string>();
    if (state.source?.turnId) quotes.add(JSON.stringify(state.source.turnId));
    turns.set(sessionId, quotes);
  }
  return {
    jobSources: [...turns].map(([sessionId, quotes]) => ({
      queue: EXTRACTION_QUEUE,
      keyPrefix: extractionJobKey(sessionId, ''),
      quotes: [...quotes],
    })),
    jobCheckpointPrefixes: [turnCheckpointName('')],
  };
}

/**
 * The places outside the store a purged memory's conversation may still be: the agent's own record
 * of the session, which engram reads and never edits. Not cleared, and the report says where.
 */
export function sourceTranscriptPlaces(states: readonly Memory[]): PurgePlace[] {
  const sessions = [...new Set(states.flatMap((state) => (state.source?.sessionId ? [state.source.sessionId] : [])))];
  if (sessions.length === 0) return [];
  return [
    {
      place: 'source-transcript',
      removed: 0,
      cleared: false,
      reason: `the agent's own transcript of session ${sessions.map((id) => JSON.stringify(id.slice(0, 80))).join(', ')} still holds the conversation the memory came from; engram reads it and never edits it (delete or edit that session's transcript file in the agent's folder, e.g. ~/.claude/projects/, to remove it)`,
    },
  ];
}
