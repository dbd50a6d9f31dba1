import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engram } from '../../../src/engram.js';
import { createMemoryMcpServer } from '../../../src/surfaces/mcp/memory-mcp-server.js';
import { openTemporaryStore, type TemporaryStore } from '../../support/temporary-store.js';
import { MEMORY_FILE_TOOL_NAMES } from '../../support/mcp-invalid-params.js';

const PROJECT = 'project:github.com/acme/app';
const FOREIGN = 'project:github.com/acme/other';
const FILE_TOOLS = MEMORY_FILE_TOOL_NAMES;

let temporary: TemporaryStore;
let client: Client;
let logged: string[];

beforeEach(async () => {
  temporary = await openTemporaryStore(Date.parse('2026-03-01T09:00:00.000Z'));
  await temporary.store.create(
    { scope: FOREIGN, name: 'secret-plan', content: 'Project Bluebird ships in May.' },
    { actor: 'test' },
  );
  const engram = new Engram({
    store: temporary.store,
    defaultScope: PROJECT,
    now: () => new Date(temporary.clock.now),
  });
  logged = [];
  const server = createMemoryMcpServer(engram, {
    scopes: [PROJECT, 'global'],
    version: '1.0.0',
    actor: 'mcp-test',
    log: (message) => logged.push(message),
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  client = new Client({ name: 'memory-tool-test', version: '1.0.0' });
  await client.connect(clientSide);
});

afterEach(async () => {
  await client.close();
  await temporary.close();
});

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function text(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

async function ok(name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(name, args);
  expect(result.isError, text(result)).toBeFalsy();
  return text(result);
}

async function refused(name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(name, args);
  expect(result.isError, text(result)).toBe(true);
  return text(result);
}

async function snapshot(): Promise<string> {
  return JSON.stringify(
    await temporary.store.list({ scopes: [PROJECT, 'global', FOREIGN], archived: 'include', invalid: 'include' }),
  );
}

describe('memory-tool commands as MCP tools', () => {
  it('lists one tool per command with its own required fields and honest annotations', async () => {
    const { tools } = await client.listTools();
    const fileTools = tools.filter((tool) => tool.name.startsWith('memory_file_'));
    expect(fileTools.map((tool) => tool.name).sort()).toEqual(FILE_TOOLS);
    const byName = new Map(fileTools.map((tool) => [tool.name, tool]));
    expect(byName.get('memory_file_view')!.inputSchema.required).toEqual(['path']);
    expect(byName.get('memory_file_create')!.inputSchema.required).toEqual(['path', 'file_text']);
    expect(byName.get('memory_file_str_replace')!.inputSchema.required).toEqual(['path', 'old_str']);
    expect(byName.get('memory_file_insert')!.inputSchema.required).toEqual(['path', 'insert_line', 'insert_text']);
    expect(byName.get('memory_file_rename')!.inputSchema.required).toEqual(['old_path', 'new_path']);
    expect(byName.get('memory_file_view')!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('memory_file_delete')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('memory_file_view')!.description).toContain(
      '/memories/global/<name>.md holds memories of scope global',
    );
  });

  it("runs every command with the protocol's strings, over the same memories as memory_save", async () => {
    expect(await ok('memory_file_view', { path: '/memories' })).toBe(
      "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n" +
        '32B\t/memories\n16B\t/memories/MEMORY.md\n16B\t/memories/global/\n16B\t/memories/global/MEMORY.md',
    );
    expect(await ok('memory_file_create', { path: '/memories/editor.md', file_text: 'The user edits in Helix.' })).toBe(
      'File created successfully at: /memories/editor.md',
    );
    const saved = await call('memory_save', {
      content: 'Commit messages are written in English.',
      name: 'commit-language',
      scope: 'global',
    });
    expect(saved.isError).toBeFalsy();
    expect(await ok('memory_file_view', { path: '/memories/global/commit-language.md' })).toContain('     1\t---');

    expect(
      await ok('memory_file_str_replace', { path: '/memories/editor.md', old_str: 'Helix', new_str: 'Zed' }),
    ).toMatch(
      /^The memory file has been edited\. Here is the snippet showing the change \(with line numbers\):\n(.*\n)*\s+\d+\tThe user edits in Zed\./,
    );
    const lineCount = (await ok('memory_file_view', { path: '/memories/editor.md' })).split('\n').length - 1;
    expect(
      await ok('memory_file_insert', {
        path: '/memories/editor.md',
        insert_line: lineCount,
        insert_text: 'Since March 2026.',
      }),
    ).toBe('The file /memories/editor.md has been edited.');
    expect(
      await ok('memory_file_rename', { old_path: '/memories/editor.md', new_path: '/memories/preferred-editor.md' }),
    ).toBe('Successfully renamed /memories/editor.md to /memories/preferred-editor.md');
    const [memory] = await temporary.store.list({ scopes: [PROJECT] });
    expect(memory).toMatchObject({ name: 'preferred-editor', content: 'The user edits in Zed.\nSince March 2026.' });
    expect((await temporary.store.history(memory!.id)).every((entry) => entry.actor === 'mcp-test')).toBe(true);
    expect(await ok('memory_file_delete', { path: '/memories/preferred-editor.md' })).toBe(
      'Successfully deleted /memories/preferred-editor.md',
    );
    expect(await temporary.store.get(memory!.id)).toMatchObject({ archived: true });
  });

  it('answers the protocol errors as isError results that change nothing', async () => {
    await ok('memory_file_create', {
      path: '/memories/database.md',
      file_text: 'Primary: PostgreSQL 15.\nReplica: PostgreSQL 15.',
    });
    await ok('memory_file_create', { path: '/memories/shell.md', file_text: 'The user works in fish shell.' });
    const before = await snapshot();
    expect(await refused('memory_file_view', { path: '/memories/none.md' })).toBe(
      'The path /memories/none.md does not exist. Please provide a valid path.',
    );
    expect(
      await refused('memory_file_str_replace', {
        path: '/memories/database.md',
        old_str: 'PostgreSQL 15',
        new_str: '16',
      }),
    ).toMatch(
      /^No replacement was performed\. Multiple occurrences of old_str `PostgreSQL 15` in lines: 3, \d+, \d+\. Please ensure it is unique$/,
    );
    expect(await refused('memory_file_str_replace', { path: '/memories/none.md', old_str: 'a', new_str: 'b' })).toBe(
      'Error: The path /memories/none.md does not exist. Please provide a valid path.',
    );
    expect(
      await refused('memory_file_insert', { path: '/memories/shell.md', insert_line: 99, insert_text: 'x' }),
    ).toMatch(
      /^Error: Invalid `insert_line` parameter: 99\. It should be within the range of lines of the file: \[0, \d+\]$/,
    );
    expect(await refused('memory_file_delete', { path: '/memories' })).toBe(
      'Error: Cannot delete the /memories directory itself',
    );
    expect(await refused('memory_file_rename', { old_path: '/memories', new_path: '/memories/x' })).toBe(
      'Error: Cannot rename the /memories directory itself',
    );
    expect(
      await refused('memory_file_rename', { old_path: '/memories/database.md', new_path: '/memories/shell.md' }),
    ).toBe('Error: The destination /memories/shell.md already exists');
    expect(await refused('memory_file_delete', { path: '/memories/secret-plan.md' })).toBe(
      'Error: The path /memories/secret-plan.md does not exist',
    );
    expect(await snapshot()).toBe(before);
  });

  it('refuses escapes and malformed arguments (schema violations included) and changes nothing', async () => {
    const before = await snapshot();
    for (const path of [
      '/etc/passwd',
      '/memories/../../etc/passwd',
      '/memories/%2e%2e%2fetc',
      '/memories/..\\x',
      '/memories/a\u0000b',
      'x'.repeat(5_000),
    ]) {
      expect(await refused('memory_file_view', { path })).toMatch(/^Error: The path ".*"/s);
      expect(await refused('memory_file_create', { path, file_text: 'Planted.' })).toMatch(/^Error: The path ".*"/s);
    }
    expect(await refused('memory_file_create', { path: '/memories/a.md', file_text: 42 })).toMatch(/file_text/);
    expect(await refused('memory_file_create', { path: '/memories/a.md' })).toMatch(/file_text/);
    expect(await refused('memory_file_create', { path: '/memories/a.md', file_text: 'x'.repeat(300 * 1024) })).toMatch(
      /at most 131072 bytes/,
    );
    expect(await snapshot()).toBe(before);
    expect(logged).toEqual([]);
  });

  it('reports a failing store as INTERNAL and logs it, never the stack to the client', async () => {
    await temporary.store.close();
    const answer = await refused('memory_file_view', { path: '/memories' });
    expect(answer).toBe('INTERNAL: Unexpected error in the memory server; see its log.');
    expect(logged.join('\n')).toMatch(/memory file tool failed: .*store is not open/i);
    await temporary.store.open();
  });
});
