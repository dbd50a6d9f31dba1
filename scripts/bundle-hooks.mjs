// `npm run build`: the Claude Code hooks' code as one module plus a few chunks for what each event
// loads on demand (dist/surfaces/claude-code/hook-main.bundle.js). A hook is a whole process per
// event and loading ~100 separate modules was most of its time; the bundle loads the same code from
// a few files. Packages stay external (resolved from node_modules as before). Every file is written
// in dist/surfaces/claude-code/, where hook-main.js is, so paths computed from import.meta.url
// (hook-worker.js beside it, package.json three folders up) resolve the same. Without esbuild (or if
// it fails) the old bundle is removed and the plugin's launcher loads hook-main.js instead.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const folder = fileURLToPath(new URL('../dist/surfaces/claude-code/', import.meta.url));
function removeBundle() {
  for (const name of readdirSync(folder)) {
    if (name === 'hook-main.bundle.js' || /^hook-bundle-[A-Za-z0-9]+\.js$/.test(name))
      rmSync(join(folder, name), { force: true });
  }
}

removeBundle();
let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  console.error('engram: esbuild is not installed: the hooks run unbundled (slower to start)');
  process.exit(0);
}
try {
  await esbuild.build({
    entryPoints: { 'hook-main.bundle': join(folder, 'hook-main.js') },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outdir: folder,
    chunkNames: 'hook-bundle-[hash]',
    logLevel: 'warning',
  });
} catch (error) {
  removeBundle();
  console.error(
    `engram: the hooks bundle was not built (${error instanceof Error ? error.message : error}): they run unbundled`,
  );
}
