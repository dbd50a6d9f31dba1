#!/usr/bin/env bash
# Proves engram installs and runs where install scripts are blocked (Claude Code's
# `npm ci --ignore-scripts`, npm 12, locked-down CI), on a fresh clone of the committed tree:
#   (a) npm ci --ignore-scripts, build (tsc from devDependencies), smoke-run the CLI
#       (remember, recall, serve + GET /health, MCP over stdio: scripts/smoke-cli.mjs);
#       and the README.md quickstart's `npm start`: the service answers GET /health;
#   (b) npm pack, the tarball installed into an empty folder with --ignore-scripts, used as a
#       library (openEngram from engram/node: remember, recall) and as `npx engram`. The README's
#       packed-quickstart block, as written, is test/packed-quickstart.test.ts (npm test).
# The README's own path (npm install && npm test) is .ci/run's main run.
#   scripts/ci-install-paths.sh [repository folder]     (default: this repository)
set -euo pipefail
REPO=$(cd "${1:-$(dirname "$0")/..}" && pwd)
WORK=$(mktemp -d /tmp/engram-install-paths.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

echo "== (a) npm ci --ignore-scripts on a fresh clone"
git clone --quiet "$REPO" "$WORK/clone"
cd "$WORK/clone"
if [ "${ENGRAM_REFRESH_LOCK:-0}" = 1 ]; then
  # Only to try this before the lock file is regenerated after a package.json change.
  npm install --package-lock-only --ignore-scripts --no-audit >/dev/null
fi
npm ci --ignore-scripts
npm run build
node "$REPO/scripts/smoke-cli.mjs" node "$WORK/clone/dist/surfaces/cli/main.js"

echo "== (a) npm start, as README.md's quickstart says: the service on embedded SQLite, no API key"
START_PORT=$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
mkdir "$WORK/start-home"
# In a session of its own, so the whole npm → node tree stops with one signal.
HOME="$WORK/start-home" ENGRAM_PORT="$START_PORT" ANTHROPIC_API_KEY= OPENAI_API_KEY= \
  setsid npm start >"$WORK/start.log" 2>&1 &
START_PID=$!
if ! node -e '
  const url = `http://127.0.0.1:${process.argv[1]}/health`;
  const deadline = Date.now() + 60_000;
  (async () => {
    for (;;) {
      try {
        const response = await fetch(url);
        const body = await response.json();
        if (response.status === 200 && body.status === "ok") return console.log(`npm start: GET /health ok (${body.version})`);
      } catch {}
      if (Date.now() > deadline) { console.error(`npm start: no answer on ${url} in 60 s`); process.exit(1); }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();' "$START_PORT"; then
  cat "$WORK/start.log"
  kill -- -"$START_PID" 2>/dev/null || true
  exit 1
fi
kill -TERM -- -"$START_PID"
wait "$START_PID" || true
test -f "$WORK/start-home/.engram/engram.db" || { echo "npm start: no store in ~/.engram"; cat "$WORK/start.log"; exit 1; }

echo "== (b) npm pack, installed into an empty folder with --ignore-scripts"
TARBALL=$(npm pack --ignore-scripts --silent --pack-destination "$WORK")
mkdir "$WORK/app"
cd "$WORK/app"
npm init -y >/dev/null
npm install --ignore-scripts "$WORK/$TARBALL"
export ENGRAM_HOME="$WORK/app-home" HOME="$WORK/app-home" ANTHROPIC_API_KEY= OPENAI_API_KEY=
mkdir -p "$ENGRAM_HOME"
cat >library.mjs <<'JS'
import { openEngram } from 'engram/node';

const { engram, close } = await openEngram({ cwd: process.cwd() });
await engram.remember({ content: 'The packed engram deploys with make ship.', type: 'procedure', scope: 'global' });
const { memories } = await engram.recall('how do I deploy?', { scopes: ['global'] });
await close();
if (!memories.some(({ memory }) => memory.content.includes('make ship'))) {
  console.error('library: recall did not find the memory');
  process.exit(1);
}
console.log(`library: openEngram remember + recall ok (${memories.length} found)`);
JS
node library.mjs
npx --no-install engram recall --scope global --json "deploy make ship" | node -e '
  const text = require("fs").readFileSync(0, "utf8");
  if (!text.includes("make ship")) { console.error("npx engram recall did not find the memory: " + text); process.exit(1); }
  console.log("npx engram recall ok");'
node "$REPO/scripts/smoke-cli.mjs" "$WORK/app/node_modules/.bin/engram"

echo "== install paths ok"
