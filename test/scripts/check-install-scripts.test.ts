import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without type declarations
import { judgePackage, productionDependencies } from '../../scripts/check-install-scripts.mjs';

interface Verdict {
  name: string;
  ok: boolean;
  reason: string;
}
const judge = judgePackage as (directory: string) => Verdict;

const root = mkdtempSync(join(tmpdir(), 'engram-install-scripts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fake package folder: its package.json and the given files (paths relative to it). */
function fakePackage(name: string, scripts: Record<string, string>, files: string[] = []): string {
  const directory = join(root, name);
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name, version: '1.0.0', scripts }));
  for (const file of files) {
    mkdirSync(join(directory, file, '..'), { recursive: true });
    writeFileSync(join(directory, file), '');
  }
  return directory;
}

const here = `${process.platform}-${process.arch}`;

describe('check-install-scripts', () => {
  it('passes a package without install scripts (test and build scripts do not count)', () => {
    expect(judge(fakePackage('plain', { test: 'vitest', build: 'tsc', prepare: 'tsc' })).ok).toBe(true);
  });

  it('passes node-gyp-build when prebuilds/ holds a binary for this platform', () => {
    const verdict = judge(
      fakePackage('shipped', { install: 'node-gyp-build' }, [`prebuilds/${here}/shipped.napi.node`]),
    );
    expect(verdict).toMatchObject({ ok: true });
    expect(verdict.reason).toContain(`prebuilds/${here}/shipped.napi.node`);
  });

  it("fails better-sqlite3's kind: a download or a compile only the script can do", () => {
    const verdict = judge(
      fakePackage('downloads', { install: 'prebuild-install || node-gyp rebuild --release' }, ['binding.gyp']),
    );
    expect(verdict.ok).toBe(false);
    expect(verdict.reason).toContain('prebuild-install');
  });

  it('fails node-gyp-build with no binary for this platform, or only a local build/ folder', () => {
    expect(
      judge(fakePackage('elsewhere', { install: 'node-gyp-build' }, ['prebuilds/plan9-mips/x.napi.node'])).ok,
    ).toBe(false);
    const local = judge(fakePackage('local-build', { install: 'node-gyp-build' }, ['build/Release/local.node']));
    expect(local.ok).toBe(false);
    expect(local.reason).toContain('local build');
  });

  it('fails a bare binding.gyp (npm runs node-gyp rebuild) and any preinstall or postinstall', () => {
    expect(judge(fakePackage('gyp-only', {}, ['binding.gyp'])).ok).toBe(false);
    expect(judge(fakePackage('post', { postinstall: 'node fetch-binary.js' })).ok).toBe(false);
    expect(
      judge(fakePackage('pre', { preinstall: 'node-gyp-build' }, [`prebuilds/${here}/pre.napi.node`, 'x'])).ok,
    ).toBe(true);
    expect(judge(fakePackage('mixed', { install: 'node-gyp-build', postinstall: 'node setup.js' })).ok).toBe(false);
  });

  it("passes engram's own production tree", () => {
    const folders = (productionDependencies as (project: string) => string[])(resolve(import.meta.dirname, '../..'));
    expect(folders.length).toBeGreaterThan(10);
    expect(folders.map(judge).filter((verdict) => !verdict.ok)).toEqual([]);
  });
});
