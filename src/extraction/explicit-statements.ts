import type { Memory, MemorySource } from '../memory/memory.js';
import type { Engram } from '../engram.js';
import { applyExplicitMemory } from '../remember/explicit-memory-writes.js';
import type { ConversationMessage } from '../contracts/conversation.js';
import { isUserSpeech } from './conversation-spans.js';
import type { Checkpoints } from '../contracts/memory-store-checkpoints.js';
import { explicitCheckpointName } from './extraction-job-payload.js';
import type { WriteScopes } from './extraction-output.js';
import type { WrittenMemory } from './extraction-report.js';

/** Recorded in history for memories the user stated explicitly. */
export const EXPLICIT_ACTOR = 'explicit-memory';

/** Writes what the user stated explicitly in one message ("remember that …", "forget that …"). */
export type ExplicitMemoryHandler = (input: {
  engram: Engram;
  text: string;
  scopes: WriteScopes;
  source: MemorySource;
  actor: string;
}) => Promise<{ written: Array<{ memory: Memory; action: 'created' | 'merged' | 'archived' }>; warnings: string[] }>;

/**
 * The explicit-memory rules (src/remember/explicit-memory.ts) as an extraction step: "remember that …",
 * "from now on …", "always/never …", "I prefer …" are written to the project scope at once, model
 * or not; "forget that …" archives the one memory that clearly matches, and a forget that matches
 * none or several changes nothing and says so.
 */
export const applyExplicitStatements: ExplicitMemoryHandler = async ({ engram, text, scopes, source, actor }) => {
  const { outcomes } = await applyExplicitMemory(engram, text, { scope: scopes.project, actor, source });
  const written: Awaited<ReturnType<ExplicitMemoryHandler>>['written'] = [];
  const warnings: string[] = [];
  for (const outcome of outcomes) {
    if (
      (outcome.action === 'created' || outcome.action === 'merged' || outcome.action === 'archived') &&
      outcome.memory
    ) {
      written.push({ memory: outcome.memory, action: outcome.action });
    } else if (outcome.action === 'no-match' || outcome.action === 'ambiguous') {
      warnings.push(
        `"forget ${outcome.intent.query.slice(0, 80)}" matched ${outcome.action === 'no-match' ? 'no memory' : 'several memories'}: nothing was archived`,
      );
    }
  }
  return { written, warnings };
};

/** A memory an explicit statement wrote, as the model is told it is known. */
export interface KnownMemory {
  id: string;
  content: string;
  name: string;
  type: string;
}

/** What applying the explicit statements of some messages did. */
export interface ExplicitRun {
  /** What was written now, for the report. */
  written: WrittenMemory[];
  /** Memories the statements of these messages wrote, now or in an earlier run, still active: the model is told they are known. */
  known: KnownMemory[];
  warnings: string[];
  /** User messages read for explicit statements before (by any path), so not again. */
  appliedBefore: number;
}

/** What the explicit checkpoint of a message holds: the memories its statements wrote. */
interface ExplicitRecord {
  written: Array<{ id: string; action: WrittenMemory['action'] }>;
}

/**
 * Applies the explicit statements of the user's messages, each message once: a message read before
 * (its explicit checkpoint is set, by any path: a run of the queue, a run that covered another job,
 * the offline path) is skipped, so a retry or a second read never applies a "forget that …" to
 * another memory. The caller holds the session's lock. A crash between a message's writes and its
 * checkpoint applies that one message again.
 */
export async function applyExplicitOnce(input: {
  engram: Engram;
  /** Where each message's explicit checkpoint is kept (the store's checkpoints role). */
  checkpoints: Checkpoints;
  handler: ExplicitMemoryHandler;
  sessionId: string;
  messages: readonly ConversationMessage[];
  scopes: WriteScopes;
}): Promise<ExplicitRun> {
  const { engram, sessionId, scopes } = input;
  const run: ExplicitRun = { written: [], known: [], warnings: [], appliedBefore: 0 };
  const readScopes = [...new Set([scopes.project, ...(scopes.user ? [scopes.user] : []), 'global'])];
  for (const message of input.messages) {
    if (!isUserSpeech(message)) continue;
    const name = explicitCheckpointName(sessionId, message.id);
    const before = readRecord(await input.checkpoints.get(name));
    if (before) {
      run.appliedBefore += 1;
      for (const entry of before.written) {
        if (entry.action === 'archived') continue;
        const memory = await engram.store.get(entry.id, readScopes);
        if (memory && !memory.archived && memory.invalidAt === null) run.known.push(known(memory));
      }
      continue;
    }
    const outcome = await input.handler({
      engram,
      text: message.text,
      scopes,
      source: { sessionId, turnId: message.id, origin: 'explicit' },
      actor: EXPLICIT_ACTOR,
    });
    run.warnings.push(...outcome.warnings);
    for (const { memory, action } of outcome.written) {
      run.written.push({
        id: memory.id,
        name: memory.name,
        type: memory.type,
        scope: memory.scope,
        action,
        turnId: message.id,
        origin: 'explicit',
      });
      if (action !== 'archived') run.known.push(known(memory));
    }
    const record: ExplicitRecord = {
      written: outcome.written.map(({ memory, action }) => ({ id: memory.id, action })),
    };
    await input.checkpoints.set(name, JSON.stringify(record));
  }
  return run;
}

function readRecord(value: string | undefined): ExplicitRecord | undefined {
  if (value === undefined) return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<ExplicitRecord>;
    if (Array.isArray(parsed?.written))
      return { written: parsed.written.filter((entry) => typeof entry?.id === 'string') };
  } catch {
    // A damaged record still says the statements were applied.
  }
  return { written: [] };
}

function known(memory: Memory): KnownMemory {
  return { id: memory.id, content: memory.content, name: memory.name, type: memory.type };
}
