import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

// What `npm pack` ships: a LICENSE matching package.json's "license", and source maps whose
// sources are in the package too (a map pointing at files that are not shipped is noise in
// every stack trace and debugger). The list comes from npm itself (`npm pack --dry-run`).
const run = promisify(execFile);
const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

let packed: Set<string>;

beforeAll(async () => {
  if (!existsSync(join(PACKAGE_ROOT, 'dist', 'index.js.map')))
    throw new Error('Run `npm run build` first: the package is checked as npm would pack it.');
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: PACKAGE_ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [report] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
  packed = new Set(report!.files.map((file) => file.path));
}, 120_000);

describe('the packed package', () => {
  it('ships a LICENSE whose text is the license package.json names', () => {
    expect(packed.has('LICENSE')).toBe(true);
    const license = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { license: string })
      .license;
    expect(license).toBe('MIT');
    expect(readFileSync(join(PACKAGE_ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
  });

  it('ships the source of every source map it ships', () => {
    const maps = [...packed].filter((path) => path.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourceRoot } = JSON.parse(readFileSync(join(PACKAGE_ROOT, map), 'utf8')) as {
        sources: string[];
        sourceRoot?: string;
      };
      for (const source of sources) {
        const path = normalize(join(dirname(map), sourceRoot ?? '', source))
          .split('\\')
          .join('/');
        if (!packed.has(path)) missing.push(`${map} → ${path}`);
      }
    }
    expect(missing.slice(0, 10)).toEqual([]);
  });
});
