#!/usr/bin/env node
// The plugin's one entry: `engram.mjs hook <event> [--agent codex]` runs a Claude Code (or Codex) hook, anything else runs the
// engram CLI (`engram.mjs mcp` for the plugin's MCP server). It finds engram's built code where the
// plugin folder sits: inside the engram package or repository (a directory marketplace runs the
// plugin in place), else an engram installed next to a copied plugin folder (npm ci --ignore-scripts
// of the plugin's own package.json), else the bundle in runtime/ that a release of the plugin for a
// git marketplace carries (scripts/build-plugin-release.mjs). A hook that cannot find engram exits 0 and prints nothing: a
// memory system never blocks a prompt.
import { existsSync } from 'node:fs';
import module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Every hook is a new process that compiles the same code again: V8's compile cache (Node 22.1+,
// in Node's own folder, os.tmpdir()/node-compile-cache unless NODE_COMPILE_CACHE says where;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off) keeps the compiled code of engram's modules between
// them. Node 20 has none: the hooks run as before. A cache that cannot be written is skipped by Node.
try {
  module.enableCompileCache?.();
} catch {
  // No cache: slower to start, nothing else.
}

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const isHook = args[0] === 'hook';

/** The CLI's and the hook's entry modules of the engram this plugin runs. */
function entries(dist) {
  // The bundled hooks (npm run build makes it when esbuild is there) load faster; the modules are the fallback.
  const bundle = join(dist, 'surfaces', 'claude-code', 'hook-main.bundle.js');
  const hook = existsSync(bundle) ? bundle : join(dist, 'surfaces', 'claude-code', 'hook-main.js');
  return { cli: join(dist, 'surfaces', 'cli', 'main.js'), hook };
}

function findEngram() {
  const inPlace = entries(join(here, '..', '..', '..', 'dist'));
  if (existsSync(inPlace.cli)) return inPlace;
  try {
    const manifest = createRequire(join(here, '..', 'package.json')).resolve('engram/package.json');
    const installed = entries(join(dirname(manifest), 'dist'));
    if (existsSync(installed.cli)) return installed;
  } catch {
    // Not installed beside the plugin either.
  }
  const bundled = { cli: join(here, '..', 'runtime', 'main.js'), hook: join(here, '..', 'runtime', 'hook-main.js') };
  if (existsSync(bundled.cli)) return bundled;
  return undefined;
}

// Same rule as kernel/nested-call.ts: set and neither empty nor '0'.
if (isHook && (process.env.ENGRAM_NESTED ?? '') !== '' && process.env.ENGRAM_NESTED !== '0') process.exit(0);
const engram = findEngram();
if (engram === undefined) {
  process.stderr.write(
    'engram: the plugin cannot find engram (dist/ beside the plugin, an installed engram package, or runtime/)\n',
  );
  process.exit(isHook ? 0 : 1);
}
if (isHook && args[1] === 'adopt-events') {
  // Started by the queueing hooks' sh fast path (hook.sh): their raw events into the spool.
  const { runEventAdopter } = await import(pathToFileURL(engram.hook).href);
  await runEventAdopter();
} else if (isHook && args[1] === 'serve') {
  // The resident hook server the prompt and session-start hooks' sh client asks (hook.sh).
  const { runHookServer } = await import(pathToFileURL(engram.hook).href);
  await runHookServer();
} else if (isHook) {
  const { runHookProcess } = await import(pathToFileURL(engram.hook).href);
  // `hook <event> --agent codex`: another agent's hook protocol (agent-hook-protocols.ts).
  const agent = args[2] === '--agent' ? args[3] : undefined;
  await runHookProcess(args[1] ?? '', agent === undefined ? {} : { agent });
} else {
  process.argv = [process.argv[0], engram.cli, ...args];
  await import(pathToFileURL(engram.cli).href);
}
