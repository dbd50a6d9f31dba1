import Anthropic from '@anthropic-ai/sdk';
import { betaMemoryTool } from '@anthropic-ai/sdk/helpers/beta/memory';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderMemoryFile } from '../../src/memory/memory-file.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import {
  ANTHROPIC_MEMORY_TOOL,
  anthropicNativeTool,
  memoryToolDefinition,
} from '../../src/contracts/memory-tool-definition.js';
import { memoryToolHandlers } from '../../src/surfaces/sdk/anthropic-memory-tool-handlers.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import { humanSize, memoryToolText } from '../../src/memory-tool/memory-tool-text.js';
import { MemoryTool, type MemoryToolOptions, type MemoryToolResult } from '../../src/memory-tool/memory-tool.js';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.js';

const PROJECT = 'project:github.com/acme/app';
const FOREIGN = 'project:github.com/acme/other';
const START = Date.parse('2026-03-01T09:00:00.000Z');
const LISTING =
  "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:";

let temporary: TemporaryStore;
let engram: Engram;
let tool: MemoryTool;

function open(options: Partial<MemoryToolOptions> = {}, settings: Settings = DEFAULT_SETTINGS): MemoryTool {
  engram = new Engram({
    store: temporary.store,
    settings,
    defaultScope: PROJECT,
    now: () => new Date(temporary.clock.now),
  });
  return new MemoryTool({ engram, ...options });
}

beforeEach(async () => {
  temporary = await openTemporaryStore(START);
  tool = open();
  await temporary.store.create(
    { scope: FOREIGN, name: 'secret-plan', content: 'Project Bluebird ships in May.' },
    { actor: 'test' },
  );
});

afterEach(async () => {
  await temporary.close();
});

async function ok(input: unknown, using: MemoryTool = tool): Promise<string> {
  const result = await using.run(input);
  expect(result.isError, result.content).toBe(false);
  return result.content;
}

async function refused(input: unknown, using: MemoryTool = tool): Promise<MemoryToolResult> {
  const result = await using.run(input);
  expect(result.isError, result.content).toBe(true);
  return result;
}

/** Everything in the store, archived and invalidated included, and the length of its history. */
async function snapshot(): Promise<string> {
  const memories = await temporary.store.list({
    scopes: [PROJECT, 'global', FOREIGN],
    archived: 'include',
    invalid: 'include',
  });
  return JSON.stringify({ memories, stats: await temporary.store.stats() });
}

