import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A consumer project as a user makes one: engram installed from the tarball `npm pack` makes (with
// only the dependencies package.json names), strict TypeScript and skipLibCheck false, so every
// declaration file engram ships is checked under the consumer's options. One install serves every case.
const run = promisify(execFile);
const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(PACKAGE_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types?: string }>;
  devDependencies: Record<string, string>;
};
/** Every subpath that has types: what a consumer can import. */
const ENTRIES = Object.entries(manifest.exports)
  .filter(([, target]) => typeof target === 'object' && target.types !== undefined)
  .map(([subpath]) => (subpath === '.' ? 'engram' : `engram/${subpath.slice(2)}`));

const STRICTEST = {
  strict: true,
  skipLibCheck: false,
  noEmit: true,
  target: 'ES2022',
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  noPropertyAccessFromIndexSignature: true,
  noImplicitReturns: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
};

let consumer: string;

beforeAll(async () => {
  consumer = mkdtempSync(join(tmpdir(), 'engram-consumer-'));
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', consumer], {
    cwd: PACKAGE_ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const tarball = readdirSync(consumer).find((name) => name.endsWith('.tgz'))!;
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // A Node project has @types/node; a user of engram/ai-sdk has `ai` (an optional peer dependency).
  await run(
    'npm',
    [
      'install',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      `./${tarball}`,
      `@types/node@${manifest.devDependencies['@types/node']}`,
      `ai@${manifest.devDependencies.ai}`,
    ],
    { cwd: consumer, maxBuffer: 64 * 1024 * 1024 },
  );
}, 240_000);

afterAll(() => {
  if (consumer) rmSync(consumer, { recursive: true, force: true });
});

/** Type-checks `source` in the consumer; returns the errors in engram's declarations or the consumer's file. */
async function typeCheck(name: string, source: string, options: Record<string, unknown>): Promise<string[]> {
  writeFileSync(join(consumer, `${name}.ts`), source);
  writeFileSync(
    join(consumer, `${name}.tsconfig.json`),
    JSON.stringify({ compilerOptions: options, files: [`${name}.ts`] }),
  );
  const output = await run(process.execPath, [TSC, '-p', `${name}.tsconfig.json`], { cwd: consumer }).then(
    (result) => result.stdout,
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
  // `ai`'s own declarations do not pass skipLibCheck false (its json-schema types): not engram's to fix.
  return output
    .split('\n')
    .filter((line) => / error TS\d+/.test(line))
    .filter((line) => line.startsWith(`${name}.ts`) || line.startsWith('node_modules/engram/'));
}

const importEvery = ENTRIES.map((entry, index) => `import * as entry${index} from '${entry}';`)
  .concat(`export const entries = [${ENTRIES.map((_, index) => `entry${index}`).join(', ')}];`)
  .join('\n');

// Uses the API, not only its names: the types a consumer writes against must be usable in strict mode.
const usage = `
import { Engram, EngramError, isEngramError, type RecallResult, type Memory } from 'engram';
import { openEngram } from 'engram/node';
export async function firstNames(result: RecallResult): Promise<string[]> {
  return result.memories.map((entry) => entry.memory.name + ':' + entry.parts.score.toFixed(2));
}
export async function main(): Promise<Memory | undefined> {
  await using opened = await openEngram({ cwd: process.cwd() });
  const engram: Engram = opened.engram;
  try {
    return await engram.remember({ content: 'We deploy on Fridays', type: 'project' });
  } catch (error) {
    if (isEngramError(error) && error.code === 'INVALID_INPUT') return undefined;
    throw error instanceof EngramError ? error : new Error(String(error));
  }
}
`;

describe('a strict TypeScript consumer (skipLibCheck false)', () => {
  it('names every exported entry point with types', () => {
    expect(ENTRIES).toEqual(expect.arrayContaining(['engram', 'engram/node', 'engram/testing', 'engram/ai-sdk']));
  });

  it('type-checks every entry point with NodeNext resolution and the strictest flags', async () => {
    const options = { ...STRICTEST, module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023'] };
    expect(await typeCheck('every-nodenext', importEvery, options)).toEqual([]);
  }, 120_000);

  it('type-checks every entry point with bundler resolution', async () => {
    const options = { ...STRICTEST, module: 'ESNext', moduleResolution: 'Bundler' };
    expect(await typeCheck('every-bundler', importEvery, options)).toEqual([]);
  }, 120_000);

  it('type-checks code written against the API (recall results, errors, await using)', async () => {
    const options = {
      ...STRICTEST,
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2023', 'ESNext.Disposable'],
    };
    expect(await typeCheck('usage', usage, options)).toEqual([]);
  }, 120_000);

  it('type-checks the core entry without Node types (a browser or edge project: DOM lib, no @types/node)', async () => {
    const options = {
      ...STRICTEST,
      module: 'ESNext',
      moduleResolution: 'Bundler',
      lib: ['ES2022', 'DOM'],
      types: [],
    };
    const source = `import { Engram, DEFAULT_SETTINGS } from 'engram';\nexport const both = [Engram, DEFAULT_SETTINGS] as const;\n`;
    expect(await typeCheck('core-without-node', source, options)).toEqual([]);
  }, 120_000);
});
