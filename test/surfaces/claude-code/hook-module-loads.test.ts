import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, runPiped, type Workspace } from '../../support/cli-harness.js';

// A hook is a whole process per event and loading modules is much of its time (bench/hooks-bench.ts):
// each event loads its own side and nothing of the others'. Run on the unbundled modules (dist/),
// whose static and dynamic imports are the bundle's chunks, with a resolve hook that lists every
// module the process loads.

const DIST = resolve(import.meta.dirname, '..', '..', '..', 'dist');
const HOOK_MAIN = pathToFileURL(join(DIST, 'surfaces', 'claude-code', 'hook-main.js')).href;

/** What no hook needs: the dream, model and embedding adapters, maintenance, procedure skills. */
const NO_HOOK_NEEDS = [
  /\/consolidation\/run-dream\.js$/,
  /\/consolidation\/dream-plan\.js$/,
  /\/adapters\/models\//,
  /\/adapters\/embedding\//,
  /\/maintenance\//,
  /\/skills\//,
  /\/extraction\/extractor\.js$/,
];
/** The queueing hooks' side (the spool, the worker's start, the fast path's adopter). */
const QUEUE_SIDE = [/\/hook-queue\.js$/, /\/hook-adopter\.js$/, /\/hook-worker-lock\.js$/, /\/hook-incoming\.js$/];
/** The store's side (SessionStart and UserPromptSubmit only). */
const STORE_SIDE = [/\/hook-answer\.js$/, /\/adapters\/sqlite\//, /\/recall\//, /\/engram\.js$/];

describe('what each hook process loads', () => {
  let workspace: Workspace;
  let register: string;
  beforeAll(async () => {
    workspace = createWorkspace();
    const remembered = await workspace.run(['remember', 'The deploy target is the staging cluster named orca.']);
    expect(remembered.code, remembered.stderr).toBe(0);
    register = join(workspace.root, 'list-loads.mjs');
    // The hook runs in the loader's own thread: it appends each module's URL to the file the run names.
    const hook = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (process.env.LOADS_FILE) appendFileSync(process.env.LOADS_FILE, resolved.url + '\\n');
  return resolved;
}`;
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});\n`,
    );
  });
  afterAll(() => workspace?.cleanup());

  /** One hook event in a process of its own; the modules of dist/ it loaded, and its stdout. */
  const run = async (
    event: string,
    input: Record<string, unknown>,
    agent?: string,
  ): Promise<{ loads: string[]; stdout: string }> => {
    const loadsFile = join(workspace.root, `loads-${event}-${agent ?? 'claude-code'}-${Date.now()}.txt`);
    writeFileSync(loadsFile, '');
    const script = `const { runHookProcess } = await import(${JSON.stringify(HOOK_MAIN)}); await runHookProcess(${JSON.stringify(event)}, ${JSON.stringify(agent === undefined ? {} : { agent })});`;
    const hook = await runPiped(
      process.execPath,
      ['--import', pathToFileURL(register).href, '--input-type=module', '-e', script],
      {
        cwd: workspace.cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: workspace.home,
          ENGRAM_HOME: workspace.home,
          ENGRAM_HOOK_WORKER: 'false',
          // The unbundled modules load slower than the bundle, on a loaded machine slower still.
          ENGRAM_HOOK_DEADLINE_MS: '30000',
          // Inside Claude Code the side model would be claude-code's (model.provider auto): the hooks call none.
          CLAUDECODE: '1',
          LOADS_FILE: loadsFile,
        },
        input: JSON.stringify({ cwd: workspace.cwd, ...input }),
      },
    );
    if (hook.code !== 0) throw new Error(`hook ${event} exited ${hook.code}: ${hook.stderr}`);
    const loads = readFileSync(loadsFile, 'utf8')
      .split('\n')
      .filter((url) => url.startsWith(pathToFileURL(DIST).href));
    return { loads, stdout: hook.stdout };
  };
  const loadedOf = (loads: readonly string[], patterns: readonly RegExp[]): string[] =>
    loads.filter((url) => patterns.some((pattern) => pattern.test(url)));

  it('UserPromptSubmit (Claude Code and Codex) answers from the store and loads nothing of the queue, the dream, models, maintenance or skills', async () => {
    for (const agent of [undefined, 'codex']) {
      const { loads, stdout } = await run(
        'user-prompt-submit',
        { session_id: `ups-${agent ?? 'claude'}`, prompt: 'Which cluster is the deploy target?' },
        agent,
      );
      expect(stdout).toContain('orca');
      expect(loadedOf(loads, STORE_SIDE).length).toBeGreaterThan(0);
      expect(loadedOf(loads, [...NO_HOOK_NEEDS, ...QUEUE_SIDE, /\/claude-code-install\.js$/])).toEqual([]);
    }
  }, 60_000);

  it('SessionStart loads nothing of the queue, the dream, models or maintenance (skills only when installed)', async () => {
    const { loads, stdout } = await run('session-start', { session_id: 'ss-1', source: 'startup' });
    expect(stdout).toContain('orca');
    expect(loadedOf(loads, [...NO_HOOK_NEEDS, ...QUEUE_SIDE])).toEqual([]);
  }, 60_000);

  it('Stop spools the event and loads nothing of the store, recall or the dream', async () => {
    const transcript = join(workspace.root, 'stop.jsonl');
    writeFileSync(transcript, '');
    const { loads } = await run('stop', { session_id: 'stop-1', transcript_path: transcript });
    expect(loadedOf(loads, [/\/hook-queue\.js$/]).length).toBe(1);
    expect(loadedOf(loads, [...NO_HOOK_NEEDS, ...STORE_SIDE, /\/hook-adopter\.js$/])).toEqual([]);
  }, 60_000);
});
