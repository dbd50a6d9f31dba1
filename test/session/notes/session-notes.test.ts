import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../../src/adapters/models/anthropic-language-model.js';
import { EngramError } from '../../../src/kernel/errors.js';
import {
  DEFAULT_SESSION_NOTES_TEMPLATE,
  NOTES_SECTION_CUT_MARKER,
  parseNotesSections,
  replaceNotesSection,
} from '../../../src/session/notes/session-notes-template.js';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/kernel/settings.js';
import { estimateTextTokens } from '../../../src/kernel/token-estimate.js';
import type { LanguageModelRequest } from '../../../src/contracts/language-model.js';
import { messageText } from '../../../src/contracts/language-model-content.js';
import type { ForkPrefix } from '../../../src/session/forked-helper.js';
import type { SessionTranscriptEntry, SessionTranscriptSink } from '../../../src/contracts/session-message.js';
import {
  SessionNotes,
  type SessionNotesEvent,
  type SessionNotesOptions,
} from '../../../src/session/notes/session-notes.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { ScriptedLanguageModel, type ScriptedAnswer } from '../../../src/testing/scripted-language-model.js';
import { nodeNotesFiles } from '../../../src/session/node/session-notes-files.js';

let directory: string;
let path: string;
const servers: LanguageModelServer[] = [];
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'engram-notes-'));
  path = join(directory, 'project', 'session-1', 'session-notes.md');
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await rm(directory, { recursive: true, force: true });
});

const settings = (notes: Partial<Settings['notes']> = {}): Pick<Settings, 'notes' | 'tokens'> => ({
  notes: { ...DEFAULT_SETTINGS.notes, ...notes },
  tokens: DEFAULT_SETTINGS.tokens,
});

const prefix: ForkPrefix = {
  system: [{ text: 'You are a coding agent. Never push to main.', cache: true }],
  tools: [
    {
      name: 'read_file',
      description: 'Reads a file.',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    },
  ],
  messages: [
    { role: 'user', content: 'Fix the parser in src/parser.ts.' },
    { role: 'assistant', content: 'Fixed: parse() now reads the tokens.' },
  ],
};

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A scripted model whose answer waits until the test opens the gate, and that says when the request came. */
function waitingModel(answer: ScriptedAnswer): {
  model: ScriptedLanguageModel;
  arrived: Promise<void>;
  release: () => void;
} {
  const arrival = gate();
  const release = gate();
  const model = new ScriptedLanguageModel({
    script: [
      async () => {
        arrival.open();
        await release.promise;
        return answer;
      },
    ],
  });
  return { model, arrived: arrival.promise, release: release.open };
}

