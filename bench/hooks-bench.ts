import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
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
  /** The same hook of another engram (ENGRAM_BENCH_HOOKS_BEFORE), timed in the same rounds. */
  beforeP95Ms?: number;
  /** Its p95 over p95 of `node -e ''`: before and after in one run. */
  beforeRatioP95?: number;
  /** Installed rows (the agent's command, the hook server warm): the target as a ratio p95 to `node -e ''`. */
  targetRatioP95?: number;
  /** The same installed command with no hook server (its Node fallback), in the same rounds. */
  fallbackP95Ms?: number;
  fallbackRatioP95?: number;
  /** Installed rows: of the warm runs (and the three untimed before them), how many the hook server answered (the rest fell back to Node). */
  answeredByServer?: number;
}

/**
 * A queueing hook (Stop, PreCompact, SessionEnd) with its detached worker on, as the installed plugin
 * runs it (hooks.json's command through `sh -c`: the sh fast path, hook.sh): alone (one hook at
 * a time) and CONCURRENT at once (several sessions ending together), beside `node -e ''` alone and
 * CONCURRENT `node -e ''` at once measured in the same rounds.
 */
export interface HookConcurrencyRow {
  event: string;
  /** Hooks started together: 1 (alone) or CONCURRENT. */
  atOnce: number;
  runs: number;
  p50Ms: number;
  p95Ms: number;
  /** Claude Code's budget for a SessionEnd hook, node's start included (test/support/claude-code-cli.md §3.3). */
  targetP95Ms: number;
  /** `node -e ''` alone, interleaved with the rounds. */
  nodeAloneP95Ms: number;
  /** As many `node -e ''` at once as hooks: what the machine's cores allow any process. */
  nodeAtOnceP95Ms: number;
  /** p95 of the hook over p95 of `node -e ''` alone. */
  ratioToNodeAlone: number;
  /** p95 of the hook over p95 of as many `node -e ''` at once. */
  ratioToNodeAtOnce: number;
  /** Extraction workers seen alive at once at most (sampled): one per store is the design. */
  workersAtOnceMax: number;
  /** The fast path's adopters seen alive at once at most (sampled): one is the design. */
  adoptersAtOnceMax: number;
}

export interface HooksBenchResult {
  single: HookBenchRow[];
  concurrency: HookConcurrencyRow[];
}

const SIZE = 10_000;
const RUNS = 20;
const CONCURRENT = 8;
const ROUNDS = Number(process.env.ENGRAM_BENCH_HOOK_ROUNDS ?? 8);
// Another engram checkout (built), e.g. main's: its plugin launcher's hooks are timed interleaved
// with this tree's on the same store, so a change's before and after come from one run.
const BEFORE = process.env.ENGRAM_BENCH_HOOKS_BEFORE;
const SESSION_END_BUDGET_MS = 1_500;
const TARGETS: Record<string, number> = {
  'user-prompt-submit': 150,
  'session-start': 250,
  stop: 100,
  'session-end': 100,
};

interface HookWorld {
  directory: string;
  project: string;
  env: Record<string, string>;
  launcher: string;
  transcript: (session: string, text: string) => string;
}

