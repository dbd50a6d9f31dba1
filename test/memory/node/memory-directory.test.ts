import { execFileSync } from 'node:child_process';
import { expectEngramError } from '../../support/expect-engram-error.js';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { perTest } from '../../support/per-test.js';
import { readMemoryDirectory, writeMemoryDirectory } from '../../../src/memory/node/memory-directory.js';
import { normalizeNewMemory, type Memory, type NewMemory } from '../../../src/memory/memory.js';
import { buildMemoryIndex } from '../../../src/memory/memory-index.js';

const NOW = '2025-03-01T12:00:00.000Z';
const SECRET = 'TOP SECRET outside the memory folder';

// Per test: `base` holds the memory folder (`memory`, not made yet) and, beside it, `outside` with a secret.
const folders = perTest(
  'the test folders',
  () => {
    const base = mkdtempSync(join(tmpdir(), 'engram-memory-directory-'));
    const outside = join(base, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.md'), `---\nname: secret\n---\n${SECRET}\n`);
    return { base, memory: join(base, 'project', 'memory'), outside };
  },
  ({ base }) => rmSync(base, { recursive: true, force: true }),
);
let idCounter: number;

beforeEach(() => {
  idCounter = 0;
});

function makeMemory(id: string, input: Partial<NewMemory> = {}): Memory {
  return normalizeNewMemory({ scope: 'project:acme', content: `Fact ${id}.`, ...input }, { now: NOW, id });
}

function fallback() {
  return { scope: 'project:imported', now: NOW, generateId: () => `generated-${(idCounter += 1)}` };
}

function writeFile(name: string, text: string | Buffer): void {
  mkdirSync(folders.memory, { recursive: true });
  writeFileSync(join(folders.memory, name), text);
}

describe('writeMemoryDirectory', () => {
  const memories = [
    makeMemory('m1', {
      type: 'user',
      name: 'user-role',
      description: 'Data engineer',
      content: 'The user is a data engineer.',
    }),
    makeMemory('m2', {
      type: 'feedback',
      name: 'testing',
      content: '---\nNo mocks.\n---\n',
      importance: 0.9,
      hitCount: 4,
    }),
    makeMemory('m3', {
      type: 'project',
      name: 'testing',
      content: 'Second memory with the same name. 数据库',
      archived: true,
    }),
  ];

  it('writes one topic file per memory and MEMORY.md last, and reads them back unchanged', async () => {
    const result = await writeMemoryDirectory(folders.memory, memories);
    expect(result.files).toEqual([
      join(folders.memory, 'testing-2.md'),
      join(folders.memory, 'testing.md'),
      join(folders.memory, 'user-role.md'),
      join(folders.memory, 'MEMORY.md'),
    ]);
    expect(readdirSync(folders.memory).sort()).toEqual(['MEMORY.md', 'testing-2.md', 'testing.md', 'user-role.md']);
    expect(readFileSync(join(folders.memory, 'MEMORY.md'), 'utf8')).toBe(buildMemoryIndex(memories).text);
    // m3 is archived: its topic file is written (marked `archived: true`), MEMORY.md never lists it.
    expect(result.index).toMatchObject({ truncated: false, shown: 2, total: 2, inactive: 1 });
    expect(readFileSync(join(folders.memory, 'MEMORY.md'), 'utf8')).not.toContain('testing-2.md');
    expect(readFileSync(join(folders.memory, 'testing-2.md'), 'utf8')).toMatch(/archived: true/);

    const read = await readMemoryDirectory(folders.memory, fallback());
    expect(read.errors).toEqual([]);
    expect(read.warnings).toEqual([]);
    const restored = read.memories.map((input) =>
      normalizeNewMemory(input, { now: '2030-01-01T00:00:00.000Z', id: 'unused' }),
    );
    expect(restored.sort((a, b) => a.id.localeCompare(b.id))).toStrictEqual(memories);
  });

  it('writes byte-identical files when run twice', async () => {
    await writeMemoryDirectory(folders.memory, memories);
    const first = readdirSync(folders.memory).map((name) => readFileSync(join(folders.memory, name), 'utf8'));
    await writeMemoryDirectory(folders.memory, [...memories].reverse());
    expect(readdirSync(folders.memory).map((name) => readFileSync(join(folders.memory, name), 'utf8'))).toEqual(first);
  });

  it('replaces a symlink at a target name instead of writing through it', async () => {
    const victim = join(folders.outside, 'victim.txt');
    writeFileSync(victim, 'do not touch');
    writeFile('placeholder', '');
    symlinkSync(victim, join(folders.memory, 'user-role.md'));
    symlinkSync(victim, join(folders.memory, 'MEMORY.md'));
    await writeMemoryDirectory(folders.memory, memories);
    expect(readFileSync(victim, 'utf8')).toBe('do not touch');
    expect(lstatSync(join(folders.memory, 'user-role.md')).isSymbolicLink()).toBe(false);
    expect(lstatSync(join(folders.memory, 'MEMORY.md')).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(folders.memory, 'user-role.md'), 'utf8')).toContain('The user is a data engineer.');
  });

  it('leaves no temporary files behind, even when a write fails', async () => {
    mkdirSync(join(folders.memory, 'user-role.md'), { recursive: true });
    const error = await expectEngramError(writeMemoryDirectory(folders.memory, memories), 'STORE_ERROR');
    expect(error.message).toContain('user-role.md');
    expect(readdirSync(folders.memory).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    await writeMemoryDirectory(join(folders.base, 'clean'), memories);
    expect(readdirSync(join(folders.base, 'clean')).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('refuses bad input before writing anything', async () => {
    const memory = folders.memory;
    const error = await expectEngramError(writeMemoryDirectory(memory, [memories[0]!, memories[0]!]), 'INVALID_INPUT');
    expect(() => readdirSync(memory)).toThrow(/ENOENT/);
    await expect(writeMemoryDirectory(memory, memories, { maxLines: -1 })).rejects.toThrow(/maxLines/);
    expect(() => readdirSync(memory)).toThrow(/ENOENT/);
  });

  it('keeps MEMORY.md within its caps for a large store', async () => {
    const many = Array.from({ length: 500 }, (_unused, index) =>
      makeMemory(`bulk-${index}`, { name: `bulk-${index}` }),
    );
    const result = await writeMemoryDirectory(folders.memory, many, { maxLines: 50 });
    expect(result.files).toHaveLength(501);
    const index = readFileSync(join(folders.memory, 'MEMORY.md'), 'utf8');
    expect(index.split('\n').length - 1).toBe(50);
    expect(index).toContain('> WARNING: MEMORY.md shows 46 of 500 memories');
  });
});

describe('readMemoryDirectory', () => {
  it('reads both Claude Code frontmatter variants and plain Markdown files', async () => {
    writeFile(
      'MEMORY.md',
      '- [User role](user_role.md) — data engineer\n- [Testing](feedback_testing.md) — no mocks\n',
    );
    writeFile(
      'user_role.md',
      '---\nname: user-role\ndescription: The user is a data engineer\nmetadata:\n  type: user\n---\n\nThe user is a data engineer.\n',
    );
    writeFile(
      'feedback_testing.md',
      '---\r\nname: Testing Without Mocks\r\ndescription: Use the real database\r\ntype: feedback\r\n---\r\nNo mocks.\r\n**Why:** a mock hid a bug.\r\n',
    );
    writeFile('plain notes.md', '# Deploys\n\nDeploys happen on Tuesdays.\n');
    writeFile('notes.txt', 'not markdown');
    writeFile('.hidden.md', 'hidden');
    mkdirSync(join(folders.memory, 'nested'));
    writeFileSync(join(folders.memory, 'nested', 'deep.md'), 'not read: subfolders are not scanned');

    const read = await readMemoryDirectory(folders.memory, fallback());
    expect(read.errors).toEqual([]);
    expect(read.warnings).toEqual([]);
    expect(read.memories).toStrictEqual([
      {
        id: 'generated-1',
        scope: 'project:imported',
        content: 'No mocks.\n**Why:** a mock hid a bug.',
        type: 'feedback',
        name: 'testing-without-mocks',
        description: 'Use the real database',
      },
      {
        id: 'generated-2',
        scope: 'project:imported',
        content: '# Deploys\n\nDeploys happen on Tuesdays.',
        name: 'plain-notes',
      },
      {
        id: 'generated-3',
        scope: 'project:imported',
        content: 'The user is a data engineer.',
        type: 'user',
        name: 'user-role',
        description: 'The user is a data engineer',
      },
    ]);
  });

  it('never reads outside the folder, whatever MEMORY.md or a symlink points at', async () => {
    writeFile(
      'MEMORY.md',
      [
        '- [Passwd](../../etc/passwd) — traversal',
        '- [Secret](../../outside/secret.md) — traversal to a real file',
        `- [Absolute](${join(folders.outside, 'secret.md')}) — absolute path`,
        '- [Missing](missing.md) — dangling',
        '',
      ].join('\n'),
    );
    writeFile('good.md', '---\nname: good\n---\nA good memory.\n');
    symlinkSync(join(folders.outside, 'secret.md'), join(folders.memory, 'secret.md'));
    symlinkSync('/etc/passwd', join(folders.memory, 'passwd.md'));
    symlinkSync(join(folders.memory, 'nowhere.md'), join(folders.memory, 'dangling.md'));
    mkdirSync(join(folders.memory, 'inner'));
    writeFileSync(join(folders.memory, 'inner', 'target.md'), '---\nname: linked-inside\n---\nInside the folder.\n');
    symlinkSync(join(folders.memory, 'inner', 'target.md'), join(folders.memory, 'inside-link.md'));

    const read = await readMemoryDirectory(folders.memory, fallback());
    expect(read.memories.map((memory) => memory.name)).toEqual(['good', 'linked-inside']);
    expect(JSON.stringify(read.memories)).not.toContain('TOP SECRET');
    expect(JSON.stringify(read.memories)).not.toContain('root:');
    const errors = new Map(read.errors.map((error) => [error.file, error.message]));
    expect([...errors.keys()].sort()).toEqual(['dangling.md', 'passwd.md', 'secret.md']);
    expect(errors.get('secret.md')).toMatch(/outside the memory directory/);
    expect(errors.get('passwd.md')).toMatch(/outside the memory directory/);
    expect(errors.get('dangling.md')).toMatch(/cannot be read/);
    expect(read.warnings).toEqual(['MEMORY.md links to missing.md, which is not in the directory.']);
  });

  it('reports files over 1 MB, malformed files and non-text files, and still reads the rest', async () => {
    writeFile('huge.md', `---\nname: huge\n---\n${'x'.repeat(1024 * 1024)}\n`);
    writeFile('broken.md', '---\nname: [unclosed\n---\nbody\n');
    writeFile(
      'bomb.md',
      `---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n---\nbody\n`,
    );
    writeFile('binary.md', Buffer.from([0xff, 0xfe, 0x00, 0x41, 0xc3, 0x28]));
    writeFile('control.md', '---\nname: control\n---\nescape \u001b[31m red\n');
    writeFile('empty.md', '');
    mkdirSync(join(folders.memory, 'folder.md'));
    writeFile('ok.md', 'Still read.\n');

    const read = await readMemoryDirectory(folders.memory, fallback());
    expect(read.memories.map((memory) => memory.content)).toEqual(['Still read.']);
    const errors = new Map(read.errors.map((error) => [error.file, error.message]));
    expect([...errors.keys()].sort()).toEqual([
      'binary.md',
      'bomb.md',
      'broken.md',
      'control.md',
      'empty.md',
      'folder.md',
      'huge.md',
    ]);
    expect(errors.get('huge.md')).toMatch(/over 1048576 bytes are skipped/);
    expect(errors.get('broken.md')).toMatch(/^Malformed frontmatter/);
    expect(errors.get('bomb.md')).toMatch(/aliases/);
    expect(errors.get('binary.md')).toMatch(/UTF-8/);
    expect(errors.get('control.md')).toMatch(/control characters/);
    expect(errors.get('empty.md')).toMatch(/no content/);
    expect(errors.get('folder.md')).toMatch(/Not a regular file/);
  });

  it('honours a smaller file cap', async () => {
    writeFile('medium.md', 'x'.repeat(2_000));
    const read = await readMemoryDirectory(folders.memory, { ...fallback(), maxFileBytes: 1_000 });
    expect(read.memories).toEqual([]);
    expect(read.errors[0]).toEqual({
      file: 'medium.md',
      message: 'File is 2000 bytes or more; topic files over 1000 bytes are skipped.',
    });
  });

  it.skipIf(process.platform === 'win32')('does not hang on a FIFO named like a topic file', async () => {
    writeFile('ok.md', 'Readable.\n');
    execFileSync('mkfifo', [join(folders.memory, 'pipe.md')]);
    const read = await readMemoryDirectory(folders.memory, fallback());
    expect(read.memories.map((memory) => memory.content)).toEqual(['Readable.']);
    expect(read.errors).toEqual([{ file: 'pipe.md', message: 'Not a regular file; skipped.' }]);
  });

  it('keeps engram ids from frontmatter and gives a copied file a new id', async () => {
    const original = makeMemory('kept-id', { name: 'original' });
    await writeMemoryDirectory(folders.memory, [original]);
    const copy = readFileSync(join(folders.memory, 'original.md'), 'utf8').replace('name: original', 'name: copy');
    writeFile('zz-copy.md', copy);
    const read = await readMemoryDirectory(folders.memory, fallback());
    expect(read.memories.map((memory) => [memory.name, memory.id])).toEqual([
      ['original', 'kept-id'],
      ['copy', 'generated-1'],
    ]);
    expect(read.memories[0]!.scope).toBe('project:acme');
    expect(read.warnings).toEqual(['zz-copy.md carries the same id as original.md; it was given a new id.']);
  });

  it('fails clearly when the directory does not exist', async () => {
    const error = await expectEngramError(readMemoryDirectory(join(folders.base, 'absent'), fallback()), 'NOT_FOUND');
    expect(error.message).toContain('absent');
  });
});
