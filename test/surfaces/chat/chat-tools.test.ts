import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChatTools } from '../../../src/surfaces/chat/chat-tools.js';
import { parseChatLine } from '../../../src/surfaces/chat/chat-commands.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { resolveSandboxRoot } from '../../../src/sandbox/node/sandbox-paths.js';
import { FileReadCache } from '../../../src/session/file-read-cache.js';
import type { SessionTool } from '../../../src/contracts/session-tool.js';

let root: string;
let project: string;
let asked: string[];
let answer: boolean;
let tools: Record<string, SessionTool>;
const context = { sessionId: 's1', toolUseId: 't1', signal: new AbortController().signal };

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'engram-chat-tools-')));
  project = join(root, 'project');
  await mkdir(join(project, 'src'), { recursive: true });
  await writeFile(join(project, 'src', 'a.ts'), 'export const a = 1;\nexport const b = 2;\n');
  await writeFile(join(project, '.env'), 'SECRET=1\n');
  await writeFile(join(root, 'outside.txt'), 'outside\n');
  asked = [];
  answer = true;
  const settings = { ...DEFAULT_SETTINGS, chat: { ...DEFAULT_SETTINGS.chat, writeMaxBytes: 1_000 } };
  const list = createChatTools({
    root: await resolveSandboxRoot(project),
    settings,
    fileReadCache: new FileReadCache({ maxEntries: 10, maxBytes: 100_000 }),
    confirm: async (question) => {
      asked.push(question);
      return answer;
    },
  });
  tools = Object.fromEntries(list.map((tool) => [tool.definition.name, tool]));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function refusal(call: Promise<unknown>): Promise<EngramError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(EngramError);
  return error as EngramError;
}

describe('chat tools', () => {
  it('read_file answers numbered lines and reports the file read; list_files and search_files see the project', async () => {
    const read = await tools.read_file!.run({ path: 'src/a.ts', offset: 2 }, context);
    expect(read.content).toBe('     2\texport const b = 2;');
    expect(read.filesRead).toEqual([{ path: 'src/a.ts', content: read.content }]);
    expect((await tools.list_files!.run({}, context)).content).toMatch(/^\.\/ \(2 entries\)\n\.env \(9 bytes\)\nsrc\//);
    expect((await tools.search_files!.run({ pattern: 'const b' }, context)).content).toContain(
      'src/a.ts:2: export const b = 2;',
    );
  });

  it('refuses reads outside the project and of secret files, with SANDBOX_DENIED', async () => {
    await symlink(join(root, 'outside.txt'), join(project, 'link.txt'));
    for (const path of [
      '../outside.txt',
      join(root, 'outside.txt'),
      'link.txt',
      '.env',
      'src/%2e%2e/%2e%2e/outside.txt',
      'src/\u0000a.ts',
    ]) {
      expect((await refusal(tools.read_file!.run({ path }, context))).code).toBe('SANDBOX_DENIED');
    }
    expect((await refusal(tools.read_file!.run({ path: 42 }, context))).code).toBe('INVALID_INPUT');
    expect((await refusal(tools.read_file!.run({ path: 'missing.ts' }, context))).code).toBe('NOT_FOUND');
  });

  it('write_file asks first, writes inside the project only, and refuses bad content before asking', async () => {
    const written = await tools.write_file!.run({ path: 'src/new/b.ts', content: 'export {};\n' }, context);
    expect(written).toEqual({ content: 'Wrote 11 bytes to src/new/b.ts.', filesEdited: ['src/new/b.ts'] });
    expect(asked).toEqual(['Write 11 bytes to src/new/b.ts (new file)?']);
    answer = false;
    const declined = await tools.write_file!.run({ path: 'src/a.ts', content: 'gone' }, context);
    expect(declined.isError).toBe(true);
    expect(await readFile(join(project, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\nexport const b = 2;\n');
    answer = true;
    asked = [];
    await symlink(root, join(project, 'up'));
    for (const path of ['../x.txt', '/tmp/x.txt', 'up/x.txt', '.git/hooks/pre-commit', '.', '.env']) {
      expect((await refusal(tools.write_file!.run({ path, content: 'x' }, context))).code).toBe('SANDBOX_DENIED');
    }
    expect((await refusal(tools.write_file!.run({ path: 'big.txt', content: 'x'.repeat(1_001) }, context))).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    expect((await refusal(tools.write_file!.run({ path: 'src', content: 'x' }, context))).code).toBe('INVALID_INPUT');
    expect((await refusal(tools.write_file!.run({ path: 'n.txt', content: { text: 'x' } }, context))).code).toBe(
      'INVALID_INPUT',
    );
    expect(asked).toEqual([]);
    expect(await readFile(join(root, 'outside.txt'), 'utf8')).toBe('outside\n');
  });
});

describe('chat lines', () => {
  it('reads commands, unknown commands, messages that start with a slash, and blank lines', () => {
    expect(parseChatLine('  /compact keep the API notes ')).toEqual({
      kind: 'command',
      name: 'compact',
      argument: 'keep the API notes',
    });
    expect(parseChatLine('/EXIT')).toEqual({ kind: 'command', name: 'exit', argument: '' });
    expect(parseChatLine('/nope')).toEqual({ kind: 'unknown-command', name: 'nope' });
    expect(parseChatLine('/usr/bin/env is what?')).toEqual({ kind: 'message', text: '/usr/bin/env is what?' });
    expect(parseChatLine(' \t ')).toEqual({ kind: 'empty' });
  });
});
