import {
  appendFile,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectSlug } from '../../../src/session/node/session-paths.js';
import { readSessionTranscript } from '../../../src/session/node/session-transcript-reader.js';
import { messageText } from '../../../src/contracts/language-model-content.js';
import type { LanguageModelMessage, LanguageModelRequest } from '../../../src/contracts/language-model.js';
import { ScriptedLanguageModel } from '../../../src/testing/scripted-language-model.js';
import { converse, useTestChats, FRANKFURT_MEMORY } from '../../support/chat-support.js';
import { ninePartSummary } from '../../support/session-support.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';

const chats = useTestChats();
const chat = chats.start;

const userTexts = (request: LanguageModelRequest): string[] =>
  request.messages.filter((message) => message.role === 'user').map(messageText);
const systemOf = (request: LanguageModelRequest): string =>
  Array.isArray(request.system) ? request.system.map((block) => block.text).join('\n') : String(request.system);

/** A scripted model turn that reads `path` with the read_file tool (`id` names the call). */
const readFileCall = (id: string, path: string) => ({
  content: [{ type: 'tool_use' as const, id, name: 'read_file', input: { path } }],
});
/** The first tool result in the last message of the model's request `index`. */
const toolResultOf = (model: ScriptedLanguageModel, index: number): string =>
  (model.requests[index]!.messages.at(-1)!.content as unknown as Array<{ content: string }>)[0]!.content;