/** A 10K-memory SQLite store, a project and a HOME; the worker off unless asked. */
async function makeWorld(memories: ReturnType<typeof makeMemories>): Promise<HookWorld> {
  const root = resolve(import.meta.dirname, '..');
  const directory = mkdtempSync(join(tmpdir(), 'engram-hooks-bench-'));
  const database = join(directory, 'engram.db');
  const store = new SqliteMemoryStore({ path: database });
  await store.open();
  for (let start = 0; start < memories.length; start += 500)
    await store.createMany(memories.slice(start, start + 500), { actor: 'bench' });
  await store.close();
  const project = join(directory, 'project');
  mkdirSync(project);
  writeFileSync(join(project, '.engram.json'), JSON.stringify({ project: { id: 'bench-3' } }));
  const home = join(directory, 'home');
  mkdirSync(home);
  return {
    directory,
    project,
    launcher: join(root, 'plugins', 'engram', 'scripts', 'engram.mjs'),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      ENGRAM_HOME: join(home, '.engram'),
      ENGRAM_STORE: database,
      ENGRAM_MODEL_PROVIDER: 'none',
      ENGRAM_HOOK_WORKER: 'false',
      // The hook's own time, not the deadline's: on a loaded machine a hook past hooks.deadlineMs
      // answers with nothing, which is cheap and would hide what the work costs.
      ENGRAM_HOOK_DEADLINE_MS: '60000',
    },
    transcript(session, text) {
      const path = join(directory, `${session}.jsonl`);
      const line = (record: Record<string, unknown>) => JSON.stringify({ sessionId: session, ...record });
      writeFileSync(
        path,
        [
          line({ type: 'user', uuid: 'u1', parentUuid: null, message: { role: 'user', content: text } }),
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
            message: { role: 'user', content: `Remember that ${session} ran in the hooks bench.` },
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
    },
  };
}

/** Issue 28 item 7: an installed prompt hook within 1.5x `node -e ''` at p95, session start within 2x. */
const TARGET_RATIOS: Record<string, number> = { 'user-prompt-submit': 1.5, 'session-start': 2 };

/**
 * Each agent's session-start and prompt hook as installed (Claude Code's hooks.json command, the
 * command `engram install <agent>` writes, OpenCode's plugin's: all the sh client hook.sh) with
 * the hook server warm, and the same command with no server (another ENGRAM_HOME, hooks.server off:
 * the client's Node fallback), each beside `node -e ''` in the same rounds.
 */
async function benchInstalled(
  world: HookWorld,
  entries: Array<{ name: string; event: string; args: string[]; input: (run: number) => string }>,
): Promise<HookBenchRow[]> {
  const { env, project, launcher } = world;
  const { agentHookCommand } = await import('../src/surfaces/claude-code/agent-hook-command.js');
  const { hookServerStatus } = await import('../src/surfaces/claude-code/hook-server-status.js');
  const installed = JSON.parse(readFileSync(join(launcher, '..', '..', 'hooks', 'hooks.json'), 'utf8')) as {
    hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
  };
  const claude: Record<string, string> = { 'session-start': 'SessionStart', 'user-prompt-submit': 'UserPromptSubmit' };
  const shellEnv = { ...env, CLAUDE_PLUGIN_ROOT: join(launcher, '..', '..') };
  const coldEnv = { ...shellEnv, ENGRAM_HOME: join(world.directory, 'no-server-home'), ENGRAM_HOOK_SERVER: 'false' };
  let said = '';
  const time = (command: string, input: string, runEnv: Record<string, string>): number => {
    const start = process.hrtime.bigint();
    const result = spawnSync('/bin/sh', ['-c', command], { env: runEnv, cwd: project, input, encoding: 'utf8' });
    const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${command} exited ${result.status}: ${result.stderr}`);
    said = result.stdout;
    return elapsed;
  };
  // The server these rows time is this part's own: one an earlier part's hook started (OpenCode's
  // plugin falls back once, then starts one) is stopped first, and the same pid must answer to the end.
  const status = async (): Promise<{ pid: number; requests: number }> => {
    for (let tries = 0; tries < 50; tries += 1) {
      // A generous wait: on a loaded machine a status question can queue behind a hook's answer.
      const found = await hookServerStatus(env.ENGRAM_HOME!, 5_000);
      if (found !== undefined) return found;
      await sleep(100);
    }
    throw new Error('the hook server does not answer its status');
  };
  const earlier = await hookServerStatus(env.ENGRAM_HOME!, 5_000);
  if (earlier !== undefined) {
    process.kill(earlier.pid, 'SIGTERM');
    for (let tries = 0; (await hookServerStatus(env.ENGRAM_HOME!, 1_000)) !== undefined; tries += 1) {
      if (tries > 100) throw new Error(`the hook server ${earlier.pid} did not stop`);
      await sleep(100);
    }
  }
  const server = spawn(process.execPath, [launcher, 'hook', 'serve'], { env, cwd: project, stdio: 'ignore' });
  const rows: HookBenchRow[] = [];
  try {
    const { pid } = await status();
    if (pid !== server.pid) throw new Error(`another hook server (${pid}) answers for the bench's home`);
    for (const { name, event, args, input } of entries) {
      if (TARGET_RATIOS[event] === undefined) continue;
      // [launcher, 'hook', event] for Claude Code, [..., '--agent', <agent>] for the others.
      const agentAt = args.indexOf('--agent');
      const agent = agentAt < 0 ? undefined : args[agentAt + 1];
      const command =
        agent === undefined
          ? installed.hooks[claude[event]!]![0]!.hooks[0]!.command
          : agentHookCommand(agent, launcher, event as 'session-start', process.execPath);
      const warm: number[] = [];
      const cold: number[] = [];
      const baseline: number[] = [];
      const answered = (await status()).requests;
      // Untimed first: the server's first questions of a kind (and the first row's, its first at all)
      // fill its caches and the JIT; "warm" is what every later prompt of a session gets.
      for (let run = 0; run < 3; run += 1) time(command, input(RUNS + 300 + run), shellEnv);
      const warmSaid = said;
      time(command, input(RUNS + 303), coldEnv);
      // Both paths must answer alike: a fast row of an empty answer would mislead.
      if (warmSaid === '' || said === '')
        throw new Error(
          `"${name}" answered nothing (${warmSaid === '' ? 'server warm' : 'no server'}): ${said.slice(0, 200)}`,
        );
      for (let run = 0; run < RUNS; run += 1) {
        baseline.push(time(`${JSON.stringify(process.execPath)} -e ''`, '', shellEnv));
        warm.push(time(command, input(RUNS + 400 + run), shellEnv));
        cold.push(time(command, input(RUNS + 500 + run), coldEnv));
      }
      const after = await status();
      if (after.pid !== pid)
        throw new Error(`the hook server was restarted during "${name}" (${pid}, then ${after.pid})`);
      const served = after.requests - answered;
      const base = quantile(baseline, 0.95);
      const row: HookBenchRow = {
        event: `${name} installed`,
        memories: SIZE,
        runs: RUNS,
        p50Ms: round(median(warm), 1),
        p95Ms: round(quantile(warm, 0.95), 1),
        targetP95Ms: TARGETS[event]!,
        baselineP50Ms: round(median(baseline), 1),
        baselineP95Ms: round(base, 1),
        ratioP95: round(quantile(warm, 0.95) / base, 2),
        targetRatioP95: TARGET_RATIOS[event]!,
        fallbackP95Ms: round(quantile(cold, 0.95), 1),
        fallbackRatioP95: round(quantile(cold, 0.95) / base, 2),
        answeredByServer: served,
      };
      rows.push(row);
      console.log(
        `hooks ${row.event.padEnd(34)} server warm p95 ${row.p95Ms} ms, ratio ${row.ratioP95}x (target ${row.targetRatioP95}x${row.ratioP95 <= row.targetRatioP95! ? ', met' : ', NOT met'}; ${served}/${RUNS + 3} answered by the server); no server p95 ${row.fallbackP95Ms} ms, ratio ${row.fallbackRatioP95}x; node -e '' p95 ${row.baselineP95Ms} ms`,
      );
    }
  } finally {
    server.kill('SIGTERM');
  }
  return rows;
}

/**
 * The Claude Code hooks (issue 13) as Claude Code runs them: `node plugins/engram/scripts/engram.mjs
 * hook <event>` with the event's JSON on stdin, on a 10K-memory SQLite store, offline. First each
 * event alone with the detached worker off (hooks.worker), so only the hook itself is timed; then
 * Stop, PreCompact and SessionEnd as hooks.json installs them (the sh fast path) with the worker on,
 * alone and CONCURRENT at once (issue 26 item 8).
 */
export async function benchHooksPart(): Promise<HooksBenchResult> {
  const vocabulary = makeVocabulary(5_000, seededRandom(7));
  const memories = makeMemories(SIZE, { seed: SIZE, scopeCount: 20, vocabulary });
  const queries = makeQueries(memories, RUNS + 1, SIZE + 2).map((query) => query.text);
  const world = await makeWorld(memories);
  const { env, project, launcher, transcript } = world;
  const inputs: Record<string, (run: number) => string> = {
    'session-start': (run) => JSON.stringify({ session_id: `ss-${run}`, cwd: project, source: 'startup' }),
    'user-prompt-submit': (run) =>
      JSON.stringify({ session_id: `ups-${run}`, cwd: project, prompt: queries[run % queries.length]! }),
    stop: (run) =>
      JSON.stringify({
        session_id: `bench-session-${run}`,
        cwd: project,
        transcript_path: transcript(`bench-session-${run}`, queries[run % queries.length]!),
      }),
    'session-end': (run) =>
      JSON.stringify({
        session_id: `bench-session-${run}`,
        cwd: project,
        transcript_path: transcript(`bench-session-${run}`, queries[run % queries.length]!),
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
  // Each agent's hook entry: Claude Code's four events, and Codex's and Copilot's per-prompt and
  // session-start through the same runner (`--agent <name>`, agent-hook-protocols.ts), with their stdin.
  const entries: Array<{ name: string; event: string; args: string[]; input: (run: number) => string }> = [
    ...Object.entries(inputs).map(([event, input]) => ({ name: event, event, args: [launcher, 'hook', event], input })),
    ...(['session-start', 'user-prompt-submit'] as const).map((event) => ({
      name: `codex ${event}`,
      event,
      args: [launcher, 'hook', event, '--agent', 'codex'],
      input: (run: number) =>
        JSON.stringify({
          ...(JSON.parse(inputs[event]!(run)) as Record<string, unknown>),
          session_id: `codex-${event}-${run}`,
          hook_event_name: event === 'session-start' ? 'SessionStart' : 'UserPromptSubmit',
          model: 'gpt-test',
          transcript_path: null,
        }),
    })),
    // Copilot CLI's: camelCase stdin (`sessionId`, ms `timestamp`), `source: new`, `{"additionalContext"}` out.
    ...(['session-start', 'user-prompt-submit'] as const).map((event) => ({
      name: `copilot ${event}`,
      event,
      args: [launcher, 'hook', event, '--agent', 'copilot'],
      input: (run: number) => {
        const { session_id: _id, prompt, ...rest } = JSON.parse(inputs[event]!(run)) as Record<string, unknown>;
        return JSON.stringify({
          ...rest,
          sessionId: `copilot-${event}-${run}`,
          timestamp: Date.now(),
          ...(event === 'session-start' ? { source: 'new', initialPrompt: queries[run % queries.length] } : { prompt }),
        });
      },
    })),
    // Gemini CLI's SessionStart and BeforeAgent (its stdin adds a timestamp), Qwen Code's with the
    // typed text in submitted_prompt, where its runner reads it.
    ...(['session-start', 'user-prompt-submit'] as const).map((event) => ({
      name: `gemini ${event}`,
      event,
      args: [launcher, 'hook', event, '--agent', 'gemini'],
      input: (run: number) =>
        JSON.stringify({
          ...(JSON.parse(inputs[event]!(run)) as Record<string, unknown>),
          session_id: `gemini-${event}-${run}`,
          hook_event_name: event === 'session-start' ? 'SessionStart' : 'BeforeAgent',
          timestamp: new Date().toISOString(),
        }),
    })),
    ...(['session-start', 'user-prompt-submit'] as const).map((event) => ({
      name: `qwen ${event}`,
      event,
      args: [launcher, 'hook', event, '--agent', 'qwen'],
      input: (run: number) => {
        const base = JSON.parse(inputs[event]!(run)) as Record<string, unknown>;
        return JSON.stringify({
          ...base,
          session_id: `qwen-${event}-${run}`,
          hook_event_name: event === 'session-start' ? 'SessionStart' : 'UserPromptSubmit',
          ...(base.prompt !== undefined && { submitted_prompt: base.prompt }),
        });
      },
    })),
    // OpenCode's plugin starts a session by running the same runner (`--agent opencode`) with its stdin.
    {
      name: 'opencode session-start',
      event: 'session-start',
      args: [launcher, 'hook', 'session-start', '--agent', 'opencode'],
      input: (run: number) => JSON.stringify({ session_id: `opencode-ss-${run}`, cwd: project, source: 'startup' }),
    },
  ];
  const beforeLauncher =
    BEFORE === undefined ? undefined : join(resolve(BEFORE), 'plugins', 'engram', 'scripts', 'engram.mjs');
  const single: HookBenchRow[] = [];
  for (const { name, event, args, input } of entries) {
    const hook: number[] = [];
    const baseline: number[] = [];
    const before: number[] = [];
    const beforeArgs = beforeLauncher === undefined ? undefined : [beforeLauncher, ...args.slice(1)];
    // One untimed run each first: it fills Node's compile cache where Node has one (22.1+).
    time(args, input(RUNS + 100));
    if (beforeArgs) time(beforeArgs, input(RUNS + 101));
    for (let run = 0; run < RUNS; run += 1) {
      baseline.push(time(['-e', ''], ''));
      // Alternating which goes first, so neither always runs in the other's wake.
      if (beforeArgs && run % 2 === 1) before.push(time(beforeArgs, input(RUNS + 200 + run)));
      hook.push(time(args, input(run)));
      if (beforeArgs && run % 2 === 0) before.push(time(beforeArgs, input(RUNS + 200 + run)));
    }
    const row: HookBenchRow = {
      event: name,
      memories: SIZE,
      runs: RUNS,
      p50Ms: round(median(hook), 1),
      p95Ms: round(quantile(hook, 0.95), 1),
      targetP95Ms: TARGETS[event]!,
      baselineP50Ms: round(median(baseline), 1),
      baselineP95Ms: round(quantile(baseline, 0.95), 1),
      ratioP95: round(quantile(hook, 0.95) / quantile(baseline, 0.95), 2),
      ...(before.length > 0 && {
        beforeP95Ms: round(quantile(before, 0.95), 1),
        beforeRatioP95: round(quantile(before, 0.95) / quantile(baseline, 0.95), 2),
      }),
    };
    single.push(row);
    console.log(
      `hooks ${name.padEnd(24)} p50 ${row.p50Ms} ms, p95 ${row.p95Ms} ms (target ${row.targetP95Ms}); node -e '' p50 ${row.baselineP50Ms} ms, p95 ${row.baselineP95Ms} ms; ratio p95 ${row.ratioP95}x` +
        (row.beforeRatioP95 === undefined ? '' : `; before p95 ${row.beforeP95Ms} ms, ratio ${row.beforeRatioP95}x`),
    );
  }
  single.push(await benchOpenCodePrompt(world, queries, time));
  single.push(...(await benchInstalled(world, entries)));
  const concurrency = await benchConcurrency(world, queries);
  rmSync(world.directory, { recursive: true, force: true });
  return { single, concurrency };
}

/**
 * OpenCode's per-prompt cost: engram's plugin module (as `engram install opencode` writes it) loaded
 * once, as OpenCode keeps it loaded, and its `chat.message` hook awaited for each prompt of one
 * started session (its call into the runner, the answer parsed and pushed as a part), beside
 * `node -e ''` spawned in the same runs. The plugin runs the runner with its own process's
 * environment: the world's, for the time of this part.
 */
async function benchOpenCodePrompt(
  world: HookWorld,
  queries: string[],
  time: (args: string[], input: string) => number,
): Promise<HookBenchRow> {
  const { opencodePluginModule } = await import('../src/surfaces/claude-code/opencode-plugin-module.js');
  const file = join(world.directory, 'opencode-engram.mjs');
  writeFileSync(file, opencodePluginModule({ node: process.execPath, launcher: world.launcher, waitMs: 30_000 }));
  const saved = { ...process.env };
  for (const key of Object.keys(process.env)) delete process.env[key];
  Object.assign(process.env, world.env);
  try {
    const { EngramMemory } = (await import(pathToFileURL(file).href)) as {
      EngramMemory: (context: { directory: string }) => Promise<{
        'chat.message': (input: { sessionID: string }, output: { message: object; parts: object[] }) => Promise<void>;
      }>;
    };
    const hooks = await EngramMemory({ directory: world.project });
    const prompt = async (text: string): Promise<{ ms: number; parts: number }> => {
      const output = { message: { id: 'msg_bench', sessionID: 'ses_bench' }, parts: [{ type: 'text', text }] };
      const start = process.hrtime.bigint();
      await hooks['chat.message']({ sessionID: 'ses_bench' }, output);
      return { ms: Number(process.hrtime.bigint() - start) / 1e6, parts: output.parts.length };
    };
    await prompt(queries[RUNS]!); // The session's start and first prompt: not timed.
    const hook: number[] = [];
    const baseline: number[] = [];
    let recalled = 0;
    for (let run = 0; run < RUNS; run += 1) {
      baseline.push(time(['-e', ''], ''));
      const timed = await prompt(queries[run % queries.length]!);
      hook.push(timed.ms);
      if (timed.parts > 1) recalled += 1;
    }
    // A plugin that timed out or failed answers nothing: a fast bench of nothing would mislead.
    if (recalled === 0) throw new Error('the OpenCode plugin added no memory to any prompt');
    const row: HookBenchRow = {
      event: 'opencode chat.message',
      memories: SIZE,
      runs: RUNS,
      p50Ms: round(median(hook), 1),
      p95Ms: round(quantile(hook, 0.95), 1),
      targetP95Ms: TARGETS['user-prompt-submit']!,
      baselineP50Ms: round(median(baseline), 1),
      baselineP95Ms: round(quantile(baseline, 0.95), 1),
      ratioP95: round(quantile(hook, 0.95) / quantile(baseline, 0.95), 2),
    };
    console.log(
      `hooks ${row.event.padEnd(24)} p50 ${row.p50Ms} ms, p95 ${row.p95Ms} ms (target ${row.targetP95Ms}); node -e '' p50 ${row.baselineP50Ms} ms, p95 ${row.baselineP95Ms} ms; ratio p95 ${row.ratioP95}x (${recalled}/${RUNS} prompts given memory)`,
    );
    return row;
  } finally {
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/**
 * Stop, PreCompact and SessionEnd with the worker on, as installed (hooks.json's command): each alone (one at a time, RUNS runs, the
 * worker a previous hook started may still run), then ROUNDS rounds of CONCURRENT at once, each hook
 * a session of its own, every round's worker left running into the next. Then each other agent's
 * end-of-turn hook as `engram install <agent>` writes it, alone. `node -e ''` alone and
 * CONCURRENT at once are timed in the same rounds, as the ratios' bases.
 */
async function benchConcurrency(world: HookWorld, queries: string[]): Promise<HookConcurrencyRow[]> {
  const plugin = resolve(import.meta.dirname, '..', 'plugins', 'engram');
  const env = { ...world.env, ENGRAM_HOOK_WORKER: 'true', CLAUDE_PLUGIN_ROOT: plugin };
  const installed = JSON.parse(readFileSync(join(plugin, 'hooks', 'hooks.json'), 'utf8')) as {
    hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
  };
  const names: Record<string, string> = { stop: 'Stop', 'pre-compact': 'PreCompact', 'session-end': 'SessionEnd' };
  const command = (event: string): string => installed.hooks[names[event]!]![0]!.hooks[0]!.command;
  const run = (args: string[], input: string, file = process.execPath): Promise<number> =>
    new Promise((resolvePromise, reject) => {
      const start = process.hrtime.bigint();
      const child = spawn(file, args, { env, cwd: world.project, stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.stdin.on('error', () => undefined);
      child.on('exit', (code) => {
        const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
        if (code === 0) resolvePromise(elapsed);
        else reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`));
      });
      child.stdin.end(input);
    });
  let sessions = 0;
  const hookInput = (event: string): string => {
    sessions += 1;
    const session = `concurrent-${sessions}`;
    return JSON.stringify({
      session_id: session,
      cwd: world.project,
      transcript_path: world.transcript(session, queries[sessions % queries.length]!),
      ...(event === 'session-end' && { reason: 'other' }),
    });
  };
  // This bench's workers (their argv names the project folder) and adopters (their environment names
  // its home), counted from /proc without blocking the timing.
  const countWorkers = async (): Promise<{ workers: number; adopters: number }> => {
    const count = { workers: 0, adopters: 0 };
    for (const name of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const argv = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
      if (argv.includes('hook-worker.js') && argv.includes(world.directory)) count.workers += 1;
      if (argv.includes('adopt-events')) {
        const environ = await readFile(`/proc/${name}/environ`, 'utf8').catch(() => '');
        if (environ.includes(world.env.ENGRAM_HOME!)) count.adopters += 1;
      }
    }
    return count;
  };
  let workersMax = 0;
  let adoptersMax = 0;
  let sampling = false;
  const sampler = setInterval(() => {
    if (sampling) return;
    sampling = true;
    void countWorkers().then((count) => {
      workersMax = Math.max(workersMax, count.workers);
      adoptersMax = Math.max(adoptersMax, count.adopters);
      sampling = false;
    });
  }, 100);
  // Claude Code's three events alone and at once, and every other agent's end-of-turn hook as
  // `engram install <agent>` writes it (hook.sh with the agent: the same fast path), alone.
  const { agentHookCommand } = await import('../src/surfaces/claude-code/agent-hook-command.js');
  const { AGENT_HOOK_PROTOCOLS } = await import('../src/surfaces/claude-code/agent-hook-protocols.js');
  const targets: Array<{ name: string; command: string; input: () => string; atOnce: number[] }> = [
    ...['stop', 'pre-compact', 'session-end'].map((event) => ({
      name: event,
      command: command(event),
      input: () => hookInput(event),
      atOnce: [1, CONCURRENT],
    })),
    ...Object.values(AGENT_HOOK_PROTOCOLS)
      .filter((protocol) => protocol.agent !== 'claude-code' && protocol.agent !== 'opencode')
      .map((protocol) => ({
        name: `${protocol.agent} stop`,
        command: agentHookCommand(protocol.agent, world.launcher, 'stop', process.execPath),
        input: () => {
          const { session_id, transcript_path, ...rest } = JSON.parse(hookInput('stop')) as Record<string, unknown>;
          return JSON.stringify(
            protocol.stdinFields === 'camelCase'
              ? { ...rest, sessionId: session_id, transcriptPath: transcript_path }
              : { ...rest, session_id, transcript_path },
          );
        },
        atOnce: [1],
      })),
  ];
  const rows: HookConcurrencyRow[] = [];
  try {
    for (const target of targets) {
      const event = target.name;
      for (const atOnce of target.atOnce) {
        workersMax = 0;
        adoptersMax = 0;
        const hook: number[] = [];
        const nodeAlone: number[] = [];
        const nodeAtOnce: number[] = [];
        const rounds = atOnce === 1 ? RUNS : ROUNDS;
        for (let round = 0; round < rounds; round += 1) {
          nodeAlone.push(await run(['-e', ''], ''));
          nodeAtOnce.push(...(await Promise.all(Array.from({ length: CONCURRENT }, () => run(['-e', ''], '')))));
          const inputs = Array.from({ length: atOnce }, () => target.input());
          hook.push(...(await Promise.all(inputs.map((input) => run(['-c', target.command], input, '/bin/sh')))));
          await sleep(200);
        }
        const p95 = quantile(hook, 0.95);
        const row: HookConcurrencyRow = {
          event,
          atOnce,
          runs: hook.length,
          p50Ms: round(median(hook), 1),
          p95Ms: round(p95, 1),
          targetP95Ms: SESSION_END_BUDGET_MS,
          nodeAloneP95Ms: round(quantile(nodeAlone, 0.95), 1),
          nodeAtOnceP95Ms: round(quantile(nodeAtOnce, 0.95), 1),
          ratioToNodeAlone: round(p95 / quantile(nodeAlone, 0.95), 2),
          ratioToNodeAtOnce: round(p95 / quantile(nodeAtOnce, 0.95), 2),
          workersAtOnceMax: workersMax,
          adoptersAtOnceMax: adoptersMax,
        };
        rows.push(row);
        console.log(
          `hooks ${event.padEnd(14)} (installed) ${String(atOnce).padStart(2)} at once, worker on: p50 ${row.p50Ms} ms, p95 ${row.p95Ms} ms (target ${row.targetP95Ms}); node -e '' alone p95 ${row.nodeAloneP95Ms} ms (${row.ratioToNodeAlone}x), ${CONCURRENT} at once p95 ${row.nodeAtOnceP95Ms} ms (${row.ratioToNodeAtOnce}x); workers at once ≤ ${row.workersAtOnceMax}, adopters ≤ ${row.adoptersAtOnceMax}`,
        );
      }
    }
  } finally {
    clearInterval(sampler);
    // Let the last worker finish before the folder goes.
    for (let wait = 0; wait < 300; wait += 1) {
      const { workers, adopters } = await countWorkers();
      if (workers + adopters === 0) break;
      await sleep(200);
    }
  }
  return rows;
}
