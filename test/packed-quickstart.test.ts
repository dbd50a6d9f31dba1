import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PACKAGE_ROOT,
  codeBlocks,
  documentationPages,
  engramInvocations,
  type CodeBlock,
} from './support/markdown-examples.js';

// README.md's quickstart "without a checkout" (the block noted `packed-quickstart`), as a reader
// runs it: the package as `npm pack` writes it, alone in an empty folder, and a shell whose PATH has
// Node and npm and nothing of this checkout, with a home of its own. The block runs as written; only
// npm's download cache is this machine's (offline when it holds every dependency, else the registry).

const run = promisify(execFile);

let work = '';
let folder = '';
let home = '';
let block: CodeBlock;

beforeAll(async () => {
  if (!existsSync(join(PACKAGE_ROOT, 'dist', 'surfaces', 'cli', 'main.js')))
    throw new Error('Run `npm run build` first: the package is packed as npm would pack it.');
  const found = documentationPages()
    .filter((page) => page.path === 'README.md')
    .flatMap(codeBlocks)
    .filter((candidate) => candidate.note?.id === 'packed-quickstart');
  expect(found.length, 'README.md has one block noted `not run here (packed-quickstart): …`').toBe(1);
  block = found[0]!;
  work = mkdtempSync(join(tmpdir(), 'engram-packed-quickstart-'));
  // --ignore-scripts: `prepare` would build again; dist/ is built, as `npm pack` would leave it.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: PACKAGE_ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  folder = join(work, 'quickstart');
  home = join(work, 'home');
  mkdirSync(folder);
  mkdirSync(home);
  copyFileSync(join(work, filename), join(folder, filename));
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A reader's shell: Node and npm on PATH, the system's tools, no ENGRAM_ variable, no model key. */
async function readerEnvironment(): Promise<NodeJS.ProcessEnv> {
  const { stdout: cache } = await run('npm', ['config', 'get', 'cache']);
  // This Node first (CI runs the suite on Node 24 from a folder of its own), then the folder npm is in.
  const npmFolder = (process.env.PATH ?? '')
    .split(delimiter)
    .find((folder) => folder && existsSync(join(folder, 'npm')));
  const folders = [dirname(process.execPath), npmFolder, '/usr/local/bin', '/usr/bin', '/bin'];
  return {
    PATH: [...new Set(folders.filter(Boolean))].join(delimiter),
    HOME: home,
    LANG: 'C.UTF-8',
    npm_config_cache: cache.trim(),
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
}

describe("README.md's quickstart without a checkout", () => {
  it('installs the packed package into an empty folder, remembers and recalls as the README says', async () => {
    // What the block remembers is what its recall must find.
    const remembered = engramInvocations(block.code).find((argv) => argv[0] === 'remember')?.[1];
    expect(remembered, 'the block remembers something').toBeTruthy();
    expect(
      engramInvocations(block.code).some((argv) => argv[0] === 'recall'),
      'the block recalls',
    ).toBe(true);

    const result = await run('bash', ['-euo', 'pipefail', '-c', block.code], {
      cwd: folder,
      env: await readerEnvironment(),
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { code?: number; stdout?: string; stderr?: string }) => {
      throw new Error(`the quickstart exited ${error.code}\n${error.stdout}\n${error.stderr}`);
    });

    expect(result.stdout).toContain(remembered);
    // engram came from the tarball, and the store is the reader's ~/.engram.
    expect(existsSync(join(folder, 'node_modules', 'engram', 'dist', 'surfaces', 'cli', 'main.js'))).toBe(true);
    expect(existsSync(join(home, '.engram', 'engram.db'))).toBe(true);
    expect(readdirSync(folder).sort()).toEqual(
      [
        readdirSync(work).find((name) => name.endsWith('.tgz'))!,
        'node_modules',
        'package-lock.json',
        'package.json',
      ].sort(),
    );
  }, 600_000);
});
