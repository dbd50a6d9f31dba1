import { setTimeout as sleep } from 'node:timers/promises';
import { Engram } from '../engram.js';
import { requireRole, STORE_ROLES, type MemoryStore } from '../contracts/memory-store.js';
import type { MemoryPatch } from '../memory/memory.js';

/**
 * What a store worker process does once its store is open. Each task prints one line per unit of
 * work, only after that work has returned, so a parent can compare what was printed with what
 * the store holds (even after killing the worker part-way).
 */
export type StoreWorkerTask =
  /**
   * Creates memories one `create` at a time (or `batchSize` per `createMany`); prints each id once
   * written. `report: 'end'` prints them all at the end instead, then `timing:<first>:<last>` (epoch
   * ms when the first and last writes returned), so a benchmark times the store, not a pipe write per memory.
   */
  | {
      mode: 'write';
      scope: string;
      count: number | 'unbounded';
      tag: string;
      batchSize?: number;
      report?: 'each' | 'end';
      warmup?: number;
    }
  /** Claims jobs of a queue and completes them until none is due; prints `<job id> <attempts>` per claim. */
  | { mode: 'claim-jobs'; queue: string; worker: string; leaseMs: number }
  /** Claims one job of a queue, prints `claimed <job id>`, and holds it (never renewing) until the process is killed. */
  | { mode: 'claim-and-hold'; queue: string; worker: string; leaseMs: number }
  /** Adds 1 to a checkpoint `count` times, reading and writing it under a store lock; prints each value written. */
  | { mode: 'lock-increment'; lock: string; checkpoint: string; count: number }
  /** Takes a store lock, prints `locked`, and holds it until the process is killed. */
  | { mode: 'hold-lock'; lock: string }
  /**
   * Saves each statement `rounds` times through Engram.save (dedupe on write); prints one JSON line
   * per save. `latencyMs` delays every store call, as a store across a network would.
   */
  | { mode: 'save'; scope: string; statements: string[]; rounds: number; actor: string; latencyMs?: number }
  /** Changes memories as a person editing them would (`update`, one change each); prints each memory's new state as JSON. */
  | { mode: 'update'; edits: Array<{ id: string; patch: MemoryPatch }>; actor: string };

/** Starts the last line a `write` task with `report: 'end'` prints. */
export const TIMING_PREFIX = 'timing:';

/** One line a `save` task prints per save. */
export interface SaveLine {
  statement: number;
  action: 'created' | 'merged';
  id: string;
}

/**
 * Before a timed start: a `write` task with `warmup` first creates that many memories (in its scope,
 * named `<tag>-warmup-<n>`, printed nowhere), so the timed writes run on warmed-up code (the JIT), as
 * a long-lived writer's do. Other tasks do nothing here.
 */
export async function warmUpStoreWorkerTask(store: MemoryStore, task: StoreWorkerTask): Promise<void> {
  if (task.mode !== 'write' || !task.warmup) return;
  const change = { actor: `store-write-worker:${task.tag}` };
  for (let index = 0; index < task.warmup; index += 1) {
    await store.create(
      {
        scope: task.scope,
        name: `${task.tag}-warmup-${index}`,
        content: `Writer ${task.tag} warmed up with memory number ${index}.`,
      },
      change,
    );
  }
}