function collect(
  options: Omit<SessionNotesOptions, 'path' | 'settings' | 'files'> & {
    settings?: SessionNotesOptions['settings'];
  } = {},
) {
  const errors: EngramError[] = [];
  const events: SessionNotesEvent[] = [];
  const notes = new SessionNotes({
    path,
    files: nodeNotesFiles,
    settings: settings(),
    onError: (error) => errors.push(error),
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { notes, errors, events };
}

const instructionOf = (request: LanguageModelRequest | undefined): string => messageText(request!.messages.at(-1)!);

describe('session notes updates in the background', () => {
  it('returns before the model answers, then writes the section edits (loopback Anthropic server, real adapter)', async () => {
    const api = await startAnthropicMessagesServer();
    servers.push(api);
    const model = new AnthropicLanguageModel({
      model: 'claude-haiku-5-5',
      baseUrl: api.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
    });
    const arrival = gate();
    const release = gate();
    api.script(async () => {
      arrival.open();
      await release.promise;
      return {
        message: {
          text: '<section name="Current State">\nParser fixed; next: run npm test.\n</section>\n<section name="Session Title">Parser fix</section>',
        },
      };
    });
    const { notes, errors, events } = collect({ model });

    await notes.update(prefix, { lastMessageUuid: 'message-2' });
    // Resolved, and the model has not answered: nothing is written yet.
    expect(notes.running).toBe(true);
    await arrival.promise;
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    // A second trigger while one runs starts nothing in parallel.
    expect(notes.shouldUpdate()).toBe(false);
    await notes.update(prefix, { lastMessageUuid: 'message-3' });
    release.open();
    await notes.waitForIdle();

    expect(api.requests).toHaveLength(1);
    expect(errors).toEqual([]);
    const text = await readFile(path, 'utf8');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(directory, 'project', 'session-1'))).mode & 0o777).toBe(0o700);
    const sections = parseNotesSections(text);
    const templateSections = parseNotesSections(DEFAULT_SESSION_NOTES_TEMPLATE);
    expect(sections.map((section) => section.name)).toEqual(templateSections.map((section) => section.name));
    expect(sections[1]!.body).toBe(
      '_What is being worked on right now; pending tasks not yet done; the immediate next steps_\nParser fixed; next: run npm test.\n\n',
    );
    expect(sections[0]!.body).toMatch(/^_A short[^\n]*_\nParser fix\n\n$/);
    for (const index of [2, 3, 4, 5, 6, 7, 8, 9]) expect(sections[index]!.body).toBe(templateSections[index]!.body);
    expect(notes.lastSummarizedUuid).toBe('message-2');
    expect(await notes.hasContent()).toBe(true);
    expect(events.map((event) => event.type)).toEqual(['notes-update-started', 'notes-update-finished']);
    expect(events[1]).toMatchObject({
      changedSections: ['Current State', 'Session Title'],
      truncatedSections: [],
      aborted: false,
    });
    // The helper's request carried the parent's prefix and then the update prompt with the current notes.
    const summary = api.requests[0]!.summary!;
    expect(summary.messages.slice(0, 2)).toEqual(prefix.messages);
    expect(messageText(summary.messages[2]!)).toContain('<current-notes>\n# Session Title');
  });

  it('edits only the sections named, keeps the others byte-identical, and applies them to the file as it is when the answer comes', async () => {
    let existing = replaceNotesSection(
      DEFAULT_SESSION_NOTES_TEMPLATE,
      'Worklog',
      '_Step by step, what was tried and done; very terse_\n- read the parser',
    );
    existing = replaceNotesSection(
      existing,
      'Learnings',
      '_What worked well, what did not, what to avoid_\n- the tests are slow',
    );
    await mkdir(join(directory, 'project', 'session-1'), { recursive: true });
    await writeFile(path, existing);
    const { model, arrived, release } = waitingModel(
      '<section name="Worklog">\n- read the parser\n- fixed parse()\n</section>',
    );
    const { notes, errors } = collect({ model });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await arrived;
    // The user edits another section while the helper runs: the edit survives.
    const userEdited = replaceNotesSection(existing, 'Key Results', 'The answer is 42.');
    await writeFile(path, userEdited);
    release();
    await notes.waitForIdle();
    expect(errors).toEqual([]);
    const after = await readFile(path, 'utf8');
    const byName = (text: string) => new Map(parseNotesSections(text).map((section) => [section.name, section.body]));
    const before = byName(userEdited);
    for (const [name, body] of byName(after)) {
      if (name === 'Worklog')
        expect(body).toBe('_Step by step, what was tried and done; very terse_\n- read the parser\n- fixed parse()\n');
      else expect(body).toBe(before.get(name));
    }
    expect(after.slice(0, parseNotesSections(after).at(-1)!.bodyStart)).toBe(
      userEdited.slice(0, parseNotesSections(userEdited).at(-1)!.bodyStart),
    );
  });

  it('reports failures through onError and never throws them into the turn', async () => {
    const api = await startAnthropicMessagesServer();
    servers.push(api);
    api.script({ error: { kind: 'server' } });
    const model = new AnthropicLanguageModel({
      model: 'claude-haiku-5-5',
      baseUrl: api.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
    });
    const { notes, errors, events } = collect({ model });
    notes.noteTurn({ contextTokens: 50_000, toolCalls: 0, hadToolCall: false });
    await expect(notes.update(prefix, { lastMessageUuid: 'm2' })).resolves.toBeUndefined();
    await expect(notes.waitForIdle()).resolves.toBeUndefined();
    expect(errors.map((error) => error.code)).toEqual(['MODEL_UNAVAILABLE']);
    expect(events.map((event) => event.type)).toEqual(['notes-update-started', 'notes-update-failed']);
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(notes.lastSummarizedUuid).toBeUndefined();
    // A failed helper is not retried on every turn: growth is counted from the failed attempt.
    expect(notes.shouldUpdate()).toBe(false);
    notes.noteTurn({ contextTokens: 55_000, toolCalls: 0, hadToolCall: false });
    expect(notes.shouldUpdate()).toBe(true);

    // A listener that throws cannot turn a failure into an unhandled rejection.
    const throwing = new SessionNotes({
      path,
      files: nodeNotesFiles,
      settings: settings(),
      model: new ScriptedLanguageModel({ script: [{ error: new Error('boom') }] }),
      onError: () => {
        throw new Error('listener');
      },
    });
    await throwing.update(prefix, { lastMessageUuid: 'm2' });
    await expect(throwing.waitForIdle()).resolves.toBeUndefined();
  });

  it.each([
    ['an unclosed block', '<section name="Worklog">\n- half an edit'],
    ['an unknown section', '<section name="Passwords">hunter2</section>'],
    ['prose instead of edits', 'I have updated the notes as requested.'],
    ['one good and one bad block', '<section name="Worklog">- ok</section>\n<section name="Nope">x</section>'],
  ])('changes nothing when the helper answers %s', async (_, answer) => {
    const existing = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Current State', 'Working on the parser.');
    await mkdir(join(directory, 'project', 'session-1'), { recursive: true });
    await writeFile(path, existing);
    const { notes, errors } = collect({ model: new ScriptedLanguageModel({ script: [answer] }) });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(await readFile(path, 'utf8')).toBe(existing);
    expect(errors.map((error) => error.code)).toEqual(['MODEL_OUTPUT_INVALID']);
    expect(notes.lastSummarizedUuid).toBeUndefined();
  });

  it('takes <no-changes/> as an update that covers the conversation and writes nothing', async () => {
    const { notes, errors } = collect({ model: new ScriptedLanguageModel({ script: ['<no-changes/>'] }) });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(errors).toEqual([]);
    expect(notes.lastSummarizedUuid).toBe('m2');
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await notes.read()).toBe(DEFAULT_SESSION_NOTES_TEMPLATE);
    expect(await notes.hasContent()).toBe(false);
  });

  it('gives notes emptied or rewritten as free text their sections back, keeping the text', async () => {
    await mkdir(join(directory, 'project', 'session-1'), { recursive: true });
    await writeFile(path, '  \n');
    const first = collect({
      model: new ScriptedLanguageModel({ script: ['<section name="Worklog">- one</section>'] }),
    });
    await first.notes.update(prefix, { lastMessageUuid: 'm2' });
    await first.notes.waitForIdle();
    expect(first.errors).toEqual([]);
    expect(parseNotesSections(await readFile(path, 'utf8')).map((section) => section.name)).toHaveLength(10);

    await writeFile(path, 'My own scribbles.\n');
    const second = collect({
      model: new ScriptedLanguageModel({ script: ['<section name="Worklog">- two</section>'] }),
    });
    await second.notes.update(prefix, { lastMessageUuid: 'm3' });
    await second.notes.waitForIdle();
    const text = await readFile(path, 'utf8');
    expect(text.startsWith('My own scribbles.\n\n# Session Title\n')).toBe(true);
    expect(parseNotesSections(text).at(-1)!.body).toContain('- two');
  });

  it('aborts a running update and writes nothing', async () => {
    const model = new ScriptedLanguageModel({ script: [{ hang: true }] });
    const { notes, errors, events } = collect({ model });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    while (model.calls === 0) await new Promise((resolve) => setImmediate(resolve));
    notes.abort();
    await notes.waitForIdle();
    expect(errors).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'notes-update-finished', aborted: true });
    expect(notes.lastSummarizedUuid).toBeUndefined();
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("writes the helper's messages to a sidechain transcript it opens per update and closes", async () => {
    const entries: SessionTranscriptEntry[] = [];
    const opened: string[] = [];
    let closed = 0;
    const sink: SessionTranscriptSink = {
      append: (entry) => entries.push(entry),
      flush: async () => undefined,
      close: async () => void (closed += 1),
    };
    const { notes } = collect({
      model: new ScriptedLanguageModel({ script: ['<no-changes/>'] }),
      generateId: () => 'agent-or-uuid',
      openHelperTranscript: (agentId) => (opened.push(agentId), sink),
    });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(opened).toEqual(['agent-or-uuid']);
    expect(closed).toBe(1);
    expect(entries.map((entry) => entry.kind === 'message' && entry.message.role)).toEqual(['user', 'assistant']);
  });
});

