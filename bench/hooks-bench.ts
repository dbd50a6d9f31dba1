import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { quantile, median, round } from './statistics.js';
import { makeMemories, makeQueries, makeVocabulary, seededRandom } from './synthetic-memories.js';

/** One hook event as a whole process, beside `node -e ''` run interleaved with it. */
export interface HookBenchRow {
  event: string;
  memories: number;
  runs: number;
  p50Ms: number;
  p95Ms: number;
  targetP95Ms: number;
  baselineP50Ms: number;
  baselineP95Ms: number;
  /** p95 of the hook over p95 of `node -e ''`. */
  ratioP95: number;
}

const SIZE = 10_000;
const RUNS = 20;
const TARGETS: Record<string, number> = {
  'user-prompt-submit': 150,
  'session-start': 250,
  stop: 100,
  'session-end': 100,
};

/**
 * The Claude Code hooks (issue 13) as Claude Code runs them: `node plugins/engram/scripts/engram.mjs
 * hook <event>` with the event's JSON on stdin, on a 10K-memory SQLite store, offline, with the
 * detached worker off (hooks.worker) so only the hook itself is timed.
 */
export async function benchHooksPart(): Promise<HookBenchRow[]> {
  const root = resolve(import.meta.dirname, '..');
  const launcher = join(root, 'plugins', 'engram', 'scripts', 'engram.mjs');
  const directory = mkdtempSync(join(tmpdir(), 'engram-hooks-bench-'));
  const database = join(directory, 'engram.db');
  const store = new SqliteMemoryStore({ path: database });
  await store.open();
  const vocabulary = makeVocabulary(5_000, seededRandom(7));
  const memories = makeMemories(SIZE, { seed: SIZE, scopeCount: 20, vocabulary });
  for (let start = 0; start < memories.length; start += 500)
    await store.createMany(memories.slice(start, start + 500), { actor: 'bench' });
  await store.close();
  const project = join(directory, 'project');
  mkdirSync(project);
  writeFileSync(join(project, '.engram.json'), JSON.stringify({ project: { id: 'bench-3' } }));
  const home = join(directory, 'home');
  mkdirSync(home);
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    ENGRAM_HOME: join(home, '.engram'),
    ENGRAM_STORE: database,
    ENGRAM_MODEL_PROVIDER: 'none',
    ENGRAM_HOOK_WORKER: 'false',
  };
  const queries = makeQueries(memories, RUNS + 1, SIZE + 2).filter(() => true);
  const transcript = (run: number): string => {
    const path = join(directory, `session-${run}.jsonl`);
    const session = `bench-session-${run}`;
    const line = (record: Record<string, unknown>) => JSON.stringify({ sessionId: session, ...record });
    writeFileSync(
      path,
      [
        line({
          type: 'user',
          uuid: 'u1',
          parentUuid: null,
          message: { role: 'user', content: queries[run % queries.length]!.text },
        }),
        line({
          type: 'assistant',
          uuid: 'a1',
          parentUuid: 'u1',
          message: { id: 'msg_1', role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
        }),
        line({
          type: 'user',
          uuid: 'u2',
          parentUuid: 'a1',
          message: { role: 'user', content: 'Remember that bench runs use ten thousand memories.' },
        }),
        line({
          type: 'assistant',
          uuid: 'a2',
          parentUuid: 'u2',
          message: { id: 'msg_2', role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
        }),
      ].join('\n'),
    );
    return path;
  };
  const inputs: Record<string, (run: number) => string> = {
    'session-start': (run) => JSON.stringify({ session_id: `ss-${run}`, cwd: project, source: 'startup' }),
    'user-prompt-submit': (run) =>
      JSON.stringify({ session_id: `ups-${run}`, cwd: project, prompt: queries[run % queries.length]!.text }),
    stop: (run) =>
      JSON.stringify({ session_id: `bench-session-${run}`, cwd: project, transcript_path: transcript(run) }),
    'session-end': (run) =>
      JSON.stringify({
        session_id: `bench-session-${run}`,
        cwd: project,
        transcript_path: transcript(run),
        reason: 'other',
      }),
  };
  const time = (args: string[], input: string): number => {
    const start = process.hrtime.bigint();
    const result = spawnSync(process.execPath, args, { env, cwd: project, input, encoding: 'utf8' });
    const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    return elapsed;
  };
  const rows: HookBenchRow[] = [];
  for (const [event, input] of Object.entries(inputs)) {
    const hook: number[] = [];
    const baseline: number[] = [];
    time([launcher, 'hook', event], input(RUNS + 100));
    for (let run = 0; run < RUNS; run += 1) {
      baseline.push(time(['-e', ''], ''));
      hook.push(time([launcher, 'hook', event], input(run)));
    }
    const row: HookBenchRow = {
      event,
      memories: SIZE,
      runs: RUNS,
      p50Ms: round(median(hook), 1),
      p95Ms: round(quantile(hook, 0.95), 1),
      targetP95Ms: TARGETS[event]!,
      baselineP50Ms: round(median(baseline), 1),
      baselineP95Ms: round(quantile(baseline, 0.95), 1),
      ratioP95: round(quantile(hook, 0.95) / quantile(baseline, 0.95), 2),
    };
    rows.push(row);
    console.log(
      `hooks ${event.padEnd(18)} p50 ${row.p50Ms} ms, p95 ${row.p95Ms} ms (target ${row.targetP95Ms}); node -e '' p50 ${row.baselineP50Ms} ms, p95 ${row.baselineP95Ms} ms; ratio p95 ${row.ratioP95}x`,
    );
  }
  rmSync(directory, { recursive: true, force: true });
  return rows;
}
