import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngramError } from '../../../src/kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { ToolResultStorage } from '../../../src/session/node/tool-result-storage.js';
import { readPersistedOutputTool } from '../../../src/session/persisted-output-tool.js';
import { expectEngramError } from '../../support/expect-engram-error.js';

let root: string;
let directory: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'engram-tool-results-'));
  directory = join(root, 'session-1', 'tool-results');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function storage(
  options: Partial<{ thresholdBytes: number; previewBytes: number; pageBytes: number }> = {},
): ToolResultStorage {
  return new ToolResultStorage({
    directory,
    thresholdBytes: options.thresholdBytes ?? DEFAULT_SETTINGS.session.toolResultThresholdBytes,
    previewBytes: options.previewBytes ?? DEFAULT_SETTINGS.session.toolResultPreviewBytes,
    ...(options.pageBytes === undefined ? {} : { pageBytes: options.pageBytes }),
  });
}

/** The preview a replacement carries. */
function previewIn(replacement: string): string {
  const start = replacement.indexOf('):\n') + 3;
  const end = replacement.endsWith('\n...\n</persisted-output>')
    ? replacement.length - '\n...\n</persisted-output>'.length
    : replacement.length - '\n</persisted-output>'.length;
  return replacement.slice(start, end);
}

/** Text with 1-, 2-, 3- and 4-byte characters and newlines, `bytes` long or a little over. */
function mixedText(bytes: number): string {
  const pieces = ['line a\n', 'é', '€uro ', '😀', 'grüße\n', 'x'];
  const parts: string[] = [];
  for (let index = 0, length = 0; length < bytes; index += 1) {
    const piece = pieces[index % pieces.length]!;
    parts.push(piece);
    length += Buffer.byteLength(piece);
  }
  return parts.join('');
}