describe('session notes across a resume', () => {
  it('remember the last message they cover, so a resumed session can compact from them', async () => {
    const first = collect({
      model: new ScriptedLanguageModel({ script: ['<section name="Current State">Parser fixed.</section>'] }),
    });
    await first.notes.update(prefix, { lastMessageUuid: 'message-7' });
    await first.notes.waitForIdle();
    expect(first.errors).toEqual([]);
    expect(JSON.parse(await readFile(first.notes.statePath, 'utf8'))).toMatchObject({
      lastSummarizedUuid: 'message-7',
    });
    expect((await stat(first.notes.statePath)).mode & 0o777).toBe(0o600);

    const resumed = new SessionNotes({ path, files: nodeNotesFiles, settings: settings() });
    expect(resumed.lastSummarizedUuid).toBeUndefined();
    expect(await resumed.hasContent()).toBe(true);
    expect(resumed.lastSummarizedUuid).toBe('message-7');

    // A damaged state file is no state, never an error.
    await writeFile(first.notes.statePath, '{"lastSummarizedUuid": 12');
    const damaged = new SessionNotes({ path, files: nodeNotesFiles, settings: settings() });
    expect(await damaged.hasContent()).toBe(true);
    expect(damaged.lastSummarizedUuid).toBeUndefined();
  });
});

