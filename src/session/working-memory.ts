import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS, type Settings } from '../kernel/settings.js';
import type { TodoItem, TodoStatus } from '../contracts/session-message.js';
import type { SessionTool } from '../contracts/session-tool.js';

/**
 * Working memory (SPEC §2): the session's todo list and the states of its tasks (helpers, background
 * jobs). It lives in memory only and is never written to long-term memory; the todo list reaches the
 * transcript through the caller's `onChange` (a `todos` entry) and is rebuilt from it on resume.
 */

export type TaskStatus = 'pending' | 'running' | 'completed' | 'failed' | 'killed';

/** One task the session tracks (a forked helper, a background job). */
export interface WorkingTask {
  id: string;
  description: string;
  status: TaskStatus;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  /** What a completed task produced, or why it failed or was killed (short text). */
  result?: string;
}

export interface WorkingMemoryOptions {
  /** The todo list to start from (a resumed session's `todos`). */
  todos?: readonly TodoItem[];
  settings?: Pick<Settings, 'session'>;
  now?: () => Date;
  generateId?: () => string;
}

const TODO_STATUSES: readonly TodoStatus[] = ['pending', 'in_progress', 'completed'];
const FINISHED: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'killed']);
const TASK_DESCRIPTION_MAX_CHARS = 2_000;
const TASK_RESULT_MAX_CHARS = 10_000;

/** The session's todo list and task states, in memory only. */
export class WorkingMemory {
  #todos: readonly TodoItem[] = [];
  readonly #tasks = new Map<string, WorkingTask>();
  readonly #maxItems: number;
  readonly #maxChars: number;
  readonly #now: () => Date;
  readonly #generateId: () => string;

  constructor(options: WorkingMemoryOptions = {}) {
    const session = (options.settings ?? DEFAULT_SETTINGS).session;
    this.#maxItems = session.todoMaxItems;
    this.#maxChars = session.todoItemMaxChars;
    this.#now = options.now ?? (() => new Date());
    this.#generateId = options.generateId ?? (() => globalThis.crypto.randomUUID());
    if (options.todos) this.#todos = this.checkTodos(options.todos);
  }

