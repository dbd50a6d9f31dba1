#!/usr/bin/env bash
# Proves engram installs and runs where install scripts are blocked (Claude Code's
# `npm ci --ignore-scripts`, npm 12, locked-down CI), on a fresh clone of the committed tree:
#   (a) npm ci --ignore-scripts, build (tsc from devDependencies), smoke-run the CLI
#       (remember, recall, serve + GET /health, MCP over stdio: scripts/smoke-cli.mjs);
#   (b) npm pack, the tarball installed into an empty folder with --ignore-scripts, used as a
#       library (openEngram from engram/node: remember, recall) and as `npx engram`.
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
