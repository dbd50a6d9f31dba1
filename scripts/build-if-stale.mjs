#!/usr/bin/env node
// `npm start` without a TypeScript compile on every start: `prepare` builds once at install, and
// this (the `prestart` script, and `npm test`'s pretest) rebuilds only when a file under src/, a
// tsconfig, package.json or a build script is newer than the last build, whose start time
// dist/.build-stamp holds.
//   node scripts/build-if-stale.mjs            rebuild if stale
//   node scripts/build-if-stale.mjs --force    build now (npm run build)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampPath = join(root, 'dist', '.build-stamp');

function newestMtime(path) {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  let newest = stats.mtimeMs; // a deleted file shows as its folder's change
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

const COMPILED = /^(.*)\.(?:js|js\.map|d\.ts|d\.ts\.map)$/;

/** Removes what tsc wrote for a source file that no longer exists (the hooks' bundle and copied files are the build's own). */
function removeOrphans(folder, sources) {
  if (!existsSync(folder)) return;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) {
      removeOrphans(path, join(sources, entry.name));
      continue;
    }
    const compiled = COMPILED.exec(entry.name);
    if (!compiled || /^hook-(?:main\.bundle|bundle-[A-Za-z0-9]+)\.js$/.test(entry.name)) continue;
    const stem = compiled[1];
    if (!existsSync(join(sources, `${stem}.ts`)) && !existsSync(join(sources, `${stem}.js`)))
      rmSync(path, { force: true });
  }
}

function writeStamp(startedAt) {
  mkdirSync(dirname(stampPath), { recursive: true });
  writeFileSync(stampPath, `${Math.floor(startedAt)}\n`);
}

{
  const inputs = [
    'src',
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'scripts/build-if-stale.mjs',
    'scripts/copy-viewer.mjs',
    'scripts/bundle-hooks.mjs',
  ]
    .map((name) => join(root, name))
    .filter((path) => existsSync(path));
  const newest = Math.max(...inputs.map(newestMtime));
  const built = existsSync(stampPath) ? Number(readFileSync(stampPath, 'utf8')) : 0;
  const force = process.argv[2] === '--force';
  if (force || !(built > newest) || !existsSync(join(root, 'dist', 'surfaces', 'cli', 'main.js'))) {
    const startedAt = Date.now();
    if (!force) console.error('engram: sources changed since the last build; building…');
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: root,
        stdio: 'inherit',
      },
    );
    // A source file deleted or renamed leaves its compiled files behind (tsc never removes one): they
    // would be packed, and a source map naming a source that is gone.
    removeOrphans(join(root, 'dist'), join(root, 'src'));
    // The viewer's static files are not TypeScript: copied beside the compiled code.
    execFileSync(process.execPath, [join(root, 'scripts', 'copy-viewer.mjs')], { cwd: root, stdio: 'inherit' });
    // The hooks' code bundled into a few files: a hook process loads it faster (scripts/bundle-hooks.mjs).
    execFileSync(process.execPath, [join(root, 'scripts', 'bundle-hooks.mjs')], { cwd: root, stdio: 'inherit' });
    // Written after a build that succeeded, with its start time: an edit during the build is newer.
    writeStamp(startedAt);
  }
}