async function only(name: string, scope = PROJECT) {
  const found = (await temporary.store.list({ scopes: [scope] })).filter((memory) => memory.name === name);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe('view', () => {
  it('lists an empty /memories without an error: the root, its index and the global folder', async () => {
    expect(await ok({ command: 'view', path: '/memories' })).toBe(
      [
        LISTING,
        '32B\t/memories',
        '16B\t/memories/MEMORY.md',
        '16B\t/memories/global/',
        '16B\t/memories/global/MEMORY.md',
      ].join('\n'),
    );
  });

  it("lists files two levels deep with du-style sizes, and never another project's memories", async () => {
    await ok({
      command: 'create',
      path: '/memories/user-preferences.md',
      file_text: 'The user prefers tabs over spaces.',
    });
    await ok({
      command: 'create',
      path: '/memories/global/commit-style.md',
      file_text: 'Commit messages are written in English.',
    });
    const listing = (await ok({ command: 'view', path: '/memories' })).split('\n');
    expect(listing[0]).toBe(LISTING);
    const paths = listing.slice(1).map((line) => line.split('\t')[1]);
    expect(paths).toEqual([
      '/memories',
      '/memories/MEMORY.md',
      '/memories/global/',
      '/memories/global/MEMORY.md',
      '/memories/global/commit-style.md',
      '/memories/user-preferences.md',
    ]);
    for (const line of listing.slice(1)) expect(line).toMatch(/^(\d+B|\d\.\dK|\d+K)\t\/memories/);
    const fileSize = Buffer.byteLength(renderMemoryFile(await only('user-preferences')), 'utf8');
    expect(listing).toContain(`${humanSize(fileSize)}\t/memories/user-preferences.md`);
    expect(listing.join('\n')).not.toMatch(/secret-plan|Bluebird/);

    const global = (await ok({ command: 'view', path: '/memories/global' })).split('\n');
    expect(global[0]).toBe(LISTING.replace('/memories,', '/memories/global,'));
    expect(global.slice(1).map((line) => line.split('\t')[1])).toEqual([
      '/memories/global',
      '/memories/global/MEMORY.md',
      '/memories/global/commit-style.md',
    ]);
  });

  it('shows a file with 6-wide right-aligned line numbers and a TAB, whole or by view_range', async () => {
    await ok({
      command: 'create',
      path: '/memories/database.md',
      file_text: 'The database is PostgreSQL 15.\nIt runs on a private server.',
    });
    const memory = await only('database');
    const lines = renderMemoryFile(memory).slice(0, -1).split('\n');
    const view = await ok({ command: 'view', path: '/memories/database.md' });
    expect(view.split('\n')[0]).toBe("Here's the content of /memories/database.md with line numbers:");
    expect(view.split('\n')[1]).toBe('     1\t---');
    expect(view.split('\n').slice(1)).toEqual(lines.map((line, index) => `${String(index + 1).padStart(6)}\t${line}`));
    expect(view.endsWith(`${String(lines.length).padStart(6)}\tIt runs on a private server.`)).toBe(true);

    expect(await ok({ command: 'view', path: '/memories/database.md', view_range: [2, 3] })).toBe(
      `Here's the content of /memories/database.md with line numbers:\n     2\tname: database\n     3\t${lines[2]}`,
    );
    const tail = await ok({ command: 'view', path: '/memories/database.md', view_range: [lines.length - 1, -1] });
    expect(tail.split('\n').slice(1)).toEqual([
      `${String(lines.length - 1).padStart(6)}\tThe database is PostgreSQL 15.`,
      `${String(lines.length).padStart(6)}\tIt runs on a private server.`,
    ]);
    // A file name matches with or without .md and in any case.
    expect(await ok({ command: 'view', path: '/memories/Database.MD' })).toContain('PostgreSQL 15');
  });

  it("answers the protocol's error for a missing file, and refuses bad view ranges", async () => {
    const missing = await refused({ command: 'view', path: '/memories/nothing.md' });
    expect(missing).toMatchObject({
      content: 'The path /memories/nothing.md does not exist. Please provide a valid path.',
      code: 'NOT_FOUND',
    });
    expect((await refused({ command: 'view', path: '/memories/projects/notes.md' })).content).toBe(
      'The path /memories/projects/notes.md does not exist. Please provide a valid path.',
    );
    // Another project's memory does not exist here, even under its exact name.
    expect((await refused({ command: 'view', path: '/memories/secret-plan.md' })).code).toBe('NOT_FOUND');

    await ok({ command: 'create', path: '/memories/short.md', file_text: 'One line.' });
    const length = renderMemoryFile(await only('short'))
      .slice(0, -1)
      .split('\n').length;
    expect((await refused({ command: 'view', path: '/memories/short.md', view_range: [0, 2] })).content).toBe(
      `Error: Invalid \`view_range\` parameter: [0, 2]. Its first element \`0\` should be within the range of lines of the file: [1, ${length}]`,
    );
    expect((await refused({ command: 'view', path: '/memories/short.md', view_range: [5, 2] })).content).toMatch(
      /second element `2`/,
    );
    expect((await refused({ command: 'view', path: '/memories/short.md', view_range: [1] })).content).toMatch(
      /Invalid `view_range` parameter: \[1\]/,
    );
    expect((await refused({ command: 'view', path: '/memories/short.md', view_range: 'all' })).content).toMatch(
      /two integers/,
    );
    expect((await refused({ command: 'view', path: '/memories', view_range: [1, 2] })).content).toMatch(
      /is a directory/,
    );
  });

  it("serves each folder's MEMORY.md, read-only", async () => {
    await ok({
      command: 'create',
      path: '/memories/user-preferences.md',
      file_text: 'The user prefers tabs over spaces.',
    });
    expect(await ok({ command: 'view', path: '/memories/MEMORY.md' })).toBe(
      "Here's the content of /memories/MEMORY.md with line numbers:\n     1\t# Memory index\n     2\t\n     3\t- [user-preferences](user-preferences.md) — The user prefers tabs over spaces.",
    );
    const before = await snapshot();
    for (const input of [
      { command: 'create', path: '/memories/MEMORY.md', file_text: 'Hijacked index.' },
      { command: 'str_replace', path: '/memories/MEMORY.md', old_str: 'Memory index', new_str: 'x' },
      { command: 'insert', path: '/memories/global/MEMORY.md', insert_line: 0, insert_text: 'x' },
      { command: 'delete', path: '/memories/MEMORY.md' },
      { command: 'rename', old_path: '/memories/MEMORY.md', new_path: '/memories/index.md' },
    ]) {
      expect((await refused(input)).content).toMatch(/index generated from the memories and cannot be changed/);
    }
    expect(await snapshot()).toBe(before);
  });

  it('cuts long views at viewMaxChars and says how to read the rest; refuses files over the line limit', async () => {
    const settings = { ...DEFAULT_SETTINGS, memoryTool: { ...DEFAULT_SETTINGS.memoryTool, viewMaxChars: 1_000 } };
    const small = open({}, settings);
    const content = Array.from({ length: 80 }, (_, index) => `Fact line ${index + 1} about the deployment.`).join('\n');
    await ok({ command: 'create', path: '/memories/long.md', file_text: content }, small);
    const view = await ok({ command: 'view', path: '/memories/long.md' }, small);
    expect(view.length).toBeLessThanOrEqual(1_000 + 200);
    const note =
      /\[Output cut at 1000 characters: lines 1-(\d+) of (\d+) shown\. View the rest with view_range \[(\d+), -1\]\.\]$/.exec(
        view,
      );
    expect(note, view).not.toBeNull();
    expect(Number(note![3])).toBe(Number(note![1]) + 1);
    const rest = await ok({ command: 'view', path: '/memories/long.md', view_range: [Number(note![3]), -1] }, small);
    expect(rest.split('\n')[1]).toMatch(new RegExp(`^\\s+${note![3]}\\t`));

    const capped = open({}, { ...DEFAULT_SETTINGS, memoryTool: { ...DEFAULT_SETTINGS.memoryTool, maxLines: 5 } });
    expect((await refused({ command: 'view', path: '/memories/long.md' }, capped)).content).toBe(
      'File /memories/long.md exceeds maximum line limit of 5 lines.',
    );
    expect(memoryToolText.tooManyLines('/memories/a.md', 999_999)).toBe(
      'File /memories/a.md exceeds maximum line limit of 999,999 lines.',
    );
  });

  it('formats sizes as du -h does', () => {
    expect([0, 512, 1023, 1024, 1536, 4096, 10_230, 12 * 1024, 1.5 * 1024 * 1024].map(humanSize)).toEqual([
      '0B',
      '512B',
      '1023B',
      '1.0K',
      '1.5K',
      '4.0K',
      '10K',
      '12K',
      '1.5M',
    ]);
  });
});

describe('create', () => {
  it('creates a memory from plain text: the file name is its name, the text its content', async () => {
    expect(
      await ok({
        command: 'create',
        path: '/memories/user-preferences.md',
        file_text: 'The user prefers tabs over spaces.\n',
      }),
    ).toBe('File created successfully at: /memories/user-preferences.md');
    const memory = await only('user-preferences');
    expect(memory).toMatchObject({
      scope: PROJECT,
      content: 'The user prefers tabs over spaces.',
      type: 'project',
      source: { origin: 'memory-tool' },
    });
    expect((await temporary.store.history(memory.id))[0]).toMatchObject({ action: 'create', actor: 'memory-tool' });
  });

  it('reads frontmatter: description, type and importance; the path decides name and scope, bookkeeping is not forged', async () => {
    const fileText = [
      '---',
      'name: Something Else',
      'description: How the user wants tests written',
      'metadata:',
      '  type: feedback',
      '  importance: 0.9',
      '  id: mem_forged',
      '  scope: project:github.com/acme/other',
      '  hitCount: 999',
      '  createdAt: "2001-01-01T00:00:00.000Z"',
      '---',
      '',
      'Integration tests use the real database, no mocks.',
      '**Why:** mocks hid a broken migration.',
    ].join('\n');
    await ok({ command: 'create', path: '/memories/global/testing.md', file_text: fileText });
    const memory = await only('testing', 'global');
    expect(memory).toMatchObject({
      scope: 'global',
      type: 'feedback',
      importance: 0.9,
      description: 'How the user wants tests written',
      content: 'Integration tests use the real database, no mocks.\n**Why:** mocks hid a broken migration.',
      hitCount: 0,
      createdAt: new Date(START).toISOString(),
    });
    expect(memory.id).not.toBe('mem_forged');
    expect(await temporary.store.list({ scopes: [FOREIGN] })).toHaveLength(1);
  });

  it('overwrites an existing file as an update (history kept), or answers the protocol error when configured to', async () => {
    await ok({ command: 'create', path: '/memories/editor.md', file_text: 'The user edits in Vim.' });
    const first = await only('editor');
    temporary.clock.now += 60_000;
    expect(
      await ok({ command: 'create', path: '/memories/editor.md', file_text: 'The user edits in Helix since March.' }),
    ).toBe('File created successfully at: /memories/editor.md');
    const second = await only('editor');
    expect(second).toMatchObject({
      id: first.id,
      content: 'The user edits in Helix since March.',
      description: 'The user edits in Helix since March.',
    });
    expect((await temporary.store.history(first.id)).map((entry) => entry.action)).toEqual(['create', 'update']);

    const strict = open({ onExistingFile: 'error' });
    const before = await snapshot();
    expect(
      await refused({ command: 'create', path: '/memories/EDITOR.md', file_text: 'Emacs.' }, strict),
    ).toMatchObject({
      content: 'Error: File /memories/EDITOR.md already exists',
      code: 'CONFLICT',
    });
    expect(await snapshot()).toBe(before);
  });

  it('goes through dedupe: a restatement under a new name updates the near-duplicate, which moves to the new file', async () => {
    await ok({
      command: 'create',
      path: '/memories/database.md',
      file_text: 'The project database is PostgreSQL 15 on a private server.',
    });
    const created = await ok({
      command: 'create',
      path: '/memories/db-version.md',
      file_text: 'The project database is PostgreSQL 15 on a private server.',
    });
    expect(created).toBe(
      'File created successfully at: /memories/db-version.md\n(It nearly repeated /memories/database.md, so that memory was updated and now lives at /memories/db-version.md instead of a duplicate being added.)',
    );
    expect(await temporary.store.list({ scopes: [PROJECT] })).toHaveLength(1);
    expect(await ok({ command: 'view', path: '/memories/db-version.md' })).toContain('PostgreSQL 15');
  });

  it('never stores secrets: create, str_replace and insert all go through the redacting write path', async () => {
    const token = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';
    const created = await ok({
      command: 'create',
      path: '/memories/deploy.md',
      file_text: `Deploys use the token ${token}.`,
    });
    expect(created).toMatch(
      /^File created successfully at: \/memories\/deploy.md\n\(Secrets were replaced by placeholders before storing: github-token\./,
    );
    await ok({
      command: 'str_replace',
      path: '/memories/deploy.md',
      old_str: 'Deploys use',
      new_str: 'With AKIAIOSFODNN7EXAMPLE, deploys use',
    });
    const length = (await ok({ command: 'view', path: '/memories/deploy.md' })).split('\n').length - 1;
    await ok({
      command: 'insert',
      path: '/memories/deploy.md',
      insert_line: length,
      insert_text: 'Database: postgres://admin:hunter2secret@db.internal:5432/app',
    });
    const stored = JSON.stringify(await temporary.store.history((await only('deploy')).id));
    for (const secret of [token, 'AKIAIOSFODNN7EXAMPLE', 'hunter2secret']) expect(stored).not.toContain(secret);
  });

  it('refuses bad file names, folders, subfolders, empty or oversized text, and changes nothing', async () => {
    const before = await snapshot();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ command: 'create', path: '/memories/User Prefs.md', file_text: 'x y' }, /Invalid file name/],
      [{ command: 'create', path: '/memories/memory.md', file_text: 'x y' }, /index generated from the memories/],
      [{ command: 'create', path: '/memories/memory', file_text: 'x y' }, /Invalid file name/],
      [{ command: 'create', path: '/memories/con.md', file_text: 'x y' }, /Invalid file name/],
      [{ command: 'create', path: '/memories/.hidden.md', file_text: 'x y' }, /Invalid file name/],
      [{ command: 'create', path: `/memories/${'a'.repeat(81)}.md`, file_text: 'x y' }, /Invalid file name/],
      [{ command: 'create', path: '/memories', file_text: 'x y' }, /is a directory/],
      [{ command: 'create', path: '/memories/global', file_text: 'x y' }, /is a directory/],
      [{ command: 'create', path: '/memories/projects/notes.md', file_text: 'x y' }, /Cannot create .*not a folder/],
      [{ command: 'create', path: '/memories/global/a/b.md', file_text: 'x y' }, /Cannot create/],
      [{ command: 'create', path: '/memories/empty.md', file_text: '' }, /no content/],
      [
        { command: 'create', path: '/memories/blank.md', file_text: '---\ndescription: nothing\n---\n\n' },
        /no content/,
      ],
      [{ command: 'create', path: '/memories/bell.md', file_text: 'ring \u0007 ring' }, /control characters/],
      [
        { command: 'create', path: '/memories/yaml.md', file_text: '---\nname: [unclosed\n---\n\nBody.' },
        /Malformed frontmatter/,
      ],
      [
        {
          command: 'create',
          path: '/memories/bomb.md',
          file_text: '---\na: &a [x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n---\n\nBody.',
        },
        /alias/,
      ],
      [
        { command: 'create', path: '/memories/type.md', file_text: '---\nmetadata:\n  type: secret\n---\n\nBody.' },
        /Invalid type/,
      ],
      [{ command: 'create', path: '/memories/huge.md', file_text: 'x'.repeat(200 * 1024) }, /at most 131072 bytes/],
      [{ command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(70 * 1024) }, /at most 65536 bytes/],
    ];
    for (const [input, expected] of cases) {
      const result = await refused(input);
      expect(result.content, JSON.stringify(input).slice(0, 120)).toMatch(expected);
      expect(result.content.startsWith('Error: ')).toBe(true);
    }
    expect(await snapshot()).toBe(before);
  });
});

