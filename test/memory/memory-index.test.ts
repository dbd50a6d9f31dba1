import { describe, expect, it } from 'vitest';
import { expectEngramErrorSync } from '../support/expect-engram-error.js';
import { EngramError } from '../../src/kernel/errors.js';
import { normalizeNewMemory, type Memory, type NewMemory } from '../../src/memory/memory.js';
import { assignFileNames, buildMemoryIndex, cutToCaps, parseMemoryIndex } from '../../src/memory/memory-index.js';

const NOW = '2025-03-01T12:00:00.000Z';
const ENTRY = /^- \[[^\]]+\]\([a-z0-9][a-z0-9._-]*\.md\)( — .+)?$/;

function makeMemory(id: string, input: Partial<NewMemory> = {}): Memory {
  return normalizeNewMemory({ scope: 'project:acme', content: `Fact ${id}.`, ...input }, { now: NOW, id });
}

function manyMemories(count: number, description: (index: number) => string): Memory[] {
  const types = ['user', 'feedback', 'project', 'reference', 'procedure'] as const;
  return Array.from({ length: count }, (_unused, index) =>
    makeMemory(`id-${index}`, { name: `memory-${index}`, type: types[index % 5], description: description(index) }),
  );
}

function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

const thrown = (action: () => unknown): EngramError => expectEngramErrorSync(action, 'INVALID_INPUT');

