// One writer of scripts/check-mixed-writers.sh: opens the store with the engram build given
// (old or new) and writes `count` memories one by one, each its own transaction, then prints how
// many it wrote and the ids' digest.
//   node scripts/mixed-writer.mjs <engram dist folder> <store path> <tag> <count>
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dist, path, tag, countText] = process.argv.slice(2);
const { SqliteMemoryStore } = await import(pathToFileURL(join(dist, 'adapters/sqlite/sqlite-memory-store.js')).href);
const store = new SqliteMemoryStore({ path, busyTimeoutMs: 30_000 });
await store.open();
// Opened (its schema checked): check-mixed-writers.sh starts the other writer only now.
writeFileSync(`${path}.${tag}.opened`, '');
const hash = createHash('sha256');
const count = Number(countText);
for (let index = 0; index < count; index += 1) {
  const memory = await store.create(
    { scope: 'project:mixed', content: `Memory ${index} written by the ${tag} engram.` },
    { actor: tag },
  );
  hash.update(memory.id);
}
await store.close();
console.log(JSON.stringify({ tag, written: count, digest: hash.digest('hex') }));
