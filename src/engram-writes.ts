import { EngramError } from './kernel/errors.js';
import type { Settings } from './kernel/settings.js';
import type { Memory, MemoryPatch, MemorySource, NewMemory } from './memory/memory.js';
import type { Scope } from './memory/scope.js';
import { requireRole, type ImportReport, type MemoryStore, type PurgeReport } from './contracts/memory-store.js';
import type { HistoryEntry } from './memory/memory-history.js';
import { allCleared, purgedStates } from './memory/memory-purge.js';
import { extractionPurgeOptions, sourceTranscriptPlaces } from './extraction/extraction-purge-sources.js';
import type { Embedder } from './contracts/embedder.js';
import {
  reindexVectors,
  storeMemoryVectors,
  type ReindexOptions,
  type ReindexReport,
} from './remember/memory-vectors.js';
import { saveMemory } from './remember/save-memory.js';
import { checkMemoryPrivacy, privacyWarnings, type PrivacyReport } from './privacy/memory-privacy.js';
import type { SecretKind } from './privacy/secret-redaction.js';
import { describeWarning } from './kernel/warnings.js';
import { checkImportPrivacy, privacyNotices } from './privacy/privacy-notices.js';
import type { EngramSaveResult, RememberInput, SaveOptions, UpdateOptions } from './engram-options.js';

/** What the write path needs of the `Engram` it serves. */
export interface EngramWriteContext {
  readonly store: MemoryStore;
  readonly settings: Settings;
  readonly defaultScope: Scope;
  readonly actor: string;
  readonly now: () => Date;
  readonly embedder: Embedder | undefined;
  readonly onWarning: (warning: string, cause?: unknown) => void;
}

/**
 * The facade's write path: one privacy pass per write (its report carried to the result and
 * onWarning), the store's write, then the vectors, best effort. `Engram` checks scopes and finds the
 * memory; this does the writing. Not exported from the package: the methods are `Engram`'s.
 */
export class EngramWrites {
  readonly #context: EngramWriteContext;

  constructor(context: EngramWriteContext) {
    this.#context = context;
  }

  /** Stores one memory, or updates its near-duplicate in the same scope (`Engram.save`). */
  async save(input: RememberInput, options: SaveOptions): Promise<EngramSaveResult> {
    if (input === null || typeof input !== 'object')
      throw new EngramError('INVALID_INPUT', 'remember() takes an object with content.');
    const { store, settings, now, embedder, defaultScope, actor } = this.#context;
    const dependencies = { store, settings, now, ...(embedder && { embedder }) };
    const sourced =
      options.source === undefined ? input : { ...input, source: withSource(input.source, options.source) };
    // The write path's one privacy pass: its report is carried down to the result and onWarning, and
    // the checked value passes validation and the store without another scan (memory-privacy.ts).
    const { value, report } = checkMemoryPrivacy(
      { ...sourced, scope: sourced.scope ?? defaultScope },
      { maxContentChars: settings.memory.maxContentBytes },
    );
    const result = await saveMemory(dependencies, value, {
      actor: options.actor ?? actor,
      ...(options.dedupe !== undefined && { dedupe: options.dedupe }),
    });
    this.#reportPrivacy(report, 'The memory');
    const warnings = privacyWarnings(report);
    if (warnings.length === 0) return result;
    return {
      ...result,
      warnings: [...warnings, ...result.warnings],
      ...(report.redacted.length > 0 && { redacted: report.redacted }),
    };
  }