  /**
   * Working memory of a resumed session: its todo list from the transcript. Lenient, since the file
   * may have been edited: items that do not pass the checks are left out, the list is cut at the cap.
   */
  static fromResumed(
    resumed: { todos: readonly unknown[] },
    options: Omit<WorkingMemoryOptions, 'todos'> = {},
  ): WorkingMemory {
    const memory = new WorkingMemory(options);
    const kept: TodoItem[] = [];
    for (const todo of Array.isArray(resumed?.todos) ? resumed.todos : []) {
      if (kept.length >= memory.#maxItems) break;
      try {
        kept.push(...memory.checkTodos([todo]));
      } catch {
        // left out: see above
      }
    }
    memory.#todos = Object.freeze(kept);
    return memory;
  }

  /** The todo list (frozen copies). */
  get todos(): readonly TodoItem[] {
    return this.#todos;
  }

  /** Every task, oldest first (copies). */
  get tasks(): readonly WorkingTask[] {
    return [...this.#tasks.values()].map((task) => ({ ...task }));
  }

  /** Replaces the todo list; refuses a malformed one (INVALID_INPUT) and keeps the old. Returns both, as Claude Code's TodoWrite records them. */
  setTodos(todos: unknown): { oldTodos: TodoItem[]; newTodos: TodoItem[] } {
    const next = this.checkTodos(todos);
    const oldTodos = this.#todos.map((todo) => ({ ...todo }));
    this.#todos = next;
    return { oldTodos, newTodos: next.map((todo) => ({ ...todo })) };
  }

  /** The todo list as plain text (the plan a compaction re-injects and records in its boundary); '' when empty. */
  renderTodos(): string {
    const marks: Record<TodoStatus, string> = { pending: '[ ]', in_progress: '[~]', completed: '[x]' };
    return this.#todos
      .map(
        (todo) =>
          `${marks[todo.status]} ${todo.status === 'in_progress' && todo.activeForm ? todo.activeForm : todo.content}`,
      )
      .join('\n');
  }

  /** Records a new task as pending. */
  addTask(input: { description: string; id?: string }): WorkingTask {
    const description = typeof input?.description === 'string' ? input.description.trim() : '';
    if (description.length === 0 || description.length > TASK_DESCRIPTION_MAX_CHARS) {
      throw new EngramError(
        'INVALID_INPUT',
        `A task needs a description of 1 to ${TASK_DESCRIPTION_MAX_CHARS} characters.`,
      );
    }
    const id = input.id ?? this.#generateId();
    if (typeof id !== 'string' || id.length === 0 || id.length > 200)
      throw new EngramError('INVALID_INPUT', 'A task id is a non-empty string of at most 200 characters.');
    if (this.#tasks.has(id)) throw new EngramError('CONFLICT', `A task ${id} exists already; give a new id or none.`);
    const task: WorkingTask = { id, description, status: 'pending', createdAt: this.#now().toISOString() };
    this.#tasks.set(id, task);
    return { ...task };
  }

  /** Moves a task on: pending → running → completed | failed | killed (pending may also end directly). A finished task stays finished. */
  updateTask(id: string, change: { status: TaskStatus; result?: string }): WorkingTask {
    if (change === null || typeof change !== 'object')
      throw new EngramError('INVALID_INPUT', 'updateTask(id, { status, result? }) takes the new status.');
    const { status, result } = change;
    const task = this.#tasks.get(id);
    if (!task)
      throw new EngramError('NOT_FOUND', `No task ${JSON.stringify(String(id).slice(0, 60))} in this session.`);
    if (!['pending', 'running', ...FINISHED].includes(status))
      throw new EngramError('INVALID_INPUT', 'A task status is pending, running, completed, failed or killed.');
    if (FINISHED.has(task.status))
      throw new EngramError('CONFLICT', `Task ${id} is ${task.status} already; a finished task does not change.`);
    if (status === 'pending' && task.status === 'running')
      throw new EngramError('CONFLICT', `Task ${id} is running; it can only finish (completed, failed, killed).`);
    if (result !== undefined && (typeof result !== 'string' || result.length > TASK_RESULT_MAX_CHARS)) {
      throw new EngramError('INVALID_INPUT', `A task result is text of at most ${TASK_RESULT_MAX_CHARS} characters.`);
    }
    const at = this.#now().toISOString();
    task.status = status;
    if (status === 'running') task.startedAt = at;
    if (FINISHED.has(status)) task.finishedAt = at;
    if (result !== undefined) task.result = result;
    return { ...task };
  }

  /** Marks every pending or running task killed (the session is closing or the user interrupted). Returns how many. */
  killUnfinished(reason = 'the session ended'): number {
    let killed = 0;
    for (const task of this.#tasks.values()) {
      if (FINISHED.has(task.status)) continue;
      this.updateTask(task.id, { status: 'killed', result: reason });
      killed += 1;
    }
    return killed;
  }

  private checkTodos(todos: unknown): readonly TodoItem[] {
    if (!Array.isArray(todos))
      throw new EngramError('INVALID_INPUT', 'todos must be an array of { content, status, activeForm? } items.');
    if (todos.length > this.#maxItems)
      throw new EngramError(
        'INVALID_INPUT',
        `A todo list holds at most ${this.#maxItems} items, not ${todos.length}; merge or drop some.`,
      );
    return Object.freeze(
      todos.map((todo: unknown, index) => {
        if (todo === null || typeof todo !== 'object' || Array.isArray(todo))
          throw new EngramError('INVALID_INPUT', `todos[${index}] must be an object { content, status, activeForm? }.`);
        const item = todo as Record<string, unknown>;
        if (
          typeof item.content !== 'string' ||
          item.content.trim().length === 0 ||
          item.content.length > this.#maxChars
        ) {
          throw new EngramError(
            'INVALID_INPUT',
            `todos[${index}].content must be text of 1 to ${this.#maxChars} characters.`,
          );
        }
        if (!TODO_STATUSES.includes(item.status as TodoStatus))
          throw new EngramError('INVALID_INPUT', `todos[${index}].status must be pending, in_progress or completed.`);
        if (
          item.activeForm !== undefined &&
          (typeof item.activeForm !== 'string' || item.activeForm.length > this.#maxChars)
        ) {
          throw new EngramError(
            'INVALID_INPUT',
            `todos[${index}].activeForm must be text of at most ${this.#maxChars} characters.`,
          );
        }
        return Object.freeze({
          content: item.content,
          status: item.status as TodoStatus,
          ...(typeof item.activeForm === 'string' && item.activeForm !== '' && { activeForm: item.activeForm }),
        });
      }),
    );
  }
}

/** The text the model gets back after a successful todo_write. */
export const TODO_WRITE_RESULT =
  'Todos have been modified successfully. Keep using the todo list to track your progress, and proceed with the current tasks if applicable.';

/**
 * The `todo_write` tool: the model replaces the session's todo list in one call. `onChange` gets the
 * new list (the session appends it to its transcript). A malformed list is an error result; the old
 * list stays.
 */
export function todoWriteTool(
  workingMemory: WorkingMemory,
  onChange?: (todos: TodoItem[], previous: TodoItem[]) => void,
): SessionTool {
  return {
    definition: {
      name: 'todo_write',
      description:
        'Create and update the todo list of this session: pass the whole list each time. Use it for multi-step work; keep exactly one item in_progress while working, mark items completed as soon as they are done. The list lives only in this session.',
      inputSchema: {
        type: 'object',
        properties: {
          todos: {
            type: 'array',
            description: 'The complete, updated todo list.',
            items: {
              type: 'object',
              properties: {
                content: { type: 'string', minLength: 1, description: 'What to do, imperative ("Run the tests").' },
                status: { type: 'string', enum: [...TODO_STATUSES] },
                activeForm: {
                  type: 'string',
                  description: 'Present-continuous form shown while in progress ("Running the tests").',
                },
              },
              required: ['content', 'status'],
              additionalProperties: false,
            },
          },
        },
        required: ['todos'],
        additionalProperties: false,
      },
    },
    async run(input) {
      let change: { oldTodos: TodoItem[]; newTodos: TodoItem[] };
      try {
        change = workingMemory.setTodos(input?.todos);
      } catch (error) {
        if (error instanceof EngramError)
          return { content: `Error: ${error.message} The todo list was not changed.`, isError: true };
        throw error;
      }
      onChange?.(change.newTodos, change.oldTodos);
      return { content: TODO_WRITE_RESULT };
    },
  };
}
