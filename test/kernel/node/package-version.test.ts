import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../../src/kernel/node/package-version.js';

describe('packageVersion', () => {
  it("reads the version from engram's own package.json, three folders above src/kernel/node/", () => {
    const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(packageVersion()).toBe(manifest.version);
  });
});
