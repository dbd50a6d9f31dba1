import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSessionTranscript } from '../../src/session/node/session-transcript-reader.js';
import { SessionTranscriptWriter } from '../../src/session/node/session-transcript-writer.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import { summarizeStore } from '../../src/maintenance/store-checksum.js';
import type { TodoItem } from '../../src/contracts/session-message.js';
import { TODO_WRITE_RESULT, todoWriteTool, WorkingMemory } from '../../src/session/working-memory.js';
import { openTemporaryStore } from '../support/temporary-store.js';

const root = mkdtempSync(join(tmpdir(), 'engram-working-memory-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const context = { sessionId: 'wm-1', toolUseId: 'toolu_1', signal: new AbortController().signal };
const clock = { now: Date.parse('2026-06-01T10:00:00.000Z') };
const now = (): Date => new Date(clock.now);

describe('WorkingMemory', () => {
  it('the todo_write tool replaces the list, reports both lists to onChange, and refuses malformed lists keeping the old one', async () => {
    const memory = new WorkingMemory({ now });
    const changes: Array<{ todos: TodoItem[]; previous: TodoItem[] }> = [];
    const tool = todoWriteTool(memory, (todos, previous) => changes.push({ todos, previous }));
    expect(tool.definition.name).toBe('todo_write');
    expect(tool.definition.inputSchema).toMatchObject({ type: 'object', required: ['todos'] });

    const first = [
      { content: 'Run the tests', status: 'in_progress', activeForm: 'Running the tests' },
      { content: 'Fix the login bug', status: 'pending' },
    ];
    expect(await tool.run({ todos: first }, context)).toEqual({ content: TODO_WRITE_RESULT });
    expect(memory.todos).toEqual(first);
    expect(memory.renderTodos()).toBe('[~] Running the tests\n[ ] Fix the login bug');
    const second = [
      { content: 'Run the tests', status: 'completed' },
      { content: 'Fix the login bug', status: 'in_progress' },
    ];
    await tool.run({ todos: second }, context);
    expect(changes).toEqual([
      { todos: first, previous: [] },
      { todos: second, previous: first },
    ]);

    const hostile: unknown[] = [
      undefined,
      'a string',
      { length: 1 },
      [null],
      [{ content: '', status: 'pending' }],
      [{ content: '   ', status: 'pending' }],
      [{ content: 'x', status: 'done' }],
      [{ content: 42, status: 'pending' }],
      [{ content: 'x', status: 'pending', activeForm: ['no'] }],
      [{ content: 'y'.repeat(DEFAULT_SETTINGS.session.todoItemMaxChars + 1), status: 'pending' }],
      Array.from({ length: DEFAULT_SETTINGS.session.todoMaxItems + 1 }, (_, index) => ({
        content: `item ${index}`,
        status: 'pending',
      })),
    ];
    for (const todos of hostile) {
      const result = await tool.run({ todos } as Record<string, unknown>, context);
      expect(result.isError, JSON.stringify(todos)?.slice(0, 60)).toBe(true);
      expect(result.content).toMatch(/^Error: .*todo/i);
      expect(result.content).toContain('The todo list was not changed.');
    }
    expect(await tool.run(null as unknown as Record<string, unknown>, context)).toMatchObject({ isError: true });
    expect(memory.todos).toEqual(second);
    expect(changes).toHaveLength(2);
    // The list handed out cannot be changed behind the memory's back.
    expect(() => (memory.todos as TodoItem[]).push({ content: 'sneaky', status: 'pending' })).toThrow();
    expect(() => ((memory.todos[0] as TodoItem).status = 'pending')).toThrow();
  });

  it('tracks task states pending → running → completed | failed | killed, and a finished task stays finished', () => {
    let id = 0;
    const memory = new WorkingMemory({ now, generateId: () => `task-${++id}` });
    const notes = memory.addTask({ description: 'Update session notes' });
    const search = memory.addTask({ description: 'Search the repo' });
    const idle = memory.addTask({ description: 'Never started' });
    expect(notes).toMatchObject({ id: 'task-1', status: 'pending', createdAt: '2026-06-01T10:00:00.000Z' });
    clock.now += 1_000;
    expect(memory.updateTask('task-1', { status: 'running' })).toMatchObject({
      status: 'running',
      startedAt: '2026-06-01T10:00:01.000Z',
    });
    clock.now += 1_000;
    expect(memory.updateTask('task-1', { status: 'completed', result: 'notes updated' })).toMatchObject({
      status: 'completed',
      finishedAt: '2026-06-01T10:00:02.000Z',
      result: 'notes updated',
    });
    memory.updateTask(search.id, { status: 'running' });
    expect(memory.updateTask(search.id, { status: 'failed', result: 'timeout' })).toMatchObject({
      status: 'failed',
      result: 'timeout',
    });
    expect(() => memory.updateTask('task-1', { status: 'running' })).toThrowError(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
    expect(() => memory.updateTask('nope', { status: 'running' })).toThrowError(
      expect.objectContaining({ code: 'NOT_FOUND' }),
    );
    expect(() => memory.updateTask(idle.id, { status: 'paused' as never })).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => memory.updateTask(idle.id, 'running' as never)).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => memory.updateTask(idle.id, { status: 'running', result: 'x'.repeat(20_000) })).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => memory.addTask({ description: '' })).toThrowError(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => memory.addTask({ description: 'dup', id: 'task-1' })).toThrowError(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
    const running = memory.addTask({ description: 'Background job' });
    memory.updateTask(running.id, { status: 'running' });
    expect(() => memory.updateTask(running.id, { status: 'pending' })).toThrowError(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
    expect(memory.killUnfinished('the user interrupted')).toBe(2);
    expect(memory.tasks.map((task) => [task.description, task.status])).toEqual([
      ['Update session notes', 'completed'],
      ['Search the repo', 'failed'],
      ['Never started', 'killed'],
      ['Background job', 'killed'],
    ]);
    // Copies: changing one does not change the memory.
    memory.tasks[0]!.status = 'failed';
    expect(memory.tasks[0]!.status).toBe('completed');
  });

  it('is rebuilt from the transcript on resume: the todo list the tool wrote comes back', async () => {
    const path = join(root, 'wm-1.jsonl');
    const writer = new SessionTranscriptWriter({ path, sessionId: 'wm-1', now });
    const memory = new WorkingMemory({ now });
    const tool = todoWriteTool(memory, (todos) =>
      writer.append({ kind: 'todos', todos, timestamp: now().toISOString() }),
    );
    writer.append({
      kind: 'message',
      message: { uuid: 'u1', role: 'user', content: 'Ship it', timestamp: now().toISOString() },
      parentUuid: null,
    });
    await tool.run(
      {
        todos: [
          { content: 'Write changelog', status: 'completed' },
          { content: 'Tag release', status: 'in_progress', activeForm: 'Tagging the release' },
        ],
      },
      context,
    );
    await tool.run(
      {
        todos: [
          { content: 'Write changelog', status: 'completed' },
          { content: 'Tag release', status: 'completed' },
          { content: 'Announce', status: 'pending' },
        ],
      },
      context,
    );
    await writer.close();

    const resumed = await readSessionTranscript(path);
    const restored = WorkingMemory.fromResumed(resumed);
    expect(restored.todos).toEqual(memory.todos);
    expect(restored.tasks).toEqual([]);

    // A hand-edited file: bad items are left out and the list is cut at the cap, resume still works.
    const small = { session: { ...DEFAULT_SETTINGS.session, todoMaxItems: 2 } };
    const lenient = WorkingMemory.fromResumed(
      {
        todos: [
          { content: 'a', status: 'pending' },
          { content: 5, status: 'pending' },
          null,
          { content: 'b', status: 'completed' },
          { content: 'c', status: 'pending' },
        ],
      },
      { settings: small },
    );
    expect(lenient.todos).toEqual([
      { content: 'a', status: 'pending' },
      { content: 'b', status: 'completed' },
    ]);
    expect(WorkingMemory.fromResumed({ todos: 'nonsense' as never }).todos).toEqual([]);
  });

  it('never touches long-term memory: the store is byte-for-byte the same after a session of todos and tasks', async () => {
    const temporary = await openTemporaryStore(clock.now);
    try {
      const engram = new Engram({
        store: temporary.store,
        defaultScope: 'project:github.com/acme/app',
        onWarning: () => {},
      });
      await engram.save({
        name: 'deploy',
        description: 'How we deploy',
        content: 'We deploy with make deploy.',
        type: 'project',
      });
      const before = await summarizeStore(temporary.store, { pageSize: 100 });
      const memory = new WorkingMemory({ now });
      const tool = todoWriteTool(memory);
      await tool.run({ todos: [{ content: 'Remember that we always deploy on Fridays', status: 'pending' }] }, context);
      await tool.run(
        { todos: [{ content: 'Remember that we always deploy on Fridays', status: 'completed' }] },
        context,
      );
      const task = memory.addTask({ description: 'Remember this forever: the API key rotates monthly' });
      memory.updateTask(task.id, { status: 'running' });
      memory.updateTask(task.id, { status: 'completed', result: 'done' });
      const after = await summarizeStore(temporary.store, { pageSize: 100 });
      expect(after).toEqual(before);
      expect(before.counts.memories).toBe(1);
    } finally {
      await temporary.close();
    }
  });
});