describe('str_replace', () => {
  beforeEach(async () => {
    await ok({
      command: 'create',
      path: '/memories/database.md',
      file_text: 'The database is PostgreSQL 15.\nBackups run nightly.\nThe replica is PostgreSQL 15 too.',
    });
  });

  it('replaces text that occurs once, writes it back as an update and shows a numbered snippet', async () => {
    const memory = await only('database');
    const result = await ok({
      command: 'str_replace',
      path: '/memories/database.md',
      old_str: 'nightly',
      new_str: 'every hour',
    });
    const lines = renderMemoryFile(await only('database')).split('\n');
    const changed = lines.indexOf('Backups run every hour.') + 1;
    expect(result.split('\n')[0]).toBe(
      'The memory file has been edited. Here is the snippet showing the change (with line numbers):',
    );
    expect(result).toContain(`${String(changed).padStart(6)}\tBackups run every hour.`);
    expect((await only('database')).content).toBe(
      'The database is PostgreSQL 15.\nBackups run every hour.\nThe replica is PostgreSQL 15 too.',
    );
    expect((await temporary.store.history(memory.id)).at(-1)).toMatchObject({ action: 'update', actor: 'memory-tool' });
  });

  it('answers the protocol errors: several matches (with their lines), absent text, missing file, a folder', async () => {
    const before = await snapshot();
    const lines = renderMemoryFile(await only('database')).split('\n');
    const first = lines.indexOf('The database is PostgreSQL 15.') + 1;
    // Line 3 is the description, derived from the first line of the content.
    expect(lines[2]).toBe('description: The database is PostgreSQL 15.');
    expect(
      (
        await refused({
          command: 'str_replace',
          path: '/memories/database.md',
          old_str: 'PostgreSQL 15',
          new_str: 'PostgreSQL 16',
        })
      ).content,
    ).toBe(
      `No replacement was performed. Multiple occurrences of old_str \`PostgreSQL 15\` in lines: 3, ${first}, ${first + 2}. Please ensure it is unique`,
    );
    expect(
      (await refused({ command: 'str_replace', path: '/memories/database.md', old_str: 'MySQL', new_str: 'x' }))
        .content,
    ).toBe('No replacement was performed, old_str `MySQL` did not appear verbatim in /memories/database.md.');
    expect(
      (await refused({ command: 'str_replace', path: '/memories/missing.md', old_str: 'a', new_str: 'b' })).content,
    ).toBe('Error: The path /memories/missing.md does not exist. Please provide a valid path.');
    expect(
      (await refused({ command: 'str_replace', path: '/memories/global', old_str: 'a', new_str: 'b' })).content,
    ).toBe('Error: The path /memories/global does not exist. Please provide a valid path.');
    expect(
      (await refused({ command: 'str_replace', path: '/memories/database.md', old_str: '', new_str: 'b' })).content,
    ).toMatch(/old_str is empty/);
    expect(await snapshot()).toBe(before);
  });

  it('does not count the copy of the first line in a derived description, but counts a description the model wrote', async () => {
    await ok({ command: 'create', path: '/memories/editor.md', file_text: 'The user edits in Helix.' });
    await ok({ command: 'str_replace', path: '/memories/editor.md', old_str: 'Helix', new_str: 'Zed' });
    expect(await only('editor')).toMatchObject({
      content: 'The user edits in Zed.',
      description: 'The user edits in Zed.',
    });

    await ok({
      command: 'create',
      path: '/memories/shell.md',
      file_text: '---\ndescription: Shell is fish\n---\n\nThe shell is fish.',
    });
    expect(
      (await refused({ command: 'str_replace', path: '/memories/shell.md', old_str: 'fish', new_str: 'zsh' })).content,
    ).toMatch(
      /^No replacement was performed\. Multiple occurrences of old_str `fish` in lines: 3, \d+\. Please ensure it is unique$/,
    );
  });

  it('deletes old_str when new_str is omitted, and follows a derived description', async () => {
    await ok({ command: 'str_replace', path: '/memories/database.md', old_str: 'Backups run nightly.\n' });
    expect(await only('database')).toMatchObject({
      content: 'The database is PostgreSQL 15.\nThe replica is PostgreSQL 15 too.',
      description: 'The database is PostgreSQL 15.',
    });
    await ok({
      command: 'str_replace',
      path: '/memories/database.md',
      old_str: 'The database is PostgreSQL 15.\nThe replica',
      new_str: 'The replica',
    });
    expect(await only('database')).toMatchObject({
      content: 'The replica is PostgreSQL 15 too.',
      description: 'The replica is PostgreSQL 15 too.',
    });
  });

  it('edits frontmatter fields engram lets change, and refuses the ones it keeps', async () => {
    await ok({
      command: 'str_replace',
      path: '/memories/database.md',
      old_str: 'type: project',
      new_str: 'type: reference',
    });
    await ok({
      command: 'str_replace',
      path: '/memories/database.md',
      old_str: 'importance: 0.5',
      new_str: 'importance: 0.8',
    });
    const memory = await only('database');
    expect(memory).toMatchObject({ type: 'reference', importance: 0.8 });

    const before = await snapshot();
    const kept: Array<[string, string, RegExp]> = [
      [`id: ${memory.id}`, 'id: mem_other', /id is kept by engram/],
      [`scope: ${PROJECT}`, 'scope: global', /scope is kept by engram/],
      ['hitCount: 0', 'hitCount: 50', /metadata.hitCount is kept/],
      ['archived: false', 'archived: true', /metadata.archived is kept/],
      ['name: database', 'name: db', /rename .* with the rename command/],
      ['type: reference', 'type: nonsense', /Invalid type/],
      ['importance: 0.8', 'importance: [1', /Malformed frontmatter/],
    ];
    for (const [oldString, newString, expected] of kept) {
      const result = await refused({
        command: 'str_replace',
        path: '/memories/database.md',
        old_str: oldString,
        new_str: newString,
      });
      expect(result.content).toMatch(expected);
      expect(result.content).toMatch(/^Error: /);
    }
    expect(
      (
        await refused({
          command: 'str_replace',
          path: '/memories/database.md',
          old_str: '---\nname',
          new_str: 'oops\n---\nname',
        })
      ).content,
    ).toMatch(/frontmatter \(lines 1-\d+\) must stay at the top/);
    expect(await snapshot()).toBe(before);
  });
});

