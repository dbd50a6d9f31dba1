import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ENGRAM_BINARY } from '../../support/cli-harness.js';

// Issue 17 item 4: whatever the umask, the store files are 0600 and ENGRAM_HOME is 0700, and an
// ENGRAM_HOME left looser (older version, other umask) is tightened when engram opens it. Each
// case runs in a child process started under the umask, as a user's shell would start engram.

const STORE_MODULE = fileURLToPath(new URL('../../../dist/adapters/sqlite/sqlite-memory-store.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'engram-modes-'));

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs `node <args>` under a umask, with ENGRAM_HOME set; returns stdout. */
function underUmask(umask: string, home: string, args: readonly string[]): string {
  const quoted = args.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ');
  return execFileSync('/bin/sh', ['-c', `umask ${umask}; exec '${process.execPath}' ${quoted}`], {
    env: { ...process.env, ENGRAM_HOME: home, ENGRAM_PROJECT: 'modes-test' },
    encoding: 'utf8',
  });
}

/** Every file and folder under `directory` (itself included) with its permission bits, as octal. */
function modes(directory: string): Record<string, string> {
  const found: Record<string, string> = { '.': (statSync(directory).mode & 0o777).toString(8) };
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    found[path.slice(directory.length + 1)] = (statSync(path).mode & 0o777).toString(8);
  }
  return found;
}

/** A child that opens a store, writes, and prints the modes while the connection (and so -wal, -shm) is open. */
const OPEN_AND_LIST = `
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const { SqliteMemoryStore } = await import(process.argv[1]);
const home = process.env.ENGRAM_HOME;
const store = new SqliteMemoryStore({ path: join(home, 'nested', 'engram.db') });
await store.open();
await store.create({ scope: 'global', content: 'A private fact.' }, { actor: 'modes' });
const out = {};
for (const path of [home, join(home, 'nested'), ...readdirSync(join(home, 'nested')).map((name) => join(home, 'nested', name))])
  out[path.slice(home.length) || '.'] = (statSync(path).mode & 0o777).toString(8);
await store.close();
console.log(JSON.stringify(out));
`;

describe('store file modes', () => {
  for (const umask of ['000', '022', '002']) {
    it(`umask ${umask}: engram.db, -wal and -shm are 0600 and their folders 0700 while open`, () => {
      const home = join(root, `open-${umask}`);
      const seen = JSON.parse(underUmask(umask, home, ['--input-type=module', '-e', OPEN_AND_LIST, STORE_MODULE]));
      expect(seen).toEqual({
        '.': '700',
        '/nested': '700',
        '/nested/engram.db': '600',
        '/nested/engram.db-wal': '600',
        '/nested/engram.db-shm': '600',
      });
    });

    it(`umask ${umask}: every file the CLI leaves in ENGRAM_HOME is 0600, every folder 0700`, () => {
      const home = join(root, `cli-${umask}`);
      underUmask(umask, home, [ENGRAM_BINARY, 'remember', 'The user prefers tabs.', '--json']);
      underUmask(umask, home, [ENGRAM_BINARY, 'stats', '--json']);
      const found = modes(home);
      expect(Object.keys(found)).toContain('engram.db');
      const loose = Object.entries(found).filter(([path, mode]) =>
        statSync(join(home, path)).isDirectory() ? mode !== '700' : mode !== '600',
      );
      expect(loose).toEqual([]);
    });
  }

  it('an existing ENGRAM_HOME with loose modes is tightened when engram opens it', () => {
    const home = join(root, 'loose');
    mkdirSync(home, { mode: 0o755 });
    underUmask('022', home, [ENGRAM_BINARY, 'remember', 'The user prefers spaces.', '--json']);
    writeFileSync(join(home, 'config.json'), '{}\n', { mode: 0o644 });
    chmodSync(home, 0o755);
    chmodSync(join(home, 'engram.db'), 0o644);
    chmodSync(join(home, 'config.json'), 0o666);
    underUmask('022', home, [ENGRAM_BINARY, 'list', '--json']);
    expect(modes(home)).toMatchObject({ '.': '700', 'engram.db': '600', 'config.json': '600' });
  });
});