describe('buildMemoryIndex', () => {
  const memories = [
    makeMemory('b', { type: 'project', name: 'deadline', description: 'Release freeze starts 2025-03-05' }),
    makeMemory('a', { type: 'user', name: 'user-role', description: 'The user is a data engineer' }),
    makeMemory('c', { type: 'feedback', name: 'testing', description: 'Integration tests use the real database' }),
    makeMemory('d', { type: 'user', name: 'editor', description: 'Uses tabs' }),
  ];

  it('lists one linked line per memory, ordered by type, then name', () => {
    const index = buildMemoryIndex(memories);
    expect(index.text).toBe(
      [
        '# Memory index',
        '',
        '- [editor](editor.md) — Uses tabs',
        '- [user-role](user-role.md) — The user is a data engineer',
        '- [testing](testing.md) — Integration tests use the real database',
        '- [deadline](deadline.md) — Release freeze starts 2025-03-05',
        '',
      ].join('\n'),
    );
    expect(index).toMatchObject({ truncated: false, shown: 4, total: 4 });
  });

  it('is byte-identical whatever the input order', () => {
    const first = buildMemoryIndex(memories).text;
    expect(buildMemoryIndex([...memories].reverse()).text).toBe(first);
    expect(buildMemoryIndex([memories[2]!, memories[0]!, memories[3]!, memories[1]!]).text).toBe(first);
  });

  it('orders memories with the same type and name by id', () => {
    const twins = [makeMemory('z', { name: 'same' }), makeMemory('y', { name: 'same' })];
    const fileNames = assignFileNames(twins);
    const lines = buildMemoryIndex(twins, { fileNames }).text.split('\n');
    expect(lines[2]).toContain(`(${fileNames.get('y')})`);
    expect(lines[3]).toContain(`(${fileNames.get('z')})`);
  });

  it('shows just the header when there are no memories', () => {
    expect(buildMemoryIndex([])).toEqual({
      inactive: 0,
      text: '# Memory index\n\n',
      truncated: false,
      shown: 0,
      total: 0,
    });
  });

  it('never lists archived or invalidated memories, whatever mix it is given', () => {
    const given = [
      makeMemory('live', { name: 'live-fact', description: 'Still true' }),
      makeMemory('gone', { name: 'forgotten-fact', description: 'Forgotten', archived: true }),
      makeMemory('old', { name: 'merged-fact', description: 'Merged away', invalidAt: '2025-02-01T00:00:00.000Z' }),
      makeMemory('both', { name: 'both-fact', archived: true, invalidAt: '2025-02-01T00:00:00.000Z' }),
      makeMemory('later', { name: 'future-validity', validFrom: '2025-01-01T00:00:00.000Z' }),
    ];
    const index = buildMemoryIndex(given);
    expect(index).toMatchObject({ shown: 2, total: 2, inactive: 3, truncated: false });
    expect(index.text).toContain('live-fact');
    expect(index.text).toContain('future-validity');
    for (const name of ['forgotten-fact', 'merged-fact', 'both-fact']) expect(index.text).not.toContain(name);
    // The file names stay those of the whole set, so a topic file keeps its name when a memory is archived.
    expect(buildMemoryIndex(given, { fileNames: assignFileNames(given) }).text).toBe(index.text);
    // Only inactive memories: the header alone, even under tiny caps.
    expect(buildMemoryIndex(given.slice(1, 4), { maxLines: 3 })).toMatchObject({ shown: 0, total: 0, inactive: 3 });
  });

  it('cuts long descriptions to the entry cap with an ellipsis, never splitting a character', () => {
    const long = makeMemory('e', { name: 'emoji', description: '😀'.repeat(100) });
    const line = buildMemoryIndex([long], { entryMaxChars: 60 }).text.split('\n')[2]!;
    expect(Array.from(line)).toHaveLength(60);
    expect(line.startsWith('- [emoji](emoji.md) — 😀')).toBe(true);
    expect(line.endsWith('😀…')).toBe(true);
    expect(line).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('shortens the link text but never the link target when the link alone is too long', () => {
    const name = 'a-very-long-memory-name-that-goes-on-and-on-and-on';
    const line = buildMemoryIndex([makeMemory('f', { name })], { entryMaxChars: 70 }).text.split('\n')[2]!;
    expect(line).toContain(`](${name}.md)`);
    expect(Array.from(line).length).toBeLessThanOrEqual(70);
    expect(line).toMatch(/^- \[a-very-lo[a-z-]*…\]\(/);
  });

  it('keeps each entry on one line even if a description carries line breaks or controls', () => {
    const hostile = {
      ...makeMemory('g', { name: 'hostile' }),
      description: 'one\n- [fake](../../etc/passwd)\r\u0007two\u2028three',
    };
    const text = buildMemoryIndex([hostile]).text;
    expect(lineCount(text)).toBe(3);
    expect(text.split('\n')[2]).toBe('- [hostile](hostile.md) — one - [fake](../../etc/passwd) two three');
  });

  it('keeps 10,000 memories within 200 lines and 25,000 bytes, with a warning that fits', () => {
    const memories = manyMemories(
      10_000,
      (index) => `Description number ${index} with some words to make it realistic`,
    );
    const index = buildMemoryIndex(memories);
    expect(index.truncated).toBe(true);
    expect(index.total).toBe(10_000);
    expect(lineCount(index.text)).toBeLessThanOrEqual(200);
    expect(byteLength(index.text)).toBeLessThanOrEqual(25_000);
    const lines = index.text.split('\n');
    expect(lines[2]).toBe(
      `> WARNING: MEMORY.md shows ${index.shown} of 10000 memories (cut at 200 lines / 25 KB); the others are still saved as topic files in this folder.`,
    );
    const entries = lines.filter((line) => line.startsWith('- ['));
    expect(entries).toHaveLength(index.shown);
    expect(index.shown).toBe(196);
    for (const entry of entries) expect(entry).toMatch(ENTRY);
    // The shown entries are the first ones in index order: all `user` memories.
    expect(entries.every((entry) => /memory-\d*[05]\.md/.test(entry))).toBe(true);
    expect(buildMemoryIndex([...memories].reverse()).text).toBe(index.text);
  });

  it('cuts at a line boundary by bytes when multi-byte entries reach the byte cap first', () => {
    const memories = manyMemories(300, (index) => `数据库迁移说明第${index}条：${'测试'.repeat(60)}`);
    const index = buildMemoryIndex(memories);
    expect(index.truncated).toBe(true);
    expect(lineCount(index.text)).toBeLessThan(200);
    expect(byteLength(index.text)).toBeLessThanOrEqual(25_000);
    expect(Buffer.from(index.text, 'utf8').toString('utf8')).toBe(index.text);
    expect(index.text).not.toContain('\uFFFD');
    const entries = index.text.split('\n').filter((line) => line.startsWith('- ['));
    expect(entries).toHaveLength(index.shown);
    for (const entry of entries)
      expect(entry).toMatch(/^- \[memory-\d+\]\(memory-\d+\.md\) — 数据库迁移说明第\d+条：[测试]+…$/);
    expect(index.text).toContain(`shows ${index.shown} of 300 memories`);
  });

  it('fits exactly at the line cap without a warning, and warns one memory past it', () => {
    const fits = buildMemoryIndex(manyMemories(198, () => 'd'));
    expect(fits.truncated).toBe(false);
    expect(lineCount(fits.text)).toBe(200);
    const over = buildMemoryIndex(manyMemories(199, () => 'd'));
    expect(over.truncated).toBe(true);
    expect(lineCount(over.text)).toBe(200);
    expect(over.shown).toBe(196);
  });

  it('falls back to the warning alone, cut by bytes, when the caps cannot hold the header', () => {
    const index = buildMemoryIndex(
      manyMemories(10, () => 'd'),
      { maxBytes: 40 },
    );
    expect(index).toMatchObject({ truncated: true, shown: 0, total: 10 });
    expect(byteLength(index.text)).toBeLessThanOrEqual(40);
    expect(index.text.startsWith('> WARNING: MEMORY.md shows 0 of 10')).toBe(true);
    const oneLine = buildMemoryIndex(
      manyMemories(10, () => 'd'),
      { maxLines: 1 },
    );
    expect(lineCount(oneLine.text)).toBe(1);
    expect(oneLine.text).toMatch(/^> WARNING/);
  });

  it('refuses caps that are not positive whole numbers', () => {
    thrown(() => buildMemoryIndex([], { maxLines: 0 }));
    expect(thrown(() => buildMemoryIndex([], { maxBytes: Number.NaN })).message).toMatch(/maxBytes/);
    expect(thrown(() => buildMemoryIndex([], { entryMaxChars: 1.5 })).message).toMatch(/entryMaxChars/);
  });

  it('refuses file names that are missing or unsafe', () => {
    const memory = makeMemory('h', { name: 'safe' });
    expect(thrown(() => buildMemoryIndex([memory], { fileNames: new Map() })).message).toMatch(/No safe file name/);
    for (const unsafe of ['../escape.md', '/etc/passwd.md', '.hidden.md', 'a b.md', 'x).md', 'con.md', 'notes.txt']) {
      expect(() => buildMemoryIndex([memory], { fileNames: new Map([['h', unsafe]]) })).toThrow(/No safe file name/);
    }
  });
});

describe('cutToCaps', () => {
  it('cuts at the last line boundary within the byte cap', () => {
    expect(cutToCaps('ab\ncd\nef\n', { maxLines: 10, maxBytes: 7 })).toEqual({ text: 'ab\ncd\n', cut: true });
    expect(cutToCaps('ab\ncd\nef\n', { maxLines: 2, maxBytes: 100 })).toEqual({ text: 'ab\ncd\n', cut: true });
    expect(cutToCaps('ab\ncd\n', { maxLines: 2, maxBytes: 6 })).toEqual({ text: 'ab\ncd\n', cut: false });
  });

  it('cuts by bytes when no line boundary fits, never inside a multi-byte character', () => {
    const text = '日本語のテキスト😀😀😀'.repeat(10);
    for (let maxBytes = 1; maxBytes <= 40; maxBytes += 1) {
      const result = cutToCaps(text, { maxLines: 200, maxBytes });
      expect(byteLength(result.text)).toBeLessThanOrEqual(maxBytes);
      expect(text.startsWith(result.text)).toBe(true);
      expect(result.text).not.toMatch(/[\uD800-\uDBFF]$/);
      expect(maxBytes - byteLength(result.text)).toBeLessThan(4);
      expect(result.cut).toBe(true);
    }
  });
});

describe('assignFileNames', () => {
  it('uses the name, and numbers duplicates deterministically, oldest first', () => {
    const older = makeMemory('zz', { name: 'notes', createdAt: '2024-01-01T00:00:00.000Z' });
    const newer = makeMemory('aa', { name: 'notes', createdAt: '2024-06-01T00:00:00.000Z' });
    const newest = makeMemory('mm', { name: 'notes', createdAt: '2024-09-01T00:00:00.000Z' });
    const expected = new Map([
      ['zz', 'notes.md'],
      ['aa', 'notes-2.md'],
      ['mm', 'notes-3.md'],
    ]);
    expect(assignFileNames([older, newer, newest])).toEqual(expected);
    expect(assignFileNames([newest, newer, older])).toEqual(expected);
  });

  it('lets a memory really named like a numbered duplicate keep its name', () => {
    const names = assignFileNames([
      makeMemory('1', { name: 'notes' }),
      makeMemory('2', { name: 'notes' }),
      makeMemory('3', { name: 'notes-2' }),
    ]);
    expect(names).toEqual(
      new Map([
        ['1', 'notes.md'],
        ['2', 'notes-3.md'],
        ['3', 'notes-2.md'],
      ]),
    );
  });

  it('never produces MEMORY.md, even for a memory named "memory"', () => {
    const names = assignFileNames([makeMemory('1', { name: 'memory' })]);
    expect(names.get('1')).toBe('memory-2.md');
  });

  it('makes hostile names into safe, unique file names', () => {
    const hostile = [
      '../../etc/passwd',
      '..',
      '.hidden',
      'a/b\\c',
      'con',
      'CON.txt',
      'lpt1',
      '',
      'x'.repeat(300),
      '名前',
      'Notes',
      'notes',
      ' spaced out ',
      'nul.',
      '-dash',
    ];
    const memories = hostile.map((name, index) => ({ ...makeMemory(`h${index}`), name }));
    const names = [...assignFileNames(memories).values()];
    expect(names).toHaveLength(hostile.length);
    expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(hostile.length);
    for (const name of names) {
      expect(name).toMatch(/^[a-z0-9][a-z0-9._-]*\.md$/);
      expect(name).not.toContain('..');
      expect(name.length).toBeLessThanOrEqual(110);
      expect(name).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i);
      expect(name.toLowerCase()).not.toBe('memory.md');
    }
    expect(buildMemoryIndex(memories).shown).toBe(hostile.length);
  });

  it('refuses two memories with the same id', () => {
    expect(thrown(() => assignFileNames([makeMemory('same'), makeMemory('same')])).message).toMatch(/appears twice/);
  });
});

describe('parseMemoryIndex', () => {
  it('reads back the file names of a built index', () => {
    const memories = [
      makeMemory('a', { name: 'alpha', type: 'user' }),
      makeMemory('b', { name: 'beta', type: 'user' }),
    ];
    expect(parseMemoryIndex(buildMemoryIndex(memories).text)).toEqual(['alpha.md', 'beta.md']);
  });

  it('reads Claude Code index lines and ignores anything outside the folder', () => {
    const text = [
      '- [User role](user_role.md) — data engineer',
      '- [Testing](./feedback_testing.md) — real database',
      '- [Again](user_role.md) — duplicate link',
      '- [Section](project_notes.md#deadlines) — with a fragment',
      '- [Spaced](<team notes.md>) — angle brackets',
      '- [Titled](reference.md "Reference") — with a title',
      '- [Passwd](../../etc/passwd) — traversal',
      '- [Passwd md](../../etc/passwd.md) — traversal',
      '- [Absolute](/etc/passwd.md) — absolute',
      '- [Windows](C:\\Windows\\win.md) — drive path',
      '- [Backslash](..\\up.md) — backslash traversal',
      '- [Encoded](%2e%2e%2fetc%2fsecret.md) — encoded traversal',
      '- [Bad encoding](%E0%A4%A.md) — malformed escape',
      '- [Sub](sub/inner.md) — subfolder',
      '- [Web](https://example.com/x.md) — URL',
      '- [Mail](mailto:x.md) — scheme',
      '- [Hidden](.secret.md) — hidden',
      '- [Index](MEMORY.md) — itself',
      '- [Text](notes.txt) — not markdown',
      '- [Nul](bad%00name.md) — control character',
    ].join('\n');
    expect(parseMemoryIndex(text)).toEqual([
      'user_role.md',
      'feedback_testing.md',
      'project_notes.md',
      'team notes.md',
      'reference.md',
    ]);
  });

  it('returns nothing for text without links, and copes with huge input', () => {
    expect(parseMemoryIndex('# Memory index\n\nno links here [just brackets] (and parens)\n')).toEqual([]);
    const huge = `${'[x'.repeat(200_000)}](a.md)`;
    expect(parseMemoryIndex(huge)).toEqual(['a.md']);
  });
});