describe('store', () => {
  it('leaves a result at or under the threshold untouched and writes nothing', async () => {
    const results = storage({ thresholdBytes: 100 });
    const exact = 'é'.repeat(50); // 100 bytes
    const stored = await results.store('toolu_small', exact);
    expect(stored).toEqual({ content: exact });
    expect(stored.content).toBe(exact);
    await expect(lstat(directory)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('writes a result over the threshold whole (mode 0600, folder 0700) and keeps a preview naming the file', async () => {
    const results = storage();
    const content = mixedText(120_000);
    const stored = await results.store('toolu_01A09q90qw90lq917835lq9', content);
    const path = join(directory, 'toolu_01A09q90qw90lq917835lq9.txt');
    const bytes = Buffer.byteLength(content);
    expect(stored.persisted).toEqual({ path, bytes });
    expect((await readFile(path)).equals(Buffer.from(content, 'utf8'))).toBe(true);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(directory)).mode & 0o777).toBe(0o700);
    expect(
      stored.content.startsWith(
        `<persisted-output>\nOutput too large (${bytes} bytes). Full output saved to: ${path}\n\nPreview (first 2KB):\n`,
      ),
    ).toBe(true);
    expect(stored.content.endsWith('\n...\n</persisted-output>')).toBe(true);
    const preview = previewIn(stored.content);
    expect(content.startsWith(preview)).toBe(true);
    expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(2_000);
    expect(Buffer.byteLength(preview)).toBeGreaterThan(1_000);
    expect(Buffer.byteLength(stored.content)).toBeLessThan(2_400);
  });

  it('is frozen: the same result gives byte-identical replacements, from this storage or a new one', async () => {
    const content = mixedText(60_000);
    const first = await storage().store('toolu_frozen', content);
    const again = await storage().store('toolu_frozen', content);
    const reopened = await new ToolResultStorage({
      directory: join(directory, '.', ''),
      thresholdBytes: 50_000,
      previewBytes: 2_000,
    }).store('toolu_frozen', content);
    expect(again.content).toBe(first.content);
    expect(reopened.content).toBe(first.content);
    expect(Buffer.from(again.content).equals(Buffer.from(first.content))).toBe(true);
  });

  it('never cuts a character in the preview, whatever the preview size', async () => {
    const content = mixedText(400);
    for (let previewBytes = 1; previewBytes <= 40; previewBytes += 1) {
      for (const skip of [0, 1, 2, 3]) {
        const text = 'a'.repeat(skip) + content;
        const stored = await storage({ thresholdBytes: 100, previewBytes }).store(
          `toolu_p${previewBytes}_${skip}`,
          text,
        );
        const preview = previewIn(stored.content);
        expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(previewBytes);
        expect(preview).not.toContain('\uFFFD');
        expect(text.startsWith(preview)).toBe(true);
      }
    }
  });

  it('refuses another content under an id already stored, keeping the first', async () => {
    const results = storage({ thresholdBytes: 10 });
    await results.store('toolu_once', 'first result, long enough');
    await expectEngramError(results.store('toolu_once', 'second result, long enough'), 'CONFLICT');
    expect(await readFile(join(directory, 'toolu_once.txt'), 'utf8')).toBe('first result, long enough');
  });

  it('refuses a planted symlink in place of the file, writing nothing through it', async () => {
    const outside = join(root, 'outside.txt');
    await writeFile(outside, 'do not touch');
    await mkdir(directory, { recursive: true });
    await symlink(outside, join(directory, 'toolu_link.txt'));
    await expectEngramError(storage({ thresholdBytes: 10 }).store('toolu_link', 'x'.repeat(100)), 'CONFLICT');
    await expectEngramError(storage().read('toolu_link'), 'STORE_ERROR');
    expect(await readFile(outside, 'utf8')).toBe('do not touch');
  });

  const hostile: Array<[string, unknown]> = [
    ['parent traversal', '../evil'],
    ['a nested path', 'a/b'],
    ['an absolute path', '/etc/passwd'],
    ['a backslash', 'a\\b'],
    ['a NUL', 'toolu\0x'],
    ['10K characters', 'x'.repeat(10_000)],
    ['201 characters', 'x'.repeat(201)],
    ['the empty string', ''],
    ['a dot', '.'],
    ['two dots', '..'],
    ['a dotfile', '.hidden'],
    ['a newline', 'toolu\nx'],
    ['not a string', 42],
  ];
  for (const [name, id] of hostile) {
    it(`refuses a tool use id with ${name} (INVALID_INPUT), creating and reading nothing`, async () => {
      const results = storage({ thresholdBytes: 10 });
      const error = await expectEngramError(results.store(id as string, 'y'.repeat(1_000)), 'INVALID_INPUT');
      expect(error.message).toMatch(/letters, digits/);
      await expectEngramError(results.read(id as string), 'INVALID_INPUT');
      expect(await readdir(root)).toEqual([]);
    });
  }

  it('accepts the longest id allowed and the ids providers use', async () => {
    const results = storage({ thresholdBytes: 10 });
    for (const id of ['x'.repeat(200), 'call_abc123', 'toolu_01A09q90qw90lq917835lq9', 'chatcmpl-tool-9f2.1']) {
      expect((await results.store(id, 'z'.repeat(50))).persisted?.path).toBe(join(directory, `${id}.txt`));
    }
  });

  it('refuses bad options and non-text content', async () => {
    for (const options of [
      { directory: '', thresholdBytes: 10, previewBytes: 5 },
      { directory, thresholdBytes: 0, previewBytes: 5 },
      { directory, thresholdBytes: 10, previewBytes: 1.5 },
      { directory, thresholdBytes: 10, previewBytes: 5, pageBytes: -1 },
    ]) {
      expect(() => new ToolResultStorage(options)).toThrow(EngramError);
    }
    await expectEngramError(storage().store('toolu_x', { text: 'x' } as never), 'INVALID_INPUT');
  });
});

describe('read', () => {
  it('pages through a stored result with offset and limit, never splitting a character, until the end', async () => {
    const results = storage({ thresholdBytes: 100, pageBytes: 1_000 });
    const content = mixedText(5_000);
    await results.store('toolu_pages', content);
    const short = mixedText(120);
    await results.store('toolu_short', short);
    for (const [id, limit] of [
      ['toolu_short', 1],
      ['toolu_short', 2],
      ['toolu_short', 3],
      ['toolu_short', 7],
      ['toolu_pages', 1_000],
    ] as const) {
      const expected = id === 'toolu_short' ? short : content;
      let text = '';
      let offset: number | undefined = 0;
      let pages = 0;
      while (offset !== undefined) {
        const page = await results.read(id, { offset, limit });
        expect(page.offset).toBe(offset);
        expect(page.totalBytes).toBe(Buffer.byteLength(expected));
        expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(Math.max(limit, 4));
        expect(page.text).not.toContain('\uFFFD');
        text += page.text;
        offset = page.nextOffset;
        pages += 1;
      }
      expect(text).toBe(expected);
      if (limit === 1_000) expect(pages).toBeGreaterThanOrEqual(5);
    }
  });

  it('starts at the next character when the offset falls inside one, and caps a page at pageBytes', async () => {
    const results = storage({ thresholdBytes: 10, pageBytes: 8 });
    await results.store('toolu_emoji', '😀'.repeat(10)); // 40 bytes
    const inside = await results.read('toolu_emoji', { offset: 1, limit: 4 });
    expect(inside).toEqual({ text: '😀', offset: 4, totalBytes: 40, nextOffset: 8 });
    const capped = await results.read('toolu_emoji', { offset: 0, limit: 1_000 });
    expect(capped.text).toBe('😀😀');
    const last = await results.read('toolu_emoji', { offset: 36 });
    expect(last).toEqual({ text: '😀', offset: 36, totalBytes: 40 });
    expect(await results.read('toolu_emoji', { offset: 40 })).toEqual({ text: '', offset: 40, totalBytes: 40 });
  });

  it('refuses bad offsets and limits, and ids with nothing stored', async () => {
    const results = storage({ thresholdBytes: 10 });
    await results.store('toolu_r', 'r'.repeat(100));
    await expectEngramError(results.read('toolu_r', { offset: 101 }), 'INVALID_INPUT');
    for (const offset of [-1, 1.5, Number.NaN, '3' as never])
      await expectEngramError(results.read('toolu_r', { offset }), 'INVALID_INPUT');
    for (const limit of [0, -5, 2.5, Number.POSITIVE_INFINITY])
      await expectEngramError(results.read('toolu_r', { limit }), 'INVALID_INPUT');
    const missing = await expectEngramError(results.read('toolu_never'), 'NOT_FOUND');
    expect(missing.message).toContain('toolu_never');
  });
});

describe('read_persisted_output', () => {
  it('pages by tool use id or by the path the preview names, with pages that stay under the threshold', async () => {
    const results = storage({ thresholdBytes: 3_000, previewBytes: 500, pageBytes: 100_000 });
    const content = mixedText(10_000);
    const stored = await results.store('toolu_tool', content);
    const tool = readPersistedOutputTool(results);
    expect(tool.definition.name).toBe('read_persisted_output');
    const context = { sessionId: 's', toolUseId: 'toolu_reader', signal: new AbortController().signal };

    const first = await tool.run({ tool_use_id: 'toolu_tool' }, context);
    expect(first.isError).toBeUndefined();
    expect(Buffer.byteLength(first.content)).toBeLessThanOrEqual(3_000);
    // A page passes through the storage unchanged: it is never stored again.
    expect((await results.store('toolu_reader', first.content)).persisted).toBeUndefined();

    const byPath = await tool.run({ path: stored.persisted!.path, offset: 0, limit: 200 }, context);
    expect(byPath.content).toMatch(
      /^Bytes 0 to \d+ of \d+ of the output of tool use toolu_tool\. Next page: offset \d+\.\n\n/,
    );
    let text = '';
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const page = await tool.run({ tool_use_id: 'toolu_tool', offset }, context);
      const header =
        /^Bytes (\d+) to (\d+) of \d+ of the output of tool use toolu_tool\. (?:Next page: offset (\d+)\.|This is the end of the output\.)\n\n/.exec(
          page.content,
        )!;
      text += page.content.slice(header[0].length);
      offset = header[3] === undefined ? undefined : Number(header[3]);
    }
    expect(text).toBe(content);
  });

  it('answers bad input with an error result, never reading outside its folder', async () => {
    const results = storage({ thresholdBytes: 10 });
    await results.store('toolu_tool', 'x'.repeat(100));
    await writeFile(join(root, 'secret.txt'), 'secret');
    const tool = readPersistedOutputTool(results);
    const context = { sessionId: 's', toolUseId: 't', signal: new AbortController().signal };
    for (const input of [
      {},
      { path: join(root, 'secret.txt') },
      { path: join(directory, '..', '..', 'secret.txt') },
      { path: `${directory}/../tool-results/../../secret.txt` },
      { path: 'x'.repeat(10_000) },
      { path: `${directory}/a\0b.txt` },
      { tool_use_id: '../../secret' },
      { tool_use_id: 'toolu_tool', offset: -1 },
      { tool_use_id: 'toolu_tool', limit: 'all' },
      { tool_use_id: 'toolu_missing' },
    ]) {
      const answer = await tool.run(input, context);
      expect(answer.isError).toBe(true);
      expect(answer.content).not.toContain('secret\n');
    }
  });
});