describe('session notes caps', () => {
  it('names the over-cap sections in the next update prompt and hard-caps a section that still grows past twice the cap', async () => {
    const existing = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Worklog', 'x'.repeat(2_500 * 4));
    await mkdir(join(directory, 'project', 'session-1'), { recursive: true });
    await writeFile(path, existing);
    const runaway = Array.from({ length: 3_000 }, (_, index) => `- detail ${index}`).join('\n');
    const model = new ScriptedLanguageModel({
      script: [`<section name="Files and Functions">\n${runaway}\n</section>`],
    });
    const { notes, errors, events } = collect({ model });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(errors).toEqual([]);
    const instruction = instructionOf(model.lastRequest);
    expect(instruction).toMatch(/over their size caps/);
    expect(instruction).toContain('Condense "Worklog"');
    expect(instruction).not.toContain('Condense "Files and Functions"');
    const files = parseNotesSections(await readFile(path, 'utf8')).find(
      (section) => section.name === 'Files and Functions',
    )!;
    expect(files.body).toContain(NOTES_SECTION_CUT_MARKER);
    expect(estimateTextTokens(files.body)).toBeLessThanOrEqual(4_000);
    expect(events.at(-1)).toMatchObject({ type: 'notes-update-finished', truncatedSections: ['Files and Functions'] });

    // Under the caps, the prompt asks for no condensing.
    await writeFile(path, DEFAULT_SESSION_NOTES_TEMPLATE);
    const calm = new ScriptedLanguageModel({ script: ['<no-changes/>'] });
    const quiet = new SessionNotes({ path, files: nodeNotesFiles, settings: settings(), model: calm });
    await quiet.update(prefix, { lastMessageUuid: 'm3' });
    await quiet.waitForIdle();
    expect(instructionOf(calm.lastRequest)).not.toMatch(/size caps|Condense/);
  });
});

describe('the trigger state the session feeds', () => {
  it('accumulates turns, fires per SPEC, and counts growth from the last update', async () => {
    const model = new ScriptedLanguageModel({ script: ['<section name="Current State">working</section>'] });
    const { notes } = collect({ model });
    notes.noteTurn({ contextTokens: 41_000, toolCalls: 1, hadToolCall: true });
    notes.noteTurn({ contextTokens: 43_000, toolCalls: 1, hadToolCall: true });
    expect(notes.shouldUpdate()).toBe(false);
    notes.noteTurn({ contextTokens: 45_000, toolCalls: 1, hadToolCall: true });
    expect(notes.triggerState).toEqual({
      contextTokens: 45_000,
      toolCallsSinceLastUpdate: 3,
      lastAssistantTurnHadToolCall: true,
    });
    expect(notes.shouldUpdate()).toBe(true);
    await notes.update(prefix, { lastMessageUuid: 'm6' });
    await notes.waitForIdle();
    expect(notes.triggerState).toEqual({
      contextTokens: 45_000,
      tokensAtLastUpdate: 45_000,
      toolCallsSinceLastUpdate: 0,
      lastAssistantTurnHadToolCall: true,
    });
    notes.noteTurn({ contextTokens: 49_999, toolCalls: 0, hadToolCall: false });
    expect(notes.shouldUpdate()).toBe(false);
    notes.noteTurn({ contextTokens: 50_000, toolCalls: 0, hadToolCall: false });
    expect(notes.shouldUpdate()).toBe(true);
    // After a compaction, growth counts from the smaller context.
    notes.noteCompaction({ contextTokens: 41_000 });
    expect(notes.shouldUpdate()).toBe(false);
    notes.noteTurn({ contextTokens: 46_000, toolCalls: 0, hadToolCall: false });
    expect(notes.shouldUpdate()).toBe(true);
  });

  it('never fires without a model, and says why when asked to update anyway', async () => {
    const { notes, errors } = collect();
    notes.noteTurn({ contextTokens: 90_000, toolCalls: 9, hadToolCall: false });
    expect(notes.shouldUpdate()).toBe(false);
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    expect(errors.map((error) => error.code)).toEqual(['MODEL_NOT_CONFIGURED']);
  });
});

