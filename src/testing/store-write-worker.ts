/**
 * A child process of the store tests: opens a store by URL and creates memories one `create`
 * call at a time, printing each new id on its own line once the write has returned.
 *
 *   node dist/testing/store-write-worker.js --url <store url> --scope <scope> --count <n|unbounded> --tag <text> [--start-at <epoch ms>]
 *
 * Exits 0 when done; on any error prints the error's code and message to stderr and exits 1.
 */
import { parseArgs } from 'node:util';
import { openStore } from '../adapters/open-store.js';

const USAGE = 'usage: store-write-worker --url <store url> --scope <scope> --count <n|unbounded> --tag <text>';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      scope: { type: 'string' },
      count: { type: 'string' },
      tag: { type: 'string' },
      'start-at': { type: 'string' },
    },
  });
  const { url, scope, tag } = values;
  const count = values.count === 'unbounded' ? Number.POSITIVE_INFINITY : Number(values.count);
  if (url === undefined || scope === undefined || tag === undefined || !(count >= 0)) throw new Error(USAGE);

  const store = await openStore(url, { busyTimeoutMs: 30_000 });
  // Workers started together wait for one agreed moment, so their writes really overlap.
  const startAt = Number(values['start-at'] ?? 0);
  if (startAt > Date.now()) await new Promise((resolve) => setTimeout(resolve, startAt - Date.now()));
  try {
    for (let index = 0; index < count; index += 1) {
      const memory = await store.create(
        { scope, name: `${tag}-${index}`, content: `Writer ${tag} wrote memory number ${index} of its run.` },
        { actor: `store-write-worker:${tag}` },
      );
      process.stdout.write(`${memory.id}\n`);
    }
  } finally {
    await store.close();
  }
}

main().catch((error: unknown) => {
  const { code, message } = error as { code?: string; message?: string };
  process.stderr.write(`${code ?? 'ERROR'}: ${message ?? String(error)}\n`);
  process.exitCode = 1;
});
