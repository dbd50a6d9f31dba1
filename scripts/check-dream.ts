/**
 * Re-measures issue 26's dream hardening as CI's check: a real offline dream over the corpus of
 * distinct-but-similar facts (ids, numbers, versions, hosts, people, dates, negations, word order)
 * beside true updates, and over a bulk store of 1,554 templated distinct facts. Prints the figures;
 * exits 1 when any distinct fact or the newer side of an update is invalidated, or when the
 * true-update recall falls below 0.9.
 * Run: npx tsx scripts/check-dream.ts
 */
import { measureDistinctFacts } from '../bench/distinct-facts-measure.js';

const MIN_RECALL = 0.9;
const figures = await measureDistinctFacts();
const failures: string[] = [];
const { corpus, bulk } = figures;
console.log(
  `dream: distinct facts invalidated ${corpus.distinctInvalidated} (of ${corpus.distinctPairs} pairs); bulk store ${bulk.invalidated} of ${bulk.memories}`,
);
console.log(
  `dream: true updates caught ${corpus.updatesCaught} of ${corpus.trueUpdates} (recall ${corpus.trueUpdateRecall}); newer statements invalidated ${corpus.newerInvalidated}`,
);
if (corpus.distinctInvalidated > 0)
  failures.push(`distinct facts invalidated: ${corpus.examples.map((text) => JSON.stringify(text)).join(', ')}`);
if (bulk.invalidated > 0) failures.push(`${bulk.invalidated} memories of the bulk store of distinct facts invalidated`);
if (corpus.newerInvalidated > 0) failures.push(`${corpus.newerInvalidated} newer statements invalidated`);
if (corpus.trueUpdateRecall < MIN_RECALL)
  failures.push(`true-update recall ${corpus.trueUpdateRecall} is below ${MIN_RECALL}`);
for (const failure of failures) console.error(`FAIL ${failure}`);
process.exit(failures.length > 0 ? 1 : 0);
