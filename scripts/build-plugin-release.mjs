#!/usr/bin/env node
// A Claude Code marketplace that works when it is cloned from git (GitHub or any git host), where
// Claude Code copies the plugin folder alone into its cache, runs `npm ci --ignore-scripts` there,
// and nothing else of this repository comes along (FORMATS.md §1.6).
//   node scripts/build-plugin-release.mjs <out-dir>      (npm run build:plugin -- <out-dir>)
// <out-dir> gets `.claude-plugin/marketplace.json` and `plugins/engram/` as in this repository, plus:
// - `plugins/engram/runtime/`: engram's CLI, hook entry and hook worker bundled with every pure-JS
//   dependency (esbuild), the SQLite driver and sqlite-vec left out: their binaries come from npm;
// - `plugins/engram/package.json` and `package-lock.json` naming only those, at the versions of
//   this repository's lockfile, so Claude Code's `npm ci --ignore-scripts` brings them (both ship
//   their binaries inside npm packages: no install script is needed; on Node 22.13+ the store uses
//   the built-in `node:sqlite` and the addon is not even loaded).
// Commit <out-dir> to a branch of its own (say `claude-plugin`) and users run
// `/plugin marketplace add <git url of that branch>` then `/plugin install engram@engram`.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const NATIVE = ['@photostructure/sqlite', 'sqlite-vec'];

export async function buildPluginRelease(outDir) {
  const out = resolve(outDir);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const plugin = join(out, 'plugins', 'engram');
  rmSync(join(out, 'plugins'), { recursive: true, force: true });
  mkdirSync(join(out, '.claude-plugin'), { recursive: true });
  cpSync(join(root, '.claude-plugin', 'marketplace.json'), join(out, '.claude-plugin', 'marketplace.json'));
  cpSync(join(root, 'plugins', 'engram'), plugin, { recursive: true });
  cpSync(join(root, 'LICENSE'), join(plugin, 'LICENSE'));

  const { build } = createRequire(import.meta.url)('esbuild');
  await build({
    entryPoints: {
      main: join(root, 'src', 'surfaces', 'cli', 'main.ts'),
      'hook-main': join(root, 'src', 'surfaces', 'claude-code', 'hook-main.ts'),
      // Spawned by path beside the module that starts it (claude-code-hooks.ts: workerScriptPath).
      'hook-worker': join(root, 'src', 'surfaces', 'claude-code', 'hook-worker.ts'),
      // Started by URL beside the module that starts it (thread-language-model.ts), as the hook worker is.
      'language-model-thread': join(root, 'src', 'adapters', 'models', 'language-model-thread.ts'),
    },
    outdir: join(plugin, 'runtime'),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: [...NATIVE, 'pg-native'],
    define: { ENGRAM_BUNDLED_VERSION: JSON.stringify(pkg.version) },
    // Bundled CommonJS dependencies call require(): give the ESM output one.
    banner: {
      js: "import { createRequire as __engramRequire } from 'node:module'; const require = __engramRequire(import.meta.url);",
    },
    // Chunks sit beside the entries: a module that finds a file by its own URL (the hook worker) finds it.
    chunkNames: '[name]-[hash]',
    legalComments: 'linked',
    logLevel: 'warning',
  });

  // The native dependencies at this repository's locked versions, with what they depend on.
  const dependencies = Object.fromEntries(NATIVE.map((name) => [name, pkg.dependencies[name]]));
  const packages = {
    '': { name: 'engram-claude-code-plugin', version: pkg.version, license: pkg.license, dependencies },
  };
  const pending = [...NATIVE];
  while (pending.length > 0) {
    const name = pending.shift();
    const key = `node_modules/${name}`;
    if (packages[key]) continue;
    const entry = lock.packages[key];
    if (!entry) throw new Error(`package-lock.json has no ${key}`);
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...kept } = entry;
    packages[key] = kept;
    pending.push(...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {}));
  }
  writeFileSync(
    join(plugin, 'package.json'),
    `${JSON.stringify(
      {
        name: 'engram-claude-code-plugin',
        version: pkg.version,
        private: true,
        description: 'The native parts of engram for its Claude Code plugin; engram itself is bundled in runtime/.',
        license: pkg.license,
        type: 'module',
        engines: pkg.engines,
        dependencies,
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(plugin, 'package-lock.json'),
    `${JSON.stringify({ name: 'engram-claude-code-plugin', version: pkg.version, lockfileVersion: 3, requires: true, packages }, null, 2)}\n`,
  );
  return { out, plugin, runtime: join(plugin, 'runtime') };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = process.argv[2];
  if (!outDir) {
    process.stderr.write('usage: node scripts/build-plugin-release.mjs <out-dir>\n');
    process.exit(2);
  }
  if (existsSync(join(resolve(outDir), 'package.json')) && resolve(outDir) === resolve(root)) {
    process.stderr.write('engram: the release goes to a folder of its own, not this repository\n');
    process.exit(2);
  }
  const { plugin } = await buildPluginRelease(outDir);
  process.stdout.write(`engram: the Claude Code marketplace is in ${resolve(outDir)} (plugin: ${plugin})\n`);
}
