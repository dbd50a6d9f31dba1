import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSqliteStore } from '../../support/temporary-store.js';
import { ENGRAM_BINARY, createWorkspace, type Workspace, spawnEngram } from '../../support/cli-harness.js';
import { countsOf, expectSameStores, NO_RECORDS, readAll, seedRichStore } from '../../support/migrate-seed.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
let workspace: Workspace;
let sourcePath: string;

beforeAll(async () => {
  workspace = createWorkspace();
  sourcePath = join(workspace.root, 'source.db');
  await withSqliteStore(sourcePath, (store) => seedRichStore(store, 400, 11));
});

afterAll(() => workspace.cleanup());

async function expectSameFiles(left: string, right: string): Promise<void> {
  await withSqliteStore(left, (a) => withSqliteStore(right, (b) => expectSameStores(a, b)));
}

const digest = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('engram migrate', () => {
  it('copies a SQLite store into a new one exactly and reports counts and checksums in --json', async () => {
    const targetPath = join(workspace.root, 'copy.db');
    const report = await workspace.json(['migrate', '--from', sourcePath, '--to', `sqlite://${targetPath}`]);
    const records = await withSqliteStore(sourcePath, readAll);
    const counts = countsOf(records);
    expect(counts.jobs).toBeGreaterThan(0);
    expect(counts.checkpoints).toBeGreaterThan(0);
    expect(report).toMatchObject({
      from: sourcePath,
      to: `sqlite://${targetPath}`,
      verified: true,
      resumed: false,
      written: counts,
      skipped: NO_RECORDS,
      vectorSpace: { model: 'migrate-test-embedder', dimensions: 8 },
      source: { counts },
      target: { counts },
    });
    expect(report.target.checksums).toEqual(report.source.checksums);
    for (const checksum of Object.values(report.source.checksums)) expect(checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    await expectSameFiles(sourcePath, targetPath);

    // And back again, named by a relative path: the copy of the copy is the same store.
    const back = await workspace.json(['migrate', '--from', targetPath, '--to', 'back.db']);
    expect(back.source.checksums).toEqual(report.source.checksums);
    await expectSameFiles(sourcePath, join(workspace.cwd, 'back.db'));
  });

  it('prints a readable report without --json, and no progress bar when stderr is not a terminal', async () => {
    const result = await workspace.run([
      'migrate',
      '--from',
      `sqlite://${sourcePath}`,
      '--to',
      join(workspace.root, 'text.db'),
      '--page-size',
      '64',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/memories\s+\d+ \(copied \d+, already there 0\)/);
    expect(result.stdout).toMatch(/checksum history\s+sha256:[0-9a-f]{64}/);
    expect(result.stdout).toContain('verified');
  });

  it.skipIf(!hasScript)('draws a progress bar per phase on a terminal', async () => {
    const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
    const command = [
      process.execPath,
      ENGRAM_BINARY,
      'migrate',
      '--from',
      sourcePath,
      '--to',
      join(workspace.root, 'terminal.db'),
      '--page-size',
      '50',
    ]
      .map(quote)
      .join(' ');
    const output = await new Promise<string>((resolve) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], {
        cwd: workspace.cwd,
        env: { PATH: process.env.PATH, HOME: workspace.home, ENGRAM_HOME: workspace.home, TERM: 'xterm' },
      });
      let text = '';
      child.stdout.on('data', (chunk) => (text += chunk));
      child.on('close', () => resolve(text));
    });
    for (const label of ['memories', 'history', 'vectors', 'verifying'])
      expect(output).toMatch(new RegExp(`\\r${label}\\s+\\[#+\\] \\d+/\\d+`));
    expect(output).toContain('verified');
  });

  it('resumes after the process was killed mid-copy, skipping what was already copied', async () => {
    const bigSource = join(workspace.root, 'big-source.db');
    await withSqliteStore(bigSource, (store) => seedRichStore(store, 2_000, 12));
    const targetPath = join(workspace.root, 'killed.db');
    const child = spawnEngram(workspace, ['migrate', '--from', bigSource, '--to', targetPath, '--page-size', '2']);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let finished = false;
    void exited.then(() => (finished = true));
    // Kill it once some pages are in: polled through a separate read-only connection.
    for (;;) {
      expect(finished, 'migrate finished before it could be interrupted').toBe(false);
      if (existsSync(targetPath) && memoryCount(targetPath) >= 100) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    child.kill('SIGKILL');
    await exited;
    const copied = memoryCount(targetPath);
    const check = openSqlite(targetPath);
    expect((check.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok');
    closeSqlite(check);
    const total = await withSqliteStore(bigSource, async (store) => (await readAll(store)).memories.length);
    expect(copied).toBeGreaterThanOrEqual(100);
    expect(copied).toBeLessThan(total);

    const report = await workspace.json(['migrate', '--from', bigSource, '--to', targetPath]);
    expect(report).toMatchObject({
      resumed: true,
      verified: true,
      skipped: { memories: copied },
      written: { memories: total - copied },
    });
    await expectSameFiles(bigSource, targetPath);
  });

  it('refuses malformed, hostile and contradictory arguments with exit code 2 and changes nothing', async () => {
    const before = digest(sourcePath);
    const target = join(workspace.root, 'never.db');
    const link = join(workspace.root, 'source-link.db');
    if (!existsSync(link)) symlinkSync(sourcePath, link);
    const cases: Array<[string[], string]> = [
      [['migrate'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath], 'INVALID_INPUT'],
      [['migrate', '--to', target], 'INVALID_INPUT'],
      [['migrate', '--from', '', '--to', target], 'INVALID_INPUT'],
      [['migrate', '--from', '   ', '--to', target], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', ':memory:'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', sourcePath], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', `sqlite://${sourcePath}`], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', link], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, '--page-size', '0'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, '--page-size', 'lots'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, '--page-size', '10001'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, 'extra'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, '--force'], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, '--store', target], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', `/tmp/${'x'.repeat(5_000)}.db`], 'INVALID_INPUT'],
      [['migrate', '--from', sourcePath, '--to', target, '--page-size', '-1'], 'INVALID_INPUT'],
      [['migrate', '--from', 'mysql://root@localhost/engram', '--to', target], 'CONFIG_INVALID'],
    ];
    // Four at a time: each is a whole process.
    for (let start = 0; start < cases.length; start += 4) {
      await Promise.all(
        cases.slice(start, start + 4).map(async ([args, code]) => {
          const result = await workspace.json(args, 2);
          expect(result.error.code, args.join(' ').slice(0, 120)).toBe(code);
          expect(result.error.message).toMatch(/\S/);
        }),
      );
    }
    expect(existsSync(target)).toBe(false);
    expect(digest(sourcePath)).toBe(before);
  });

  it('says what is wrong with a missing, empty or unreadable source and a target holding other data', async () => {
    const missing = await workspace.json(
      ['migrate', '--from', join(workspace.root, 'nope.db'), '--to', join(workspace.root, 'a.db')],
      1,
    );
    expect(missing.error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('nope.db') });
    expect(existsSync(join(workspace.root, 'a.db'))).toBe(false);

    const empty = join(workspace.root, 'empty.db');
    await withSqliteStore(empty, async () => undefined);
    const nothing = await workspace.json(['migrate', '--from', empty, '--to', join(workspace.root, 'b.db')], 1);
    expect(nothing.error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('nothing to copy') });

    const notes = join(workspace.root, 'notes.txt');
    writeFileSync(notes, 'not a database\n');
    const corrupt = await workspace.json(['migrate', '--from', notes, '--to', join(workspace.root, 'c.db')], 3);
    expect(corrupt.error.code).toBe('STORE_CORRUPT');
    const intoNotes = await workspace.json(['migrate', '--from', sourcePath, '--to', notes], 3);
    expect(intoNotes.error.code).toBe('STORE_CORRUPT');
    expect(readFileSync(notes, 'utf8')).toBe('not a database\n');

    const other = join(workspace.root, 'other.db');
    await withSqliteStore(other, (store) =>
      store.create({ scope: 'global', content: 'Somebody else’s memory.' }, { actor: 'test' }).then(() => undefined),
    );
    const before = digest(other);
    const conflict = await workspace.json(['migrate', '--from', sourcePath, '--to', other], 2);
    expect(conflict.error.code).toBe('CONFLICT');
    expect(conflict.error.message).toContain('holds different data');
    expect(digest(other)).toBe(before);

    // A password in a Postgres URL is never printed, whatever goes wrong.
    const secret = await workspace.run([
      'migrate',
      '--from',
      'postgres://engram:hunter2-secret@127.0.0.1:1/engram?connect_timeout=1',
      '--to',
      join(workspace.root, 'd.db'),
      '--json',
    ]);
    expect(secret.code).not.toBe(0);
    expect(secret.stdout + secret.stderr).not.toContain('hunter2-secret');
    expect(JSON.parse(secret.stdout).error.code).toMatch(/^[A-Z_]+$/);
  });
});

function memoryCount(path: string): number {
  try {
    const db = openSqlite(path, { readOnly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM memories').get() as { n: number }).n;
    } finally {
      closeSqlite(db);
    }
  } catch {
    return 0;
  }
}