describe('insert', () => {
  beforeEach(async () => {
    await ok({ command: 'create', path: '/memories/deploys.md', file_text: 'Deploys go through GitHub Actions.' });
  });

  it('inserts after a line (0 = top of the body is refused above the frontmatter; the end works)', async () => {
    const length = renderMemoryFile(await only('deploys'))
      .slice(0, -1)
      .split('\n').length;
    expect(
      await ok({
        command: 'insert',
        path: '/memories/deploys.md',
        insert_line: length,
        insert_text: 'Production needs a manual approval.\n',
      }),
    ).toBe('The file /memories/deploys.md has been edited.');
    expect((await only('deploys')).content).toBe(
      'Deploys go through GitHub Actions.\nProduction needs a manual approval.',
    );
    await ok({
      command: 'insert',
      path: '/memories/deploys.md',
      insert_line: String(length - 1),
      insert_text: '## Deploys',
    });
    expect((await only('deploys')).content).toBe(
      '## Deploys\nDeploys go through GitHub Actions.\nProduction needs a manual approval.',
    );
    expect(
      (await refused({ command: 'insert', path: '/memories/deploys.md', insert_line: 0, insert_text: 'Top.' })).content,
    ).toMatch(/must stay at the top/);
  });

  it('answers the protocol errors: insert_line out of range, missing file, a folder', async () => {
    const before = await snapshot();
    const length = renderMemoryFile(await only('deploys'))
      .slice(0, -1)
      .split('\n').length;
    for (const line of [-1, length + 1, 1.5, 'three', null]) {
      const result = await refused({
        command: 'insert',
        path: '/memories/deploys.md',
        insert_line: line,
        insert_text: 'x',
      });
      expect(result.content).toMatch(
        line === null
          ? /Missing required parameter `insert_line`/
          : new RegExp(
              `^Error: Invalid \`insert_line\` parameter: .+\\. It should be within the range of lines of the file: \\[0, ${length}\\]$`,
            ),
      );
    }
    expect(
      (await refused({ command: 'insert', path: '/memories/deploys.md', insert_line: length + 1, insert_text: 'x' }))
        .content,
    ).toBe(
      `Error: Invalid \`insert_line\` parameter: ${length + 1}. It should be within the range of lines of the file: [0, ${length}]`,
    );
    expect(
      (await refused({ command: 'insert', path: '/memories/gone.md', insert_line: 0, insert_text: 'x' })).content,
    ).toBe('Error: The path /memories/gone.md does not exist');
    expect((await refused({ command: 'insert', path: '/memories', insert_line: 0, insert_text: 'x' })).content).toBe(
      'Error: The path /memories does not exist',
    );
    expect(await snapshot()).toBe(before);
  });
});