  /** Changes fields of `current` (found by `Engram.update` in its scopes), then its vector if its text changed. */
  async update(current: Memory, patch: MemoryPatch, options: UpdateOptions, actor: string): Promise<Memory> {
    const sourced =
      options.source === undefined || patch === null || typeof patch !== 'object'
        ? patch
        : { ...patch, source: withSource(patch.source === undefined ? current.source : patch.source, options.source) };
    const { value: clean, report } = checkMemoryPrivacy(sourced, {
      maxContentChars: this.#context.settings.memory.maxContentBytes,
    });
    const updated = await this.#context.store.update(current.id, clean, {
      actor,
      ...(options.ifUpdatedAt !== undefined && { ifUpdatedAt: options.ifUpdatedAt }),
    });
    this.#reportPrivacy(report, `Memory ${current.id}`);
    // The store dropped the vector of changed text; compute the new one.
    if (patch && (patch.name !== undefined || patch.description !== undefined || patch.content !== undefined))
      await this.storeVectors([updated]);
    return updated;
  }

  /** Removes a memory (or a deleted one's history) for good, with what quotes it (`Engram.purge`). */
  async purge(id: string, memory: Memory | undefined, actor: string): Promise<PurgeReport> {
    const { store } = this.#context;
    const states = purgedStates(memory, await store.history(id));
    const report = await store.purge(id, { actor }, extractionPurgeOptions(states));
    const places = [...report.places, ...sourceTranscriptPlaces(states)];
    return { ...report, places, copiesCleared: allCleared(places) };
  }

  /** Vectors follow the text: an undone delete or edit gets its vector back (recomputed, not kept). */
  async afterUndo(entry: HistoryEntry): Promise<void> {
    const { before, after } = entry;
    if (
      after &&
      (!before ||
        before.name !== after.name ||
        before.description !== after.description ||
        before.content !== after.content)
    ) {
      await this.storeVectors([after]);
    }
  }

  /** Writes memories that carry ids in one transaction (`Engram.importMemories`). */
  async importMemories(
    inputs: readonly NewMemory[],
    options: { onExisting?: 'skip' | 'replace' | 'fail'; actor?: string },
  ): Promise<ImportReport & { redacted: SecretKind[] }> {
    if (!Array.isArray(inputs)) throw new EngramError('INVALID_INPUT', 'An import is an array of memories.');
    const { values: clean, report: privacy } = checkImportPrivacy(inputs, {
      maxContentChars: this.#context.settings.memory.maxContentBytes,
    });
    const report = await this.#context.store.importMany(
      clean,
      { onExisting: options.onExisting ?? 'skip' },
      { actor: options.actor ?? 'import' },
    );
    this.#reportPrivacy(privacy, 'The import');
    await this.storeVectors(report.written);
    return { ...report, redacted: privacy.redacted };
  }

  /** Vectors for every memory that has none, or all of them in a new vector space (`Engram.reindex`). */
  async reindex(options: Partial<ReindexOptions>): Promise<ReindexReport> {
    const { store, embedder, settings } = this.#context;
    if (!embedder) {
      throw new EngramError(
        'CONFIG_INVALID',
        'No embedder is configured: set embedding.provider to openai-compatible, with embedding.baseUrl and embedding.model.',
      );
    }
    const vectors = requireRole(store, 'vectors', 'reindex');
    return reindexVectors({ vectors, embedder }, { batchSize: settings.embedding.batchSize, ...options });
  }

  /** Best effort: the write is done; a failed embedding is a warning, and `engram reindex` fills the gap. A store without vectors needs none (recall says so). */
  async storeVectors(memories: readonly Memory[]): Promise<void> {
    const { store, embedder, onWarning } = this.#context;
    const { vectors } = store;
    if (!embedder || !vectors || memories.length === 0) return;
    try {
      const result = await storeMemoryVectors({ vectors, embedder }, memories);
      for (const warning of result.warnings) {
        onWarning(describeWarning({ code: warning, details: { memories: memories.length } }), result.error);
      }
    } catch (error) {
      const message = (error as Error).message;
      onWarning(describeWarning({ code: 'vectors-not-stored', details: { message } }), error);
    }
  }

  /** Says what a write left out (kinds and counts, never the secrets), through onWarning. */
  #reportPrivacy(report: PrivacyReport, subject: string): void {
    for (const notice of privacyNotices(report, subject)) this.#context.onWarning(notice);
  }
}

// A write's source over a memory's own: the write says where it comes from, the memory keeps its origin.
function withSource(own: MemorySource | null | undefined, given: MemorySource): MemorySource {
  return { ...given, ...(own?.origin && { origin: own.origin }) };
}
