#!/usr/bin/env bash
# Installs the coding agents' CLIs the tests run (Codex, Gemini CLI, OpenCode, Copilot CLI, Qwen Code),
# at the versions pinned in test/support/agent-clis.json, each into a prefix of its own:
# ${ENGRAM_AGENTS_DIR:-~/.cache/engram-agents}/<name>@<version>. Not in package.json: they weigh
# about 1.2 GB together, and most developers never run them. Install scripts are not run (none of
# the five needs its own: OpenCode's only links its platform binary, which the tests call directly).
# An installed version is kept; `scripts/install-agent-clis.sh codex qwen` installs only those.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${ENGRAM_AGENTS_DIR:-$HOME/.cache/engram-agents}"
mkdir -p "$DIR"
NAMES=("$@")
if [ ${#NAMES[@]} -eq 0 ]; then
  mapfile -t NAMES < <(node -e "console.log(Object.keys(require('./test/support/agent-clis.json')).join('\n'))")
fi
for name in "${NAMES[@]}"; do
  spec=$(node -e "const c = require('./test/support/agent-clis.json')['$name']; if (!c) process.exit(1); console.log(c.package + '@' + c.version)") ||
    { echo "unknown agent CLI: $name" >&2; exit 1; }
  prefix="$DIR/$name@${spec##*@}"
  if [ -f "$prefix/.installed" ]; then echo "$spec: installed in $prefix"; continue; fi
  rm -rf "$prefix" && mkdir -p "$prefix"
  npm install --prefix "$prefix" --ignore-scripts --no-save --no-audit --no-fund --loglevel=error "$spec" >/dev/null
  touch "$prefix/.installed"
  echo "$spec: installed in $prefix"
done