describe('delete', () => {
  it('forgets the memory (archived, kept in history); refuses the root and folders; answers missing files', async () => {
    await ok({ command: 'create', path: '/memories/temporary.md', file_text: 'The demo runs on port 4000.' });
    const memory = await only('temporary');
    expect(await ok({ command: 'delete', path: '/memories/temporary.md' })).toBe(
      'Successfully deleted /memories/temporary.md',
    );
    expect(await temporary.store.get(memory.id)).toMatchObject({ archived: true });
    expect((await temporary.store.history(memory.id)).at(-1)).toMatchObject({
      action: 'archive',
      actor: 'memory-tool',
    });
    expect((await refused({ command: 'view', path: '/memories/temporary.md' })).code).toBe('NOT_FOUND');

    const before = await snapshot();
    expect(await refused({ command: 'delete', path: '/memories' })).toMatchObject({
      content: 'Error: Cannot delete the /memories directory itself',
    });
    expect((await refused({ command: 'delete', path: '/memories/' })).content).toBe(
      'Error: Cannot delete the /memories directory itself',
    );
    expect((await refused({ command: 'delete', path: '/memories/global' })).content).toMatch(
      /^Error: Cannot delete \/memories\/global: it is the folder of scope global/,
    );
    expect(await refused({ command: 'delete', path: '/memories/temporary.md' })).toMatchObject({
      content: 'Error: The path /memories/temporary.md does not exist',
      code: 'NOT_FOUND',
    });
    expect((await refused({ command: 'delete', path: '/memories/secret-plan.md' })).content).toBe(
      'Error: The path /memories/secret-plan.md does not exist',
    );
    expect(await snapshot()).toBe(before);
  });
});

