#!/usr/bin/env node
// Fails when engram's production dependency tree needs an install script to work. Claude Code
// installs plugins with `npm ci --ignore-scripts`, npm 12 blocks dependency scripts unless
// allow-listed, and locked-down CI images skip them: a dependency whose binary only its install
// script can fetch or build (better-sqlite3's `prebuild-install || node-gyp rebuild`) breaks
// engram there. A script passes only when it is a fallback whose binary already ships inside the
// package and is what the package loads at run time: `node-gyp-build` with a prebuilds/ folder
// holding a binary for this platform.
//
//   node scripts/check-install-scripts.mjs [project folder]   (default: the current folder)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const INSTALL_HOOKS = ['preinstall', 'install', 'postinstall'];

/** The install-time scripts npm would run for the package in `directory` (binding.gyp alone means `node-gyp rebuild`). */
export function installScriptsOf(directory) {
  const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'));
  const scripts = manifest.scripts ?? {};
  const found = {};
  for (const hook of INSTALL_HOOKS) if (typeof scripts[hook] === 'string') found[hook] = scripts[hook];
  if (found.install === undefined && found.preinstall === undefined && existsSync(join(directory, 'binding.gyp')))
    found.install = 'node-gyp rebuild';
  return { name: manifest.name ?? directory, version: manifest.version ?? '?', scripts: found };
}

/**
 * Whether the package in `directory` works with its install scripts skipped: `{ ok, reason }`.
 * Only `node-gyp-build` passes, and only if node-gyp-build, asked as the package asks it at run
 * time, finds a binary under the package's own prebuilds/ (a build/ folder is a local leftover,
 * absent from a fresh install).
 */
export function judgePackage(directory) {
  const { name, version, scripts } = installScriptsOf(directory);
  const hooks = Object.keys(scripts);
  if (hooks.length === 0) return { name, version, ok: true, reason: 'no install script' };
  const described = hooks.map((hook) => `${hook}: ${JSON.stringify(scripts[hook])}`).join(', ');
  const others = hooks.filter((hook) => scripts[hook].trim() !== 'node-gyp-build');
  if (others.length > 0) {
    return {
      name,
      version,
      ok: false,
      reason: `${described}: only that script can fetch or build what the package needs`,
    };
  }
  // node-gyp-build reads the platform once, when it loads: this judges the machine it runs on.
  const platform = `${process.platform}-${process.arch}`;
  let loaded;
  try {
    loaded = loadNodeGypBuild(directory).path(directory);
  } catch (error) {
    return {
      name,
      version,
      ok: false,
      reason: `${described}, but no prebuilt binary for ${platform} is inside the package (${firstLine(error)})`,
    };
  }
  const prebuilds = join(resolve(directory), 'prebuilds') + sep;
  if (!resolve(loaded).startsWith(prebuilds)) {
    return {
      name,
      version,
      ok: false,
      reason: `${described}: the binary found (${relative(directory, loaded)}) is a local build, not one shipped in prebuilds/`,
    };
  }
  return {
    name,
    version,
    ok: true,
    reason: `${described} is a fallback: ${relative(directory, loaded)} ships in the package`,
  };
}

/** Every production dependency folder of the project, from `npm ls --omit=dev --all` (extraneous leftovers skipped). */
export function productionDependencies(project) {
  let output;
  try {
    output = execFileSync('npm', ['ls', '--omit=dev', '--all', '--json', '--long'], {
      cwd: project,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch (error) {
    // npm ls exits 1 on problems (an extraneous package) but still prints the tree.
    output = error.stdout;
    if (!output) throw error;
  }
  const tree = JSON.parse(output);
  const folders = new Set();
  const walk = (node) => {
    for (const child of Object.values(node.dependencies ?? {})) {
      if (child.extraneous || !child.path || folders.has(child.path)) continue;
      if (!existsSync(join(child.path, 'package.json'))) continue; // an optional dependency for another platform
      folders.add(child.path);
      walk(child);
    }
  };
  walk(tree);
  return [...folders].sort();
}

function loadNodeGypBuild(directory) {
  // The package's own copy first (the one it calls at run time), else the one next to this script.
  for (const base of [join(resolve(directory), 'package.json'), import.meta.url]) {
    try {
      return createRequire(base)('node-gyp-build');
    } catch {
      // try the next place
    }
  }
  throw new Error('node-gyp-build is not installed');
}

function firstLine(error) {
  return String(error?.message ?? error).split('\n')[0];
}

async function main() {
  const project = resolve(process.argv[2] ?? '.');
  const folders = productionDependencies(project);
  const verdicts = folders.map((folder) => judgePackage(folder));
  const scripted = verdicts.filter((verdict) => verdict.reason !== 'no install script');
  for (const verdict of scripted)
    console.log(`${verdict.ok ? 'ok  ' : 'FAIL'} ${verdict.name}@${verdict.version}: ${verdict.reason}`);
  const failed = scripted.filter((verdict) => !verdict.ok);
  console.log(
    `${folders.length} production dependencies, ${scripted.length} with an install script, ${failed.length} that need it.`,
  );
  if (failed.length > 0) process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