/** Runs a task against an open store, writing its lines with `print`. */
export async function runStoreWorkerTask(
  store: MemoryStore,
  task: StoreWorkerTask,
  print: (line: string) => void,
): Promise<void> {
  switch (task.mode) {
    case 'write': {
      const count = task.count === 'unbounded' ? Number.POSITIVE_INFINITY : task.count;
      const batchSize = Math.max(1, Math.floor(task.batchSize ?? 1));
      const input = (index: number) => ({
        scope: task.scope,
        name: `${task.tag}-${index}`,
        content: `Writer ${task.tag} wrote memory number ${index} of its run.`,
      });
      const change = { actor: `store-write-worker:${task.tag}` };
      const atEnd = task.report === 'end';
      const written: string[] = [];
      let firstAt = 0;
      const done = (id: string): void => {
        if (!atEnd) return print(id);
        if (written.length === 0) firstAt = Date.now();
        written.push(id);
      };
      for (let index = 0; index < count; index += batchSize) {
        if (batchSize === 1) {
          done((await store.create(input(index), change)).id);
          continue;
        }
        const size = Math.min(batchSize, count - index);
        for (const memory of await store.createMany(
          Array.from({ length: size }, (_, offset) => input(index + offset)),
          change,
        ))
          done(memory.id);
      }
      if (atEnd) {
        const lastAt = Date.now();
        if (written.length > 0) print(written.join('\n'));
        print(`${TIMING_PREFIX}${firstAt}:${lastAt}`);
      }
      return;
    }
    case 'claim-jobs': {
      const jobs = requireRole(store, 'jobs', 'a claim-jobs task');
      for (;;) {
        const job = await jobs.claim({ queue: task.queue, worker: task.worker, leaseMs: task.leaseMs });
        if (!job) return;
        print(`${job.id} ${job.attempts}`);
        // The "work": a millisecond, so the other worker's claims interleave with ours even when its
        // process starts late on a loaded machine (one turn of the event loop let one drain the queue).
        await sleep(1);
        await jobs.complete(job.id, task.worker);
      }
    }
    case 'claim-and-hold': {
      const job = await requireRole(store, 'jobs', 'a claim-and-hold task').claim({
        queue: task.queue,
        worker: task.worker,
        leaseMs: task.leaseMs,
      });
      print(job ? `claimed ${job.id}` : 'none');
      // A referenced timer keeps the process alive, holding the lease, until it is killed.
      if (job) await new Promise(() => setInterval(() => undefined, 60_000));
      return;
    }
    case 'lock-increment': {
      const locks = requireRole(store, 'locks', 'a lock-increment task');
      const checkpoints = requireRole(store, 'checkpoints', 'a lock-increment task');
      for (let index = 0; index < task.count; index += 1) {
        const written = await locks.hold(
          task.lock,
          async () => {
            const value = Number((await checkpoints.get(task.checkpoint)) ?? '0');
            // Read, pause, write: without mutual exclusion another process would write in between.
            await sleep(1);
            await checkpoints.set(task.checkpoint, String(value + 1));
            return value + 1;
          },
          { waitMs: 60_000 },
        );
        print(String(written));
      }
      return;
    }
    case 'hold-lock': {
      await requireRole(store, 'locks', 'a hold-lock task').hold(task.lock, async () => {
        print('locked');
        // A referenced timer keeps the process alive while it holds the lock, until it is killed.
        await new Promise(() => setInterval(() => undefined, 60_000));
      });
      return;
    }
    case 'save': {
      const engram = new Engram({
        store: withLatency(store, task.latencyMs ?? 0),
        defaultScope: task.scope,
        actor: task.actor,
        onWarning: () => undefined,
      });
      for (let round = 0; round < task.rounds; round += 1) {
        for (const [statement, content] of task.statements.entries()) {
          const result = await engram.save({ content });
          const line: SaveLine = { statement, action: result.action, id: result.memory.id };
          print(JSON.stringify(line));
        }
      }
      return;
    }
    case 'update': {
      for (const edit of task.edits)
        print(JSON.stringify(await store.update(edit.id, edit.patch, { actor: task.actor })));
      return;
    }
  }
}

/**
 * The same store with every async call delayed by `latencyMs`, as over a network: a local SQLite
 * call takes microseconds, which would leave a check-then-write race too narrow for a test to hit.
 * The roles (`store.locks`, `store.vectors`, …) are delayed the same way.
 */
function withLatency(store: MemoryStore, latencyMs: number): MemoryStore {
  if (latencyMs <= 0) return store;
  const roles = new Map<PropertyKey, object>();
  for (const role of STORE_ROLES) {
    const object = store[role];
    if (object) roles.set(role, delayed(object, latencyMs));
  }
  return delayed(store, latencyMs, { immediate: new Set(['info', 'open', 'close']), replaced: roles });
}

/** `target` with each method call delayed, except `immediate` ones; `replaced` properties are read from there instead. */
function delayed<T extends object>(
  target: T,
  latencyMs: number,
  {
    immediate = new Set(),
    replaced = new Map(),
  }: { immediate?: ReadonlySet<PropertyKey>; replaced?: ReadonlyMap<PropertyKey, object> } = {},
): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      if (replaced.has(property)) return replaced.get(property);
      const value = Reflect.get(object, property, receiver) as unknown;
      if (typeof value !== 'function' || immediate.has(property))
        return typeof value === 'function' ? value.bind(object) : value;
      return async (...args: unknown[]) => {
        await sleep(latencyMs);
        return (value as (...parameters: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}