describe('engram chat terminal', () => {
  it('streams the answer, runs a read_file tool call, and shows a status line with context usage', async () => {
    const model = new ScriptedLanguageModel({
      streamChunkCharacters: 4,
      script: [
        {
          content: [
            { type: 'text', text: 'Reading.' },
            { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/app.ts' } },
          ],
        },
        'The file exports main, which starts the app.',
      ],
    });
    const deltas: string[] = [];
    const session = await chat({
      model,
      files: { 'src/app.ts': 'export function main() {}\n', 'CLAUDE.md': 'Use tabs, never spaces.\n' },
    });
    const original = model.generate.bind(model);
    model.generate = (request) =>
      original({
        ...request,
        ...(request.onTextDelta && { onTextDelta: (text: string) => (deltas.push(text), request.onTextDelta!(text)) }),
      });
    await session.waitFor(/\[context [\d.]+K?\/200K tokens \(\d+%\)/);
    session.type('What does src/app.ts export?');
    await session.waitFor('The file exports main, which starts the app.');
    await session.waitFor(/starts the app\.\n(?:· .*\n)*\[context/);
    expect(session.output()).toContain('⏺ read_file(path: "src/app.ts")');
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('Reading.The file exports main, which starts the app.');
    // The tool result went back to the model, numbered like cat -n; the instruction file is in the system prompt.
    const second = model.requests[1]!;
    const result = second.messages.at(-1)!.content as unknown as Array<{ type: string; content?: string }>;
    expect(result[0]).toMatchObject({ type: 'tool_result', content: '     1\texport function main() {}' });
    expect(systemOf(second)).toContain('Use tabs, never spaces.');
    expect(second.tools!.map((tool) => tool.name)).toEqual([
      'read_file',
      'list_files',
      'search_files',
      'write_file',
      'todo_write',
      'read_persisted_output',
    ]);
  });

  it('injects recalled memory into the turn, never the system prompt, which stays byte-identical', async () => {
    const model = new ScriptedLanguageModel({ script: ['Noted.', 'Sure.'] });
    const session = await chat({ model });
    await session.opened.engram.remember(FRANKFURT_MEMORY);
    await converse(
      session,
      ['Where do we deploy the Frankfurt service?', 'Noted.'],
      ['And the staging copy?', 'Sure.'],
    );
    const [first, second] = model.requests;
    const texts = userTexts(first!);
    expect(texts).toHaveLength(2);
    expect(texts[0]).toContain('<memory_context>');
    expect(texts[0]).toContain('Frankfurt region (eu-central-1)');
    expect(texts[1]).toBe('Where do we deploy the Frankfurt service?');
    expect(systemOf(first!)).not.toContain('eu-central-1');
    expect(JSON.stringify(second!.system)).toBe(JSON.stringify(first!.system));
    // The second request begins with the first one's messages, unchanged (cache marks aside: only the latest message carries one).
    const unmarked = (messages: readonly LanguageModelMessage[]): string =>
      JSON.stringify(messages.map(({ cache: _cache, ...message }) => message));
    expect(unmarked(second!.messages.slice(0, first!.messages.length))).toBe(unmarked(first!.messages));
    expect(second!.messages.map((message) => message.cache === true)).toEqual(
      second!.messages.map((_, index) => index === second!.messages.length - 1),
    );
    expect(session.agent.memoryReport().recalled.map((memory) => memory.turns)).toEqual([1]);
  });

  it('queues extraction after each turn: an explicit "remember" is stored and shown by /memory', async () => {
    const model = new ScriptedLanguageModel({ script: ['Noted, I will keep that in mind.'] });
    const session = await chat({ model });
    session.type('Remember that the staging database is called atlas.');
    await session.waitFor('Noted, I will keep that in mind.');
    await session.waitFor(/· remembered: /);
    const stored = await session.opened.engram.list({});
    expect(stored.map((memory) => memory.content).join('\n')).toMatch(/staging database is called atlas/i);
    session.type('/memory');
    await session.waitFor(/Memories stored by extraction this session:\n  \S+ \S+ · \w+, created \(explicit\)/);
  });

  it('writes a file only after the user says yes; "no" (or anything else) writes nothing', async () => {
    const model = new ScriptedLanguageModel({
      script: [
        {
          content: [
            {
              type: 'tool_use',
              id: 'toolu_w1',
              name: 'write_file',
              input: { path: 'notes/todo.md', content: '- ship it\n' },
            },
          ],
        },
        'Written.',
        {
          content: [
            {
              type: 'tool_use',
              id: 'toolu_w2',
              name: 'write_file',
              input: { path: 'README.md', content: 'overwritten' },
            },
          ],
        },
        'Not written, as you wish.',
      ],
    });
    const session = await chat({ model, files: { 'README.md': 'original\n' } });
    session.type('Write the todo file.');
    await session.waitFor('Write 10 bytes to notes/todo.md (new file)? [y/N]');
    session.type('y');
    await session.waitFor('Written.');
    expect(await readFile(join(session.project, 'notes/todo.md'), 'utf8')).toBe('- ship it\n');
    expect((await stat(join(session.project, 'notes/todo.md'))).mode & 0o777).toBe(0o644);
    const mark = session.output().length;
    session.type('Now replace the README.');
    await session.waitFor('Write 11 bytes to README.md (replacing 9 bytes)? [y/N]', mark);
    session.type('nope');
    await session.waitFor('Not written, as you wish.', mark);
    expect(await readFile(join(session.project, 'README.md'), 'utf8')).toBe('original\n');
    const declined = model.requests[3]!.messages.at(-1)!.content as unknown as Array<{
      content?: string;
      isError?: boolean;
    }>;
    expect(declined[0]).toMatchObject({ isError: true });
    expect(declined[0]!.content).toMatch(/declined: nothing was written/);
    expect(session.agent.session.filesEdited).toEqual(['notes/todo.md']);
  });

  it('refuses writes outside the project without asking: traversal, absolute paths, symlink escape, .git', async () => {
    const outside = [
      '../escape.txt',
      '/etc/engram-test',
      'link/escape.txt',
      '.git/config',
      'a/%2e%2e/%2e%2e/escape.txt',
    ];
    const model = new ScriptedLanguageModel({
      script: [
        {
          content: outside.map((path, index) => ({
            type: 'tool_use' as const,
            id: `toolu_o${index}`,
            name: 'write_file',
            input: { path, content: 'x' },
          })),
        },
        'Refused, all of them.',
      ],
    });
    const session = await chat({ model });
    await symlink(session.root, join(session.project, 'link'));
    session.type('Write outside.');
    await session.waitFor('Refused, all of them.');
    expect(session.output()).not.toContain('[y/N]');
    const results = model.requests[1]!.messages.at(-1)!.content as unknown as Array<{
      content: string;
      isError?: boolean;
    }>;
    expect(results).toHaveLength(outside.length);
    for (const result of results) {
      expect(result.isError).toBe(true);
      expect(result.content).toMatch(/SANDBOX_DENIED/);
    }
    expect(await readdir(session.root)).not.toContain('escape.txt');
    expect(await readFile(join(session.project, '.git/HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
  });

  it('reads an unchanged file once: the second read answers the unchanged marker, a changed file is read again', async () => {
    const read = (id: string) => readFileCall(id, 'a.txt');
    const model = new ScriptedLanguageModel({ script: [read('r1'), 'one', read('r2'), 'two', read('r3'), 'three'] });
    const session = await chat({ model, files: { 'a.txt': 'alpha\n' } });
    await converse(session, ['read a', 'one'], ['read a again', 'two']);
    await writeFile(join(session.project, 'a.txt'), 'alpha and beta\n');
    session.type('and once more');
    await session.waitFor('three');
    const resultOf = (index: number): string => toolResultOf(model, index);
    expect(resultOf(1)).toBe('     1\talpha');
    expect(resultOf(3)).toMatch(/^File unchanged since it was last read/);
    expect(resultOf(5)).toBe('     1\talpha and beta');
  });

  it('reads a big file again in full: its first result was stored on disk and the model saw only a preview', async () => {
    const big = Array.from({ length: 2_000 }, (_, index) => `line ${index} ${'x'.repeat(40)}`).join('\n') + '\n';
    const read = (id: string) => readFileCall(id, 'big.txt');
    const model = new ScriptedLanguageModel({ script: [read('b1'), 'one', read('b2'), 'two'] });
    const session = await chat({ model, files: { 'big.txt': big } });
    expect(Buffer.byteLength(big)).toBeGreaterThan(session.opened.engram.settings.session.toolResultThresholdBytes);
    await converse(session, ['read big', 'one'], ['read big again', 'two']);
    const resultOf = (index: number): string => toolResultOf(model, index);
    expect(session.output()).toMatch(/a \d+-byte tool result was saved to .*b1/);
    expect(session.output()).toMatch(/a \d+-byte tool result was saved to .*b2/);
    expect(resultOf(1)).toContain('line 0 ');
    expect(resultOf(3)).not.toMatch(/^File unchanged/);
    expect(resultOf(3)).toContain('line 0 ');
  });

  it('never answers "unchanged" with server-side context editing on: the provider may have cleared the earlier result', async () => {
    const read = (id: string) => readFileCall(id, 'a.txt');
    const model = new ScriptedLanguageModel({ script: [read('r1'), 'one', read('r2'), 'two'] });
    const session = await chat({
      model,
      files: { 'a.txt': 'alpha\n' },
      settings: { 'session.serverContextEditing': true },
    });
    await converse(session, ['read a', 'one'], ['read a again', 'two']);
    const resultOf = (index: number): string => toolResultOf(model, index);
    expect(resultOf(1)).toBe('     1\talpha');
    expect(resultOf(3)).toBe('     1\talpha');
  });

  it('never sends a secret a project CLAUDE.md imports: the import is refused, said at start and listed by /memory', async () => {
    const model = new ScriptedLanguageModel({ script: ['Hello.'] });
    const session = await chat({
      model,
      files: { '.env': 'API_TOKEN=project-env-secret\n', 'CLAUDE.md': 'Project rule.\n@.env\n' },
    });
    await session.waitFor('· instruction files: 1 problem (refused imports, skipped files); /memory lists them');
    session.type('Hi.');
    await session.waitFor('Hello.');
    expect(JSON.stringify(model.requests[0])).not.toContain('project-env-secret');
    expect(systemOf(model.requests[0]!)).toContain('Project rule.');
    session.type('/memory');
    await session.waitFor(/warning: \S+\.env \(imported by \S+CLAUDE\.md, line 2\): a file that usually holds secrets/);
  });

  it('answers /help, unknown commands, /memory, /notes, /forget, and treats /etc/hosts-like text as a message', async () => {
    const model = new ScriptedLanguageModel({ script: ['It is a hosts file.'] });
    const session = await chat({
      model,
      files: {
        'CLAUDE.md': 'Project rule.\n',
        '.claude/rules/tests.md': '---\npaths: ["test/**"]\n---\nTests use vitest.\n',
      },
    });
    const memory = await session.opened.engram.remember({ content: 'The user prefers pnpm over npm.', type: 'user' });
    session.type('/help');
    await session.waitFor('/compact [instructions]');
    session.type('/frobnicate now');
    await session.waitFor('Unknown command /frobnicate. /help lists the commands.');
    session.type('/memory');
    await session.waitFor(/project +.*CLAUDE\.md · 1 line, 14 bytes/);
    await session.waitFor(/tests\.md .*paths test\/\*\* \(inactive\)/);
    session.type('/notes');
    await session.waitFor('(No session notes yet');
    session.type(`/forget ${memory.id}`);
    await session.waitFor(`Forgot ${memory.id}`);
    expect((await session.opened.engram.get(memory.id)).archived).toBe(true);
    session.type('/forget something nobody ever said');
    await session.waitFor('No memory clearly matches; nothing was forgotten.');
    session.type('/forget');
    await session.waitFor('Say what to forget');
    session.type('/etc/hosts what is this file?');
    await session.waitFor('It is a hosts file.');
    expect(userTexts(model.requests[0]!).at(-1)).toBe('/etc/hosts what is this file?');
  });

  it('/compact compacts through the summarizer, and the session goes on after the boundary', async () => {
    const model = new ScriptedLanguageModel({
      script: [
        `First answer. ${'The build runs tsc, then copies the viewer files into dist. '.repeat(40)}`,
        `Second answer. ${'The tests run with vitest against real SQLite files. '.repeat(40)}`,
        ninePartSummary('The user asked two questions about the build.').replace('draft', 'thinking'),
        'After compaction.',
      ],
    });
    const session = await chat({ model });
    session.type('First question?');
    await session.waitFor('First answer.');
    session.type('Second question?');
    await session.waitFor('Second answer.');
    session.type('/compact keep the build details');
    await session.waitFor(/Compacted \(summary\); \d+ messages now\./);
    expect(session.output()).toMatch(/compacted \d+ → \d+ tokens from a summary \(1 model call\)/);
    expect(JSON.stringify(model.requests[2]!.messages)).toContain('keep the build details');
    session.type('Third question?');
    await session.waitFor('After compaction.');
    const last = JSON.stringify(model.requests[3]!.messages);
    expect(last).toContain('The user asked two questions about the build.');
    expect(last).not.toContain('thinking');
    expect(last).not.toContain('First question?');
  });

  it('/compact refuses a summary without the nine parts and one that would grow the context: the conversation stays whole', async () => {
    const model = new ScriptedLanguageModel({
      script: [
        'A short answer.',
        'The user asked a question.',
        'The user asked a question.',
        ninePartSummary(`The user asked a question. ${'Every word of it, at length. '.repeat(200)}`),
        'Still here with everything.',
      ],
    });
    const session = await chat({ model });
    session.type('A short question?');
    await session.waitFor('A short answer.');
    const before = session.agent.session.messages.map((message) => message.uuid);
    let mark = session.output().length;
    session.type('/compact');
    await session.waitFor(/lacks 9 of the nine parts .*nothing was changed/, mark);
    expect(session.agent.session.messages.map((message) => message.uuid)).toEqual(before);
    mark = session.output().length;
    session.type('/compact');
    await session.waitFor(/would not make the context smaller .*nothing was changed/, mark);
    expect(session.output().slice(mark)).not.toContain('Compacted');
    expect(session.agent.session.messages.map((message) => message.uuid)).toEqual(before);
    session.type('Are you there?');
    await session.waitFor('Still here with everything.');
    expect(userTexts(model.requests[4]!)).toContain('A short question?');
  });

  it('Ctrl-C aborts a running answer and the chat goes on; Ctrl-C twice at the prompt quits', async () => {
    const model = new ScriptedLanguageModel({ script: [{ hang: true }, 'Still here.'] });
    const session = await chat({ model });
    session.type('Think for a long time.');
    for (let tries = 0; model.calls === 0 && tries < 500; tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    session.terminal.interrupt();
    await session.waitFor('(interrupted)');
    session.type('Are you there?');
    await session.waitFor('Still here.');
    session.terminal.interrupt();
    await session.waitFor('(press Ctrl-C again to quit');
    session.terminal.interrupt();
    await session.running;
    // The interrupted turn's message and the later exchange are in the transcript.
    await session.agent.close();
    const resumed = await readSessionTranscript(session.agent.transcriptPath);
    expect(resumed.messages.map((message) => messageText(message))).toEqual(
      expect.arrayContaining(['Think for a long time.', 'Are you there?', 'Still here.']),
    );
  });

  it('refuses a huge pasted line, strips control characters both ways, and reads a pasted block as one message', async () => {
    const model = new ScriptedLanguageModel({
      script: ['\u001b[2J\u001b]0;pwned\u0007Clean answer.', 'Got both lines.'],
    });
    const session = await chat({ model, settings: { 'chat.inputMaxBytes': 4096 } });
    session.type('x'.repeat(10_000));
    await session.waitFor('That message is 10000 bytes; a message holds at most 4096 (chat.inputMaxBytes).');
    expect(model.calls).toBe(0);
    session.type('hello\u0000\u0007 there\u001b[31m');
    await session.waitFor('Clean answer.');
    expect(userTexts(model.requests[0]!).at(-1)).toBe('hello there[31m');
    expect(session.output()).not.toMatch(/\u001b|\u0007/);
    session.type('line one of a paste\nline two of a paste');
    await session.waitFor('Got both lines.');
    expect(userTexts(model.requests[1]!).at(-1)).toBe('line one of a paste\nline two of a paste');
  });

  it('goes on with a message past a line ending in a backslash, one line typed at a time, with a continuation prompt', async () => {
    const model = new ScriptedLanguageModel({ script: ['Got three lines.', 'Got the path.'] });
    const session = await chat({ model });
    session.type('first line\\');
    await session.waitFor('… ');
    expect(model.calls).toBe(0);
    session.type('  second, indented\\');
    session.type('');
    await session.waitFor('Got three lines.');
    expect(userTexts(model.requests[0]!).at(-1)).toBe('first line\n  second, indented');
    // Only the last character continues: a backslash inside a line, or before a space, is text.
    session.type('C:\\temp\\ ');
    await session.waitFor('Got the path.');
    expect(userTexts(model.requests[1]!).at(-1)).toBe('C:\\temp\\');
    expect(model.calls).toBe(2);
  });

  it('writes no escape sequence from stored memory names, transcript titles or tool paths; a write to a bidi-disguised path is refused', async () => {
    const hostile = '\u001b]0;pwn\u0007x';
    const disguised = 'notes/\u202Egnp.sh';
    const model = new ScriptedLanguageModel({
      script: [
        'Frankfurt it is.',
        {
          content: [
            { type: 'tool_use', id: 'toolu_bidi', name: 'write_file', input: { path: disguised, content: 'echo hi' } },
          ],
        },
        'Refused.',
      ],
    });
    const session = await chat({ model });
    const memory = await session.opened.engram.remember(FRANKFURT_MEMORY);
    // A name the API would refuse, as a tampered or foreign store could hold it.
    const database = openSqlite(join(session.engramHome, 'engram.db'));
    database.prepare('UPDATE memories SET name = ? WHERE id = ?').run(hostile, memory.id);
    closeSqlite(database);
    session.type('Where do we deploy the Frankfurt service?');
    await session.waitFor('Frankfurt it is.');
    expect(session.agent.memoryReport().recalled.map((entry) => entry.name)).toEqual([hostile]);
    // The transcript is written in the background: wait for it before adding a line of our own.
    for (
      let tries = 0;
      tries < 500 &&
      !(await stat(session.agent.transcriptPath).then(
        () => true,
        () => false,
      ));
      tries += 1
    )
      await new Promise((resolve) => setTimeout(resolve, 10));
    await appendFile(
      session.agent.transcriptPath,
      `${JSON.stringify({ type: 'custom-title', customTitle: `\u001b[2J${hostile} title`, sessionId: session.agent.sessionId })}\n`,
    );
    let mark = session.output().length;
    session.type('/memory');
    await session.waitFor(`${memory.id} ]0;pwnx (1 turn)`, mark);
    session.type('/resume');
    await session.waitFor(/\[2J\]0;pwnx title/, mark);
    session.type(`/forget ${memory.id}`);
    await session.waitFor(`Forgot ${memory.id} (]0;pwnx)`, mark);
    mark = session.output().length;
    session.type('Write the script.');
    await session.waitFor('Refused.', mark);
    expect(session.output()).toContain('⏺ write_file(path: "notes/<U+202E>gnp.sh"');
    expect(session.output().slice(mark)).not.toContain('[y/N]');
    const refused = (
      model.requests[2]!.messages.at(-1)!.content as unknown as Array<{ content: string; isError?: boolean }>
    )[0]!;
    expect(refused.isError).toBe(true);
    expect(refused.content).toMatch(/SANDBOX_DENIED.*invisible formatting characters \(U\+202E\)/);
    expect(await readdir(session.project)).not.toContain('notes');
    expect(session.output()).not.toMatch(/[\u001b\u0007\u202E]/);
  });

  it('says once that the transcript cannot be written, goes on, and writes it once the way is clear', async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), 'engram-chat-')));
    chats.removeAfter(root);
    // The project's session folder is taken by a regular file: no transcript can be created there.
    const blocked = join(root, 'engram-home', 'projects', projectSlug(join(root, 'project')));
    await mkdir(join(blocked, '..'), { recursive: true });
    await writeFile(blocked, 'in the way');
    const model = new ScriptedLanguageModel({ script: ['First.', 'Second.'] });
    const session = await chat({ model, root, settings: { 'session.transcriptFlushMs': 10 } });
    let failures = 0;
    session.agent.session.on('transcript-error', () => (failures += 1));
    session.type('One?');
    await session.waitFor('First.');
    await session.waitFor(/· the transcript \S+\.jsonl could not be written \(.+\); the chat goes on/);
    session.type('Two?');
    await session.waitFor('Second.');
    for (let tries = 0; failures < 2 && tries < 500; tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(session.output().match(/could not be written/g)).toHaveLength(1);
    await rm(blocked);
    await chats.finish(session);
    const transcript = await readSessionTranscript(session.agent.transcriptPath);
    expect(transcript.messages.map((message) => messageText(message))).toEqual(
      expect.arrayContaining(['One?', 'Second.']),
    );
  });

  it("/resume lists this project's sessions and switches; a new chat with resume continues the transcript", async () => {
    const model = new ScriptedLanguageModel({
      script: ['Answer one.', 'Answer two.', 'Answer three.'],
      whenExhausted: 'repeat-last',
    });
    const first = await chat({ model });
    first.type('Remember this conversation.');
    await first.waitFor('Answer one.');
    const firstId = first.agent.sessionId;
    await chats.finish(first);

    const second = await chat({ model, root: first.root, resume: { latest: true } });
    expect(second.agent.sessionId).toBe(firstId);
    await second.waitFor('(continued, 2 messages)');
    second.type('And now?');
    await second.waitFor('Answer two.');
    expect(userTexts(model.requests[1]!)).toContain('Remember this conversation.');
    second.type('/resume');
    await second.waitFor(`* ${firstId}`);
    second.type('/resume not/a/session');
    await second.waitFor(/engram: The session id "not\/a\/session" may hold only/);
    second.type('/resume 00000000-0000-4000-8000-000000000000');
    await second.waitFor(/engram: No session 00000000-0000-4000-8000-000000000000/);
    expect(second.agent.sessionId).toBe(firstId);
  });
});