describe("the user's own template and prompt", () => {
  const template = '## Goal\n_What we are after_\n\n## Status\n\n## Log\n';
  const prompt =
    'CUSTOM PROMPT. Sections: {{sections}}. Cap {{sectionMaxTokens}}.\n{{notes}}\nAnswer with <section> blocks.';

  it('reads them from notes.templatePath and notes.promptPath', async () => {
    const templatePath = join(directory, 'template.md');
    const promptPath = join(directory, 'prompt.txt');
    await writeFile(templatePath, template);
    await writeFile(promptPath, prompt);
    const model = new ScriptedLanguageModel({ script: ['<section name="goal">Ship the parser fix.</section>'] });
    const { notes, errors } = collect({ model, settings: settings({ templatePath, promptPath }) });
    expect(await notes.read()).toBe(template);
    expect(await notes.hasContent()).toBe(false);
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(errors).toEqual([]);
    const instruction = instructionOf(model.lastRequest);
    expect(instruction.startsWith('CUSTOM PROMPT. Sections: "Goal", "Status", "Log". Cap 2000.\n## Goal')).toBe(true);
    expect(await readFile(path, 'utf8')).toBe(
      '## Goal\n_What we are after_\nShip the parser fix.\n\n## Status\n\n## Log\n',
    );
    expect(await notes.hasContent()).toBe(true);
  });

  it('takes them as options too, over the settings', async () => {
    const model = new ScriptedLanguageModel({ script: ['<no-changes/>'] });
    const { notes } = collect({
      model,
      template,
      prompt: 'Only this. {{notes}}',
      settings: settings({ templatePath: join(directory, 'missing.md') }),
    });
    expect(await notes.read()).toBe(template);
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(instructionOf(model.lastRequest)).toBe(`Only this. ${template}`);
  });

  it('refuses a missing, empty or sectionless file with CONFIG_INVALID, and reports it from an update', async () => {
    const missing = collect({
      model: new ScriptedLanguageModel({ script: ['x'] }),
      settings: settings({ templatePath: join(directory, 'nope.md') }),
    });
    await expect(missing.notes.read()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/notes.templatePath names .*nope.md, which does not exist/),
    });
    await missing.notes.update(prefix, { lastMessageUuid: 'm2' });
    await missing.notes.waitForIdle();
    expect(missing.errors.map((error) => error.code)).toEqual(['CONFIG_INVALID']);

    const flat = join(directory, 'flat.md');
    await writeFile(flat, 'no headings here');
    await expect(collect({ settings: settings({ templatePath: flat }) }).notes.hasContent()).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/no sections/),
    });
    const empty = join(directory, 'empty.txt');
    await writeFile(empty, '  \n');
    const model = new ScriptedLanguageModel({ script: ['x'] });
    const emptyPrompt = collect({ model, settings: settings({ promptPath: empty }) });
    await emptyPrompt.notes.update(prefix, { lastMessageUuid: 'm2' });
    await emptyPrompt.notes.waitForIdle();
    expect(emptyPrompt.errors[0]).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringMatching(/is empty/) });
    expect(model.calls).toBe(0);
    expect(
      () => new SessionNotes({ path, files: nodeNotesFiles, settings: settings(), template: 'plain text' }),
    ).toThrowError(/no sections/);
  });
});