describe('rename', () => {
  beforeEach(async () => {
    await ok({ command: 'create', path: '/memories/editor.md', file_text: 'The user edits in Helix.' });
    await ok({ command: 'create', path: '/memories/shell.md', file_text: 'The user works in fish shell.' });
  });

  it('renames a memory within its folder: same id, new name, history', async () => {
    const memory = await only('editor');
    expect(
      await ok({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/preferred-editor.md' }),
    ).toBe('Successfully renamed /memories/editor.md to /memories/preferred-editor.md');
    expect(await only('preferred-editor')).toMatchObject({ id: memory.id, content: 'The user edits in Helix.' });
    expect((await temporary.store.history(memory.id)).at(-1)).toMatchObject({ action: 'update', actor: 'memory-tool' });
    expect(await ok({ command: 'view', path: '/memories/preferred-editor.md' })).toContain('name: preferred-editor');
  });

  it('answers the protocol errors and refuses moves between scopes, changing nothing', async () => {
    const before = await snapshot();
    expect(
      await refused({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/shell.md' }),
    ).toMatchObject({
      content: 'Error: The destination /memories/shell.md already exists',
      code: 'CONFLICT',
    });
    expect(
      (await refused({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/global' })).content,
    ).toBe('Error: The destination /memories/global already exists');
    expect((await refused({ command: 'rename', old_path: '/memories', new_path: '/memories/x' })).content).toBe(
      'Error: Cannot rename the /memories directory itself',
    );
    expect(
      (await refused({ command: 'rename', old_path: '/memories/nothing.md', new_path: '/memories/x.md' })).content,
    ).toBe('Error: The path /memories/nothing.md does not exist');
    expect(
      (await refused({ command: 'rename', old_path: '/memories/global', new_path: '/memories/shared' })).content,
    ).toMatch(/folders keep their names/);
    expect(
      (await refused({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/global/editor.md' }))
        .content,
    ).toMatch(
      /^Error: Cannot move \/memories\/editor.md to \/memories\/global: .*create it at \/memories\/global\/editor.md and delete \/memories\/editor.md\.$/,
    );
    expect(
      (await refused({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/Bad Name.md' }))
        .content,
    ).toMatch(/Invalid file name/);
    expect(
      (await refused({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/a/b/c.md' })).content,
    ).toMatch(/Cannot rename to/);
    expect(await snapshot()).toBe(before);
  });
});

describe('paths and input', () => {
  const hostilePaths = [
    '/etc/passwd',
    'memories/editor.md',
    '/memoriesX/editor.md',
    '/memories/../etc/passwd',
    '/memories/global/../../etc/passwd',
    '/memories/..',
    '/memories/...',
    '/memories/%2e%2e%2fetc%2fpasswd',
    '/memories/%2E%2E/secret',
    '/memories/%252e%252e%252fetc',
    '/memories/..%2f..%2fetc',
    '/memories/..\\..\\etc\\passwd',
    '/memories\\..\\secret',
    '/memories/editor.md\u0000.txt',
    '/memories/line\nbreak.md',
    `/memories/${'a/'.repeat(400)}x.md`,
  ];

  it('refuses traversal, encoded traversal, backslashes, NUL and absurd lengths with SANDBOX_DENIED, in every command', async () => {
    await ok({ command: 'create', path: '/memories/editor.md', file_text: 'The user edits in Helix.' });
    const before = await snapshot();
    for (const path of hostilePaths) {
      const inputs = [
        { command: 'view', path },
        { command: 'create', path, file_text: 'Planted.' },
        { command: 'str_replace', path, old_str: 'Helix', new_str: 'x' },
        { command: 'insert', path, insert_line: 0, insert_text: 'x' },
        { command: 'delete', path },
        { command: 'rename', old_path: path, new_path: '/memories/moved.md' },
        { command: 'rename', old_path: '/memories/editor.md', new_path: path },
      ];
      for (const input of inputs) {
        const result = await refused(input);
        expect(result.code, `${JSON.stringify(input)} → ${result.content}`).toBe('SANDBOX_DENIED');
        expect(result.content).toMatch(/^Error: The path ".*" (contains|is outside|is \d+ characters)/s);
      }
    }
    expect(await snapshot()).toBe(before);
  });

  it('accepts harmless spellings: double slashes, "." segments, a trailing slash', async () => {
    await ok({ command: 'create', path: '/memories//global/./tabs.md', file_text: 'The user prefers tabs.' });
    expect((await only('tabs', 'global')).scope).toBe('global');
    expect(await ok({ command: 'view', path: '/memories/global/' })).toContain('/memories/global/tabs.md');
  });

  it('refuses malformed calls with a clear message', async () => {
    const before = await snapshot();
    const cases: Array<[unknown, RegExp]> = [
      [null, /takes an object/],
      ['view /memories', /takes an object/],
      [[{ command: 'view' }], /takes an object/],
      [{}, /Unknown command undefined/],
      [{ command: 'format' }, /Unknown command "format": use one of view, create, str_replace, insert, delete, rename/],
      [{ command: 'view' }, /Missing required parameter `path`/],
      [{ command: 'view', path: 42 }, /`path` must be a string/],
      [{ command: 'create', path: '/memories/a.md' }, /Missing required parameter `file_text` for command `create`/],
      [{ command: 'str_replace', path: '/memories/a.md', new_str: 'x' }, /Missing required parameter `old_str`/],
      [{ command: 'insert', path: '/memories/a.md', insert_line: 0 }, /Missing required parameter `insert_text`/],
      [{ command: 'rename', old_path: '/memories/a.md' }, /Missing required parameter `new_path`/],
      [
        { command: 'str_replace', path: '/memories/a.md', old_str: 'x'.repeat(200 * 1024), new_str: '' },
        /`old_str` is 204800 bytes/,
      ],
    ];
    for (const [input, expected] of cases) expect((await refused(input)).content).toMatch(expected);
    expect(await snapshot()).toBe(before);
  });

  it('throws store failures instead of answering them to the model', async () => {
    await temporary.store.close();
    await expect(tool.run({ command: 'view', path: '/memories' })).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    await temporary.store.open();
  });
});

describe('source', () => {
  it('gives its source to every save it makes, and edits keep the memory its own source', async () => {
    const sourced = open({
      actor: 'extraction-agent',
      source: { sessionId: 'chat-7', turnId: 'a3', origin: 'ignored' },
    });
    const user = await engram.remember({
      name: 'editor',
      content: 'The user edits in Helix.',
      source: { origin: 'cli' },
    });
    await ok(
      { command: 'create', path: '/memories/build-tool.md', file_text: 'The project builds with Bazel.' },
      sourced,
    );
    expect((await only('build-tool')).source).toEqual({
      sessionId: 'chat-7',
      turnId: 'a3',
      origin: 'extraction-agent',
    });
    await ok({ command: 'str_replace', path: '/memories/editor.md', old_str: 'Helix', new_str: 'Zed' }, sourced);
    expect(await only('editor')).toMatchObject({ content: 'The user edits in Zed.', source: { origin: 'cli' } });
    const later = open({ source: { sessionId: 'chat-8', turnId: 'a1' } });
    await ok({ command: 'rename', old_path: '/memories/editor.md', new_path: '/memories/user-editor.md' }, later);
    expect((await temporary.store.get(user.id))!.source).toEqual({ origin: 'cli' });
  });

  it('without a source option leaves a memory its own source', async () => {
    await engram.remember({
      name: 'editor',
      content: 'The user edits in Helix.',
      source: { sessionId: 's1', origin: 'cli' },
    });
    await ok({ command: 'str_replace', path: '/memories/editor.md', old_str: 'Helix', new_str: 'Zed' });
    expect((await only('editor')).source).toEqual({ sessionId: 's1', origin: 'cli' });
  });
});

describe('layout and definitions', () => {
  it('puts each visible scope in its own folder, refuses clashing folders and a default scope it cannot see', async () => {
    const custom = open({ scopes: [PROJECT, 'global', 'user:ada'], directories: { 'user:ada': 'me' } });
    expect(custom.layout.folders.map((folder) => [folder.name, folder.scope])).toEqual([
      ['global', 'global'],
      ['me', 'user:ada'],
    ]);
    await ok(
      { command: 'create', path: '/memories/me/languages.md', file_text: 'Ada reads French and English.' },
      custom,
    );
    expect((await only('languages', 'user:ada')).scope).toBe('user:ada');
    expect(custom.instructions).toContain('/memories/me/<name>.md holds memories of scope user:ada');

    const shared = open({ scopes: [PROJECT, 'user:a', 'user:b.c', FOREIGN] });
    expect(shared.layout.folders.map((folder) => [folder.name, folder.scope])).toEqual([
      ['project', FOREIGN],
      ['user', 'user:a'],
      ['user-b-c', 'user:b.c'],
    ]);
    expect(() =>
      open({ scopes: [PROJECT, 'user:a', 'user:b'], directories: { 'user:a': 'people', 'user:b': 'people' } }),
    ).toThrow(/would share the memory-tool folder "people"/);
    expect(() => open({ scopes: ['global'], defaultScope: PROJECT })).toThrow(/must be one of its scopes/);
    expect(() => open({ scopes: [PROJECT, 'global'], directories: { global: '../up' } })).toThrow(
      /Invalid memory-tool folder name/,
    );
    expect(() => open({ scopes: [] })).toThrow(/at least one scope/);
  });

  it('exports a JSON-Schema definition for any model and the Anthropic native entry for it', () => {
    const definition = tool.definition();
    expect(definition.name).toBe('memory');
    expect(definition.inputSchema).toMatchObject({ type: 'object', required: ['command'] });
    expect((definition.inputSchema as any).properties.command.enum).toEqual([
      'view',
      'create',
      'str_replace',
      'insert',
      'delete',
      'rename',
    ]);
    expect(definition.description).toContain('/memories/global/<name>.md');
    expect(anthropicNativeTool(definition)).toEqual({ type: 'memory_20250818', name: 'memory' });
    expect(anthropicNativeTool(memoryToolDefinition())).toBe(ANTHROPIC_MEMORY_TOOL);
    expect(anthropicNativeTool({ ...definition })).toBeUndefined();
  });

  it("serves the Anthropic SDK's betaMemoryTool helper through memoryToolHandlers: refusals are ToolErrors holding the exact text", async () => {
    const runnable = betaMemoryTool(memoryToolHandlers(tool));
    expect(runnable).toMatchObject({ type: 'memory_20250818', name: 'memory' });
    expect(
      await runnable.run({ command: 'create', path: '/memories/sdk.md', file_text: 'Created through the SDK helper.' }),
    ).toBe('File created successfully at: /memories/sdk.md');
    const missing = await Promise.resolve(runnable.run({ command: 'view', path: '/memories/none.md' })).catch(
      (error: unknown) => error,
    );
    expect(missing).toBeInstanceOf(ToolError);
    expect((missing as ToolError).content).toBe(
      'The path /memories/none.md does not exist. Please provide a valid path.',
    );
  });

  it('answers through the SDK\'s tool runner with the reference strings exactly, "Error:" only where the protocol has it', async () => {
    const api = await startAnthropicMessagesServer({ apiKey: 'sk-ant-test' });
    try {
      const call = (id: string, input: Record<string, unknown>) => ({
        message: { content: [{ type: 'tool_use' as const, id, name: 'memory', input }] },
      });
      api.script(
        call('toolu_1', { command: 'view', path: '/memories/none.md' }),
        call('toolu_2', { command: 'delete', path: '/memories/none.md' }),
        call('toolu_3', { command: 'create', path: '/memories/runner.md', file_text: 'Written by the tool runner.' }),
        { message: { text: 'Done.' } },
      );
      const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: api.url, maxRetries: 0 });
      const final = await client.beta.messages
        .toolRunner({
          model: 'claude-haiku-5-5',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'tidy up' }],
          tools: [betaMemoryTool(memoryToolHandlers(tool))],
          // The loopback server keeps no server-side threads: send the whole history each turn.
          thread: false,
        })
        .runUntilDone();
      expect(final.content).toMatchObject([{ type: 'text', text: 'Done.' }]);
      const resultOf = (index: number) =>
        (api.requests[index]!.body as { messages: Array<{ content: unknown }> }).messages.at(-1)!.content;
      expect(resultOf(1)).toEqual([
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: 'The path /memories/none.md does not exist. Please provide a valid path.',
          is_error: true,
        },
      ]);
      expect(resultOf(2)).toEqual([
        {
          type: 'tool_result',
          tool_use_id: 'toolu_2',
          content: 'Error: The path /memories/none.md does not exist',
          is_error: true,
        },
      ]);
      expect(resultOf(3)).toEqual([
        { type: 'tool_result', tool_use_id: 'toolu_3', content: 'File created successfully at: /memories/runner.md' },
      ]);
      expect((await only('runner')).content).toBe('Written by the tool runner.');
    } finally {
      await api.close();
    }
  });
});
