#!/usr/bin/env node
// `npm test`'s pretest: the build, the type check and the format check, at the same time (three
// processes, each mostly on one core), each one's output printed whole when it ends, and a failure
// of any failing the run. The build is skipped when dist/ is newer than its sources (after
// `npm install`, whose `prepare` just built it); the type check and the format check keep caches
// in node_modules/.cache (`tsc --incremental`, `prettier --cache`), so a second run checks only
// what changed, and every file again when the compiler, prettier or their settings change.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const steps = [
  ['build', 'node scripts/build-if-stale.mjs'],
  ['typecheck', scripts.typecheck],
  ['format:check', scripts['format:check']],
];

function run([name, command]) {
  const started = Date.now();
  return new Promise((resolve) => {
    // npm puts node_modules/.bin on PATH for this script: the commands run as `npm run <name>` would.
    const child = spawn(command, { cwd: root, shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (error) => output.push(Buffer.from(`${error.message}\n`)));
    child.on('close', (code, signal) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const said = Buffer.concat(output).toString('utf8');
      process.stdout.write(
        `> ${name}: ${command} (${code === 0 ? 'ok' : `failed: ${signal ?? `exit ${code}`}`}, ${seconds} s)\n`,
      );
      if (said) process.stdout.write(said.endsWith('\n') ? said : `${said}\n`);
      resolve(code === 0);
    });
  });
}

const results = await Promise.all(steps.map(run));
if (results.includes(false)) process.exit(1);