describe('session notes refuse bad input and change nothing', () => {
  it.each<[string, unknown]>([
    ['no options', undefined],
    ['an empty path', { path: '', files: nodeNotesFiles, settings: settings() }],
    ['a path with a NUL byte', { path: 'a\0b', files: nodeNotesFiles, settings: settings() }],
    ['no notes settings', { path: 'x.md', files: nodeNotesFiles, settings: {} }],
    ['no file access', { path: 'x.md', settings: settings() }],
    ['an empty prompt', { path: 'x.md', files: nodeNotesFiles, settings: settings(), prompt: ' ' }],
  ])('the constructor refuses %s', (_, options) => {
    expect(() => new SessionNotes(options as SessionNotesOptions)).toThrowError(EngramError);
  });

  it('noteTurn refuses counts that are not counts', () => {
    const { notes } = collect();
    expect(() => notes.noteTurn({ contextTokens: Number.NaN, toolCalls: 0, hadToolCall: false })).toThrowError(
      /contextTokens/,
    );
    expect(() => notes.noteTurn({ contextTokens: 1, toolCalls: -2, hadToolCall: false })).toThrowError(/toolCalls/);
    expect(() =>
      notes.noteTurn({ contextTokens: 1, toolCalls: 0, hadToolCall: 'yes' as unknown as boolean }),
    ).toThrowError(/hadToolCall/);
    expect(notes.triggerState).toEqual({
      contextTokens: 0,
      toolCallsSinceLastUpdate: 0,
      lastAssistantTurnHadToolCall: false,
    });
  });

  it('an update with a bad uuid or prefix reports INVALID_INPUT and writes nothing', async () => {
    const existing = replaceNotesSection(DEFAULT_SESSION_NOTES_TEMPLATE, 'Current State', 'kept');
    await mkdir(join(directory, 'project', 'session-1'), { recursive: true });
    await writeFile(path, existing);
    const model = new ScriptedLanguageModel({
      script: ['<section name="Current State">lost</section>'],
      whenExhausted: 'repeat-last',
    });
    const { notes, errors } = collect({ model });
    await notes.update(prefix, { lastMessageUuid: '' });
    await notes.update(prefix, { lastMessageUuid: 'u'.repeat(201) });
    await notes.update(prefix, undefined as never);
    await notes.update({ system: 'no', tools: [], messages: [] } as unknown as ForkPrefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    await notes.update({ ...prefix, messages: [{ role: 'system', content: 'x' }] } as unknown as ForkPrefix, {
      lastMessageUuid: 'm3',
    });
    await notes.waitForIdle();
    expect(errors.map((error) => error.code)).toEqual([
      'INVALID_INPUT',
      'INVALID_INPUT',
      'INVALID_INPUT',
      'INVALID_INPUT',
      'INVALID_INPUT',
    ]);
    expect(errors[4]!.message).toMatch(/messages\[0\]\.role/);
    expect(model.calls).toBe(0);
    expect(await readFile(path, 'utf8')).toBe(existing);
    expect(notes.lastSummarizedUuid).toBeUndefined();
  });

  it('refuses an oversized notes file or one that is not a file, and an update leaves it alone', async () => {
    await mkdir(join(directory, 'project', 'session-1'), { recursive: true });
    const huge = `# Worklog\n${'y'.repeat(2 * 1024 * 1024)}`;
    await writeFile(path, huge);
    const model = new ScriptedLanguageModel({ script: ['<no-changes/>'] });
    const { notes, errors } = collect({ model });
    await expect(notes.read()).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.stringMatching(/over notes.maxFileBytes/),
    });
    await notes.update(prefix, { lastMessageUuid: 'm2' });
    await notes.waitForIdle();
    expect(errors.map((error) => error.code)).toEqual(['PAYLOAD_TOO_LARGE']);
    expect(model.calls).toBe(0);
    expect((await readFile(path, 'utf8')).length).toBe(huge.length);

    const folder = join(directory, 'folder-notes');
    await mkdir(folder);
    await expect(
      new SessionNotes({ path: folder, files: nodeNotesFiles, settings: settings() }).read(),
    ).rejects.toMatchObject({ code: 'STORE_ERROR', message: expect.stringMatching(/not a regular file/) });
  });
});
