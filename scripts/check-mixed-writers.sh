#!/usr/bin/env bash
# Two processes, the landed engram on better-sqlite3 and this one on node:sqlite (or
# @photostructure/sqlite on Node 20), write the same store file at once; then every memory both
# printed must be there. Proves the two SQLite libraries share SQLite's file locks across
# processes (within one process they would not: never open a store with both).
#   scripts/check-mixed-writers.sh [count per writer, default 2000]
# ENGRAM_OLD_DIST=<dist folder of an old engram> skips fetching and compiling the old version.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COUNT=${1:-2000}
OLD_COMMIT=${ENGRAM_OLD_COMMIT:-9b58f6d}
WORK=$(mktemp -d /tmp/engram-mixed-writers.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[ -f "$ROOT/dist/adapters/sqlite/sqlite-driver.js" ] || (cd "$ROOT" && npm run build >/dev/null)

OLD_DIST=${ENGRAM_OLD_DIST:-}
if [ -z "$OLD_DIST" ]; then
  echo "== the landed engram $OLD_COMMIT (better-sqlite3: compiled by its install script)"
  mkdir "$WORK/old"
  git -C "$ROOT" archive "$OLD_COMMIT" | tar -x -C "$WORK/old"
  (cd "$WORK/old" && npm install --no-audit --no-fund >/dev/null 2>&1)
  OLD_DIST="$WORK/old/dist"
fi
STORE="$WORK/memory.db"
# The old engram makes the store first: it refuses a schema newer than its own, as it should. The new
# one opens it once the old writer has, and migrates it while the old one writes: the upgrade a user
# makes while an old process still runs.
node "$ROOT/scripts/mixed-writer.mjs" "$OLD_DIST" "$STORE" warmup 0 >/dev/null

echo "== two writers, $COUNT memories each, at once"
START=$(date +%s.%N)
node "$ROOT/scripts/mixed-writer.mjs" "$OLD_DIST" "$STORE" old "$COUNT" >"$WORK/old.out" &
OLD_PID=$!
for _ in $(seq 1 600); do [ -e "$STORE.old.opened" ] && break; sleep 0.1; done
node "$ROOT/scripts/mixed-writer.mjs" "$ROOT/dist" "$STORE" new "$COUNT" >"$WORK/new.out" &
NEW_PID=$!
wait $OLD_PID
wait $NEW_PID
END=$(date +%s.%N)
cat "$WORK/old.out" "$WORK/new.out"

node --input-type=module - "$ROOT/dist" "$STORE" "$COUNT" "$START" "$END" <<'JS'
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const [dist, path, countText, start, end] = process.argv.slice(2);
const { SqliteMemoryStore } = await import(pathToFileURL(join(dist, 'adapters/sqlite/sqlite-memory-store.js')).href);
const store = new SqliteMemoryStore({ path });
await store.open();
const count = Number(countText);
const memories = await store.list({ scopes: ['project:mixed'], limit: 10 * count + 10 });
const byWriter = { old: new Set(), new: new Set() };
for (const memory of memories) {
  const match = /^Memory (\d+) written by the (old|new) engram\.$/.exec(memory.content);
  if (match) byWriter[match[2]].add(Number(match[1]));
}
const history = (await store.stats(['project:mixed'])).historyEntries;
await store.close();
const seconds = Number(end) - Number(start);
const total = byWriter.old.size + byWriter.new.size;
console.log(
  `mixed writers: old ${byWriter.old.size}/${count}, new ${byWriter.new.size}/${count}, ${memories.length} rows, ${history} history entries, ${(total / seconds).toFixed(0)} writes/s together over ${seconds.toFixed(1)} s`,
);
if (byWriter.old.size !== count || byWriter.new.size !== count || memories.length !== 2 * count || history !== 2 * count) {
  console.error('mixed writers: FAIL, something was lost or doubled');
  process.exit(1);
}
console.log('mixed writers: nothing lost');
JS
