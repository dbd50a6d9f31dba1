import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/contracts/embedder.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import { memoryEmbeddingText } from '../../src/remember/memory-vectors.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { CORPUS_SCOPE } from '../fixtures/dream-corpus.js';
import { openSeededStore, undoIn } from './dream-support.js';
import { useClosedAfterTest } from '../support/per-test.js';

/** Letter counts as a vector: the same text always gets the same vector, another text another one. */
class LetterEmbedder implements Embedder {
  readonly model = 'letters';
  readonly dimensions = 27;
  texts: string[] = [];
  failing = false;
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.failing) throw new Error('embeddings service down');
    this.texts.push(...texts);
    return texts.map((text) => {
      const vector = new Float32Array(27);
      for (const char of text.toLowerCase()) {
        const code = char.charCodeAt(0) - 97;
        const index = code >= 0 && code < 26 ? code : 26;
        vector[index] = (vector[index] ?? 0) + 1;
      }
      return vector;
    });
  }
}

const closeAfterTest = useClosedAfterTest();

describe('undo of a change set', () => {
  it('recomputes the vectors of the memories whose text it gave back, and only theirs', async () => {
    const seeded = closeAfterTest(await openSeededStore());
    const embedder = new LetterEmbedder();
    const dependencies = {
      store: seeded.store,
      settings: DEFAULT_SETTINGS,
      now: () => new Date(seeded.clock.now),
      instructions: seeded.corpus.instructions,
      embedder,
    };
    const report = await runDream(dependencies, { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    const rewritten = report.diffs.filter((diff) => diff.before.content !== diff.after.content);
    expect(rewritten.length).toBeGreaterThan(0);
    embedder.texts = [];
    seeded.clock.now += 60_000;
    const undo = await undoIn(seeded, report.changeSetId!, { embedder });
    expect(undo.vectors).toEqual({ stored: rewritten.length, warnings: [] });
    // Only the memories whose words came back were embedded again, with their old words.
    expect(embedder.texts.sort()).toEqual(rewritten.map((diff) => memoryEmbeddingText(diff.before)).sort());
    const vectors = seeded.store.vectors!;
    for (const diff of rewritten.slice(0, 5)) {
      const [query] = await embedder.embed([memoryEmbeddingText(diff.before)]);
      const hits = await vectors.search({ scopes: [CORPUS_SCOPE], vector: query!, limit: 50 });
      expect(hits.find((hit) => hit.memory.id === diff.memoryId)?.similarity, diff.memoryId).toBeCloseTo(1, 5);
    }
  });

  it('keeps the undo when the embedder fails', async () => {
    const seeded = closeAfterTest(await openSeededStore());
    const embedder = new LetterEmbedder();
    const report = await runDream(
      { store: seeded.store, settings: DEFAULT_SETTINGS, now: () => new Date(seeded.clock.now), embedder },
      { trigger: 'manual', scopes: [CORPUS_SCOPE] },
    );
    embedder.failing = true;
    seeded.clock.now += 60_000;
    const undo = await undoIn(seeded, report.changeSetId!, { embedder });
    expect(undo.undone).toHaveLength(report.diffs.length);
    expect(undo.vectors.stored).toBe(0);
    expect(undo.vectors.warnings).toEqual(['embedding-failed']);
  });
});
