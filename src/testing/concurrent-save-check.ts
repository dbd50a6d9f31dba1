import { expect } from 'vitest';
import type { StoreWith } from '../contracts/memory-store.js';
import type { SaveLine } from './store-write-worker-tasks.js';
import { runStoreWorkersTogether, unexpectedStderr } from './store-write-worker-process.js';

/**
 * Statements every process saves. Some have two wordings, one saying a word more: the processes
 * alternate them, so merges rewrite the memory (history records updates) as well as repeat it.
 */
const STATEMENTS: ReadonlyArray<readonly [string, string?]> = [
  ['The staging database is refreshed from production every Sunday night.'],
  [
    'Always run the linter before committing changes to the repository.',
    'Always run the linter before committing changes to the shared repository.',
  ],
  ['Deploys go through the GitHub Actions pipeline, never by hand.'],
  [
    'The user prefers concise answers with code examples first.',
    'The user prefers concise answers with runnable code examples first.',
  ],
];

export interface ConcurrentSaveCheckOptions {
  /** The store the processes share, opened by this process to inspect the result (its checkpoints start them together). */
  store: StoreWith<'checkpoints'>;
  /** The URL the worker processes open (a SQLite path or postgres://…). */
  url: string;
  /** The scope saved into; it must be empty. Default `project:concurrent-saves`. */
  scope?: string;
  /** Default 3. */
  processes?: number;
  /** How many times each process saves each statement. Default 1. */
  rounds?: number;
  /**
   * Delay added to every store call in the workers (default 30 ms), so the window between a save's
   * check and its write is as wide as over a network and an unlocked save would lose the race.
   */
  latencyMs?: number;
}

/**
 * Starts processes that save the same statements at once through `Engram.save` (dedupe on write)
 * into one store, then checks the outcome a user would see: one memory per statement, every save
 * answered with it, one `create` each, a hit recorded for every repeat, and a history whose
 * entries follow on from one another. Runs on any backend a worker can open by URL.
 */
export async function expectConcurrentSavesDeduplicated(options: ConcurrentSaveCheckOptions): Promise<void> {
  const { store, url } = options;
  const scope = options.scope ?? 'project:concurrent-saves';
  const processes = options.processes ?? 3;
  const rounds = options.rounds ?? 1;
  const filter = { scopes: [scope], archived: 'include', invalid: 'include' } as const;
  expect(await store.count(filter), `the scope ${scope} must start empty`).toBe(0);

  const results = await runStoreWorkersTogether(
    store,
    Array.from({ length: processes }, (_, index) => {
      const statements = STATEMENTS.map((wordings) => wordings[index % wordings.length]!);
      return {
        url,
        task: {
          mode: 'save',
          scope,
          statements,
          rounds,
          actor: `saver-${index}`,
          latencyMs: options.latencyMs ?? 30,
        } as const,
      };
    }),
  );
  for (const result of results) {
    expect({ exitCode: result.exitCode, signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual({
      exitCode: 0,
      signal: null,
      stderr: '',
    });
    expect(result.ids).toHaveLength(rounds * STATEMENTS.length);
  }
  const lines = results.flatMap((result) => result.ids.map((line) => JSON.parse(line) as SaveLine));

  const memories = await store.list(filter);
  expect(memories.map((memory) => memory.content).sort(), 'one memory per statement').toHaveLength(STATEMENTS.length);
  for (const [statement, wordings] of STATEMENTS.entries()) {
    const saves = lines.filter((line) => line.statement === statement);
    const ids = [...new Set(saves.map((line) => line.id))];
    expect(ids, `every save of statement ${statement} went to one memory`).toHaveLength(1);
    expect(
      saves.filter((line) => line.action === 'created'),
      `statement ${statement} was created once`,
    ).toHaveLength(1);
    const memory = memories.find((candidate) => candidate.id === ids[0]);
    expect(memory, `the memory of statement ${statement} is stored`).toBeDefined();
    // Every save after the first was a repeat, and each repeat counts as a use.
    expect(memory!.hitCount).toBe(saves.length - 1);
    const usedWordings = new Set(Array.from({ length: processes }, (_, index) => wordings[index % wordings.length]));
    // A wording that says more wins over one that says less, whatever the order they came in.
    expect(memory!.content).toBe([...usedWordings].sort((a, b) => b!.length - a!.length)[0]);

    const history = await store.history(memory!.id);
    expect(history.map((entry) => entry.action)).toEqual(['create', ...history.slice(1).map(() => 'update')]);
    for (const [index, entry] of history.entries()) {
      if (index === 0) continue;
      expect(entry.actor).toMatch(/ \(dedupe\)$/);
      expect(entry.before?.content, 'each update starts from the state the one before it left').toBe(
        history[index - 1]!.after?.content,
      );
    }
    expect(history.at(-1)!.after?.content).toBe(memory!.content);
  }
}
