/**
 * LLM-as-retriever on neutral LoCoMo with the scripted model: PLUMBING ONLY. The scripted model
 * "picks" the first manifest handles it is shown, which says nothing about what a real model would
 * pick; what this measures is that the selection call is made per question, answered, parsed and
 * merged into the block within the token budget, and what the call costs in prompt size and time.
 * Quality needs a real model (set model.provider and a key, then run `engram eval` or this script
 * with ENGRAM_REAL_MODEL wired in by hand).
 *
 *   npx tsx bench/locomo-llm-plumbing.ts [questions, default 100]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { estimateTextTokens } from '../src/kernel/token-estimate.js';
import { messageText } from '../src/contracts/language-model-content.js';
import { mean } from '../src/eval/retrieval-metrics.js';
import { ScriptedLanguageModel } from '../src/testing/scripted-language-model.js';
import { neutralLocomoDataset } from './locomo-bench.js';
import { round } from './statistics.js';

/** Conversations 1-5: the tuning half (as in bench/locomo-tune.ts). */
const TUNING_CONVERSATIONS = ['conv-26', 'conv-30', 'conv-41', 'conv-42', 'conv-43'];

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 100);
  const dataset = neutralLocomoDataset();
  const queries = dataset.queries
    .filter((query) => TUNING_CONVERSATIONS.includes(query.id.slice(0, query.id.lastIndexOf(':'))))
    .slice(0, count);
  const newest = Math.max(...dataset.memories.map((memory) => Date.parse(memory.createdAt!)));
  const now = (): Date => new Date(newest + 1_000);
  const directory = await mkdtemp(join(tmpdir(), 'engram-llm-plumbing-'));
  const store = new SqliteMemoryStore({ path: join(directory, 'eval.db'), now });
  const promptTokens: number[] = [];
  const model = new ScriptedLanguageModel({
    whenExhausted: 'repeat-last',
    script: [
      (request) => {
        const prompt = request.messages.map((message) => messageText(message)).join('\n');
        promptTokens.push(estimateTextTokens(prompt));
        const handles = [...prompt.matchAll(/^(\S+) \| /gm)].map((match) => match[1]!).slice(0, 3);
        return JSON.stringify({ selected: handles });
      },
    ],
  });
  try {
    await store.open();
    for (let start = 0; start < dataset.memories.length; start += 1_000)
      await store.createMany(dataset.memories.slice(start, start + 1_000), { actor: 'plumbing' });
    const rows = [];
    for (const withModel of [false, true]) {
      const engram = new Engram({ store, now, actor: 'plumbing', ...(withModel && { model }) });
      const recall: number[] = [];
      const tokens: number[] = [];
      const times: number[] = [];
      const statuses = new Map<string, number>();
      for (const query of queries) {
        const started = performance.now();
        const context = await engram.buildMemoryContext(query.query, {
          scopes: [query.scope],
          recordAccess: false,
          includeStaticPart: false,
        });
        times.push(performance.now() - started);
        const relevant = new Set(query.relevant);
        recall.push(context.included.filter((entry) => relevant.has(entry.memory.id)).length / relevant.size);
        tokens.push(context.tokens.block);
        const status = context.selection?.status ?? 'no model';
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
      rows.push({
        retriever: withModel ? 'ranking + scripted model (first 3 handles)' : 'ranking only',
        questions: queries.length,
        'injected recall': round(mean(recall)),
        'injected tokens': round(mean(tokens), 1),
        'mean ms': round(mean(times), 1),
        statuses: [...statuses].map(([status, n]) => `${status} ${n}`).join(', '),
      });
    }
    console.log('\nLLM-as-retriever plumbing on neutral LoCoMo (tuning half), scripted model: NOT a quality figure');
    console.table(rows);
    console.log(
      `Model calls: ${model.calls}; selection prompt ${round(mean(promptTokens), 0)} tokens on average (manifest of recall.llmManifestMax).`,
    );
  } finally {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  }
}

await main();
