import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptIncoming, incomingFolder } from '../../../src/surfaces/claude-code/hook-incoming.js';
import { RECORDED_ENV } from '../../../src/surfaces/claude-code/hook-recorded-env.js';
import { spoolFolder, spoolPath } from '../../../src/surfaces/claude-code/hook-spool.js';
import { useWorkspace, type Workspace } from '../../support/cli-harness.js';
import { eventually, HOOK_LAUNCHER, PLUGIN_DIR } from '../../support/claude-code-harness.js';
import { AGENT_HOOK_PROTOCOLS } from '../../../src/surfaces/claude-code/agent-hook-protocols.js';
import { agentHookCommand } from '../../../src/surfaces/claude-code/agent-hook-command.js';
import {
  hookEnv,
  installedHookCommand,
  line,
  logLines,
  runHook,
  runInstalledHook,
  runWithInput,
  writeTranscript,
  eventuallyListed,
} from '../../support/claude-code-hook-run.js';

// Issue 26 item 8: Stop, PreCompact and SessionEnd run as hooks.json installs them: a POSIX sh script
// that starts no Node (plugins/engram/scripts/hook.sh) writes the raw event, and an adopter
// turns it into the spool line the Node hook writes, by the Node hook's code. Real processes: /bin/sh,
// the plugin's launcher, the adopter and the worker, watched in /proc.

const NO_WORKER = { ENGRAM_HOOK_WORKER: 'false' };

function spoolLines(workspace: Workspace): Array<Record<string, unknown>> {
  try {
    return readFileSync(spoolPath(workspace.home), 'utf8')
      .split('\n')
      .filter((text) => text.trim() !== '')
      .map((text) => JSON.parse(text) as Record<string, unknown>);
  } catch {
    return [];
  }
}

function rawEvents(workspace: Workspace): string[] {
  try {
    return readdirSync(incomingFolder(workspace.home)).filter((name) => name.endsWith('.json'));
  } catch {
    return [];
  }
}

/** This test holds the adopter's lock (its pid, alive): a hook starts no adopter, the test adopts when it chooses. */
function holdAdopterLock(workspace: Workspace): void {
  mkdirSync(spoolFolder(workspace.home), { recursive: true });
  writeFileSync(join(spoolFolder(workspace.home), 'worker-incoming.pid'), String(process.pid));
}

/** Processes of the given kind alive now whose environment names this workspace's home. */
function processesOf(workspace: Workspace, kind: 'adopt-events' | 'hook-worker.js'): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (!argv.includes(kind)) continue;
      const environ = readFileSync(`/proc/${name}/environ`, 'utf8');
      if (environ.split('\0').includes(`ENGRAM_HOME=${workspace.home}`)) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

describe('the queueing hooks as installed take the sh fast path', () => {
  const workspace = useWorkspace();

  it('hooks.json runs the sh script for Stop, PreCompact and SessionEnd with the Node hook as its fallback', () => {
    for (const event of ['stop', 'pre-compact', 'session-end']) {
      const command = installedHookCommand(event);
      expect(command).toMatch(new RegExp(`^sh "\\$\\{CLAUDE_PLUGIN_ROOT\\}/scripts/hook.sh" ${event} \\|\\| node `));
      expect(command).toContain(`engram.mjs" hook ${event} --from engram-plugin`);
    }
    // The variables the sh script records are the ones the adopter and the hook server read (a setting added to one is added to the other).
    const script = readFileSync(join(PLUGIN_DIR, 'scripts', 'hook.sh'), 'utf8');
    const list = /for variable in ([\s\S]*?); do/.exec(script)![1]!.replace(/\\\n/g, ' ');
    expect(list.split(/\s+/).filter(Boolean)).toEqual([...RECORDED_ENV]);
  });

  it("writes each event raw, and its adoption is the Node hook's spool line and the same job", async () => {
    // The session started in a project whose name needs escaping, then `cd`ed into a subfolder.
    const project = join(workspace.cwd, 'we"ird\\ name é');
    const moved = join(project, 'sub');
    mkdirSync(moved, { recursive: true });
    writeFileSync(join(project, '.engram.json'), JSON.stringify({ project: { id: 'fast-path' } }));
    const env = { ...NO_WORKER, CLAUDE_PROJECT_DIR: project, ENGRAM_HOOK_TRANSCRIPT_READ_TRIES: '4' };
    const transcript = writeTranscript(workspace.root, 'sess-f', 'Remember that the fast path writes raw events.');
    const inputs: Record<string, string> = {
      stop: line({ session_id: 'sess-f', cwd: moved, transcript_path: transcript, stop_hook_active: false }),
      'pre-compact': line({ session_id: 'sess-f', cwd: moved, transcript_path: transcript, trigger: 'auto' }),
      // Pretty-printed, as a hook's stdin may be.
      'session-end': JSON.stringify(
        { session_id: 'sess-f', cwd: moved, transcript_path: transcript, reason: 'prompt_input_exit' },
        null,
        2,
      ),
    };
    holdAdopterLock(workspace);
    const strip = (entry: Record<string, unknown>) => ({ ...entry, at: undefined });
    for (const [event, input] of Object.entries(inputs)) {
      const fast = await runInstalledHook(workspace, event, input, env);
      expect(fast.code).toBe(0);
      expect(fast.stdout).toBe('');
      // Raw, not yet a spool line: no Node ran for it.
      expect(rawEvents(workspace)).toHaveLength(1);
      expect(spoolLines(workspace)).toEqual([]);
      const adopted = adoptIncoming({ home: workspace.home, env: process.env, startWorkers: false });
      expect(adopted).toEqual({ adopted: 1, skipped: 0 });
      expect(rawEvents(workspace)).toEqual([]);
      const [fromFast] = spoolLines(workspace);
      rmSync(spoolPath(workspace.home));
      const slow = await runHook(workspace, event, input, env);
      expect(slow.code).toBe(0);
      const [fromNode] = spoolLines(workspace);
      rmSync(spoolPath(workspace.home));
      expect(fromFast).toBeDefined();
      expect(strip(fromFast!)).toEqual(strip(fromNode!));
      expect(fromFast!.cwd).toBe(project);
    }
    // The same job: queued from the fast path first, the Node hook's event for the same turns adds none.
    expect((await runInstalledHook(workspace, 'stop', inputs.stop!, env)).code).toBe(0);
    const first = await workspace.json(['queue', 'run'], 0, { env });
    expect(rawEvents(workspace)).toEqual([]);
    expect(await runHook(workspace, 'stop', inputs.stop!, env)).toMatchObject({ code: 0 });
    const second = await workspace.json(['queue', 'run'], 0, { env });
    expect(JSON.stringify(first)).toMatch(/"jobs":1\b/);
    expect(JSON.stringify(second)).toMatch(/"jobs":0\b/);
  }, 120_000);

  it("every agent's queueing hooks as installed are written raw too, and adopted by the agent's protocol", async () => {
    // Before, another agent's Stop and SessionEnd each started Node (under load, past Copilot's
    // timeout: no trace of the turn). Now hook.sh writes them raw with the agent in the header.
    const copilotHome = join(workspace.root, 'copilot-home');
    const env = { ...NO_WORKER, COPILOT_HOME: copilotHome };
    holdAdopterLock(workspace);
    const strip = (entry: Record<string, unknown>) => ({ ...entry, at: undefined });
    let checked = 0;
    for (const protocol of Object.values(AGENT_HOOK_PROTOCOLS)) {
      if (protocol.agent === 'claude-code') continue;
      const session = `s-${protocol.agent}`;
      // Copilot's sessionEnd names no file: its own session log is found under COPILOT_HOME.
      const transcript =
        protocol.agent === 'copilot'
          ? join(copilotHome, 'session-state', session, 'events.jsonl')
          : join(workspace.root, `${session}.jsonl`);
      mkdirSync(dirname(transcript), { recursive: true });
      writeFileSync(transcript, '{}\n');
      for (const word of ['stop', 'pre-compact', 'session-end'] as const) {
        if (protocol.events[word] === undefined) continue;
        const camel = protocol.stdinFields === 'camelCase';
        const input = line({
          [camel ? 'sessionId' : 'session_id']: session,
          cwd: workspace.cwd,
          ...(!(camel && word === 'session-end') && { [camel ? 'transcriptPath' : 'transcript_path']: transcript }),
        });
        const command = agentHookCommand(protocol.agent, HOOK_LAUNCHER, word);
        expect(command).toMatch(/^sh '/);
        const fast = await runWithInput(workspace, '/bin/sh', ['-c', command], hookEnv(workspace, env), input);
        expect([fast.code, fast.stdout, fast.stderr]).toEqual([0, '', '']);
        expect(rawEvents(workspace)).toHaveLength(1);
        expect(spoolLines(workspace)).toEqual([]);
        expect(adoptIncoming({ home: workspace.home, env: process.env, startWorkers: false })).toEqual({
          adopted: 1,
          skipped: 0,
        });
        const [fromFast] = spoolLines(workspace);
        rmSync(spoolPath(workspace.home));
        expect(await runHook(workspace, word, input, env, ['--agent', protocol.agent])).toMatchObject({ code: 0 });
        const [fromNode] = spoolLines(workspace);
        rmSync(spoolPath(workspace.home));
        expect(fromFast, `${protocol.agent} ${word}`).toMatchObject({
          agent: protocol.agent,
          transcriptPath: transcript,
        });
        expect(strip(fromFast!)).toEqual(strip(fromNode!));
        checked += 1;
      }
    }
    expect(checked).toBe(10);
    expect(logLines(workspace)).toEqual([]);
  }, 120_000);

  it('eight hooks at once start one adopter and one worker, and every event is queued', async () => {
    writeFileSync(join(workspace.cwd, '.engram.json'), JSON.stringify({ dream: { minSessions: 1_000 } }));
    const sessions = Array.from({ length: 8 }, (_, index) => `fast-${index}`);
    const adopters = new Set<number>();
    const workers = new Set<number>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const pid of processesOf(workspace, 'adopt-events')) adopters.add(pid);
        for (const pid of processesOf(workspace, 'hook-worker.js')) workers.add(pid);
        await new Promise((done) => setTimeout(done, 5));
      }
    })();
    const runs = await Promise.all(
      sessions.map((session, index) =>
        runInstalledHook(
          workspace,
          index % 2 === 0 ? 'stop' : 'session-end',
          line({
            session_id: session,
            cwd: workspace.cwd,
            transcript_path: writeTranscript(workspace.root, session, `Remember that relay ${index} is rl-${index}.`),
            reason: 'other',
          }),
        ),
      ),
    );
    expect(runs.map((run) => [run.code, run.stdout])).toEqual(sessions.map(() => [0, '']));
    const stored = await eventuallyListed(
      workspace,
      sessions.map((_, index) => `rl-${index}`),
    );
    expect(stored.length).toBeGreaterThanOrEqual(8);
    await eventually(async () =>
      processesOf(workspace, 'adopt-events').length + processesOf(workspace, 'hook-worker.js').length === 0
        ? true
        : undefined,
    );
    watching = false;
    await watcher;
    // One of each; a second only when a hook wrote just as the first let go of its lock.
    expect(adopters.size).toBeGreaterThanOrEqual(1);
    expect(adopters.size).toBeLessThanOrEqual(2);
    expect(workers.size).toBeGreaterThanOrEqual(1);
    expect(workers.size).toBeLessThanOrEqual(2);
    expect(rawEvents(workspace)).toEqual([]);
    expect(readdirSync(spoolFolder(workspace.home)).filter((name) => name.startsWith('worker-'))).toEqual([]);
  }, 180_000);

  it('a call engram started does nothing: no file, no process, no output', async () => {
    const transcript = writeTranscript(workspace.root, 'sess-n', 'Remember that nested calls are ignored.');
    for (const event of ['stop', 'pre-compact', 'session-end']) {
      for (const nested of ['1', 'true', 'yes']) {
        const run = await runInstalledHook(
          workspace,
          event,
          line({ session_id: 'sess-n', cwd: workspace.cwd, transcript_path: transcript }),
          { ENGRAM_NESTED: nested },
        );
        expect([run.code, run.stdout, run.stderr]).toEqual([0, '', '']);
      }
    }
    expect(existsSync(spoolFolder(workspace.home))).toBe(false);
    expect(processesOf(workspace, 'adopt-events')).toEqual([]);
    // ENGRAM_NESTED empty or 0 is not a nested call: the event is written.
    for (const nested of ['', '0']) {
      const run = await runInstalledHook(
        workspace,
        'stop',
        line({ session_id: `sess-${nested || 'empty'}`, cwd: workspace.cwd, transcript_path: transcript }),
        { ...NO_WORKER, ENGRAM_NESTED: nested },
      );
      expect(run.code).toBe(0);
    }
    await eventually(async () => (spoolLines(workspace).length === 2 ? true : undefined));
  }, 60_000);

  it('an event the sh script cannot write goes to the Node hook: spooled when it can be, the loss said when it cannot', async () => {
    const transcript = writeTranscript(workspace.root, 'sess-w', 'Remember that the spool may be unwritable.');
    const input = (session: string) => line({ session_id: session, cwd: workspace.cwd, transcript_path: transcript });
    // The raw events' folder is a file: the Node hook spools the event itself.
    mkdirSync(spoolFolder(workspace.home), { recursive: true });
    writeFileSync(incomingFolder(workspace.home), 'not a folder');
    const kept = await runInstalledHook(workspace, 'stop', input('sess-kept'), NO_WORKER);
    expect([kept.code, kept.stdout]).toEqual([0, '']);
    expect(spoolLines(workspace).map((entry) => entry.sessionId)).toEqual(['sess-kept']);
    // The spool folder itself is a file: nothing can be written; the user, stderr and the log are told.
    renameSync(spoolFolder(workspace.home), join(workspace.root, 'old-spool'));
    writeFileSync(spoolFolder(workspace.home), 'not a folder');
    for (const event of ['stop', 'session-end']) {
      const lost = await runInstalledHook(workspace, event, input(`sess-lost-${event}`), NO_WORKER);
      expect(lost.code).toBe(0);
      const shown = JSON.parse(lost.stdout) as { systemMessage?: string };
      expect(shown.systemMessage).toContain(`engram did not queue the ${event === 'stop' ? 'Stop' : 'end'}`);
      expect(shown.systemMessage).toContain(`sess-lost-${event}`);
      expect(lost.stderr).toContain('engram did not queue');
    }
    expect(logLines(workspace).filter((entry) => entry.status === 'lost')).toHaveLength(2);
  }, 60_000);

  it('with hooks.extract off a Stop is discarded by the adopter, a SessionEnd still counted, as the Node hook does', async () => {
    const transcript = writeTranscript(workspace.root, 'sess-x', 'Remember that extraction may be off.');
    const env = { ...NO_WORKER, ENGRAM_HOOK_EXTRACT: 'false' };
    holdAdopterLock(workspace);
    for (const event of ['stop', 'pre-compact', 'session-end']) {
      const run = await runInstalledHook(
        workspace,
        event,
        line({ session_id: 'sess-x', cwd: workspace.cwd, transcript_path: transcript, reason: 'other' }),
        env,
      );
      expect([run.code, run.stdout]).toEqual([0, '']);
    }
    // The adopter's own environment has extraction on: the hooks' recorded one decides.
    expect(adoptIncoming({ home: workspace.home, env: process.env, startWorkers: false })).toEqual({
      adopted: 3,
      skipped: 0,
    });
    expect(spoolLines(workspace).map((entry) => [entry.event, entry.transcriptPath])).toEqual([
      ['SessionEnd', undefined],
    ]);
  }, 60_000);
  it("adopts a dead adopter's event, drops what is not an event (logged), and leaves a file being written alone", async () => {
    const transcript = writeTranscript(workspace.root, 'sess-d', 'Remember that adopters may die.');
    const folder = incomingFolder(workspace.home);
    mkdirSync(folder, { recursive: true });
    const header = (event: string) => JSON.stringify({ v: 1, event, pwd: workspace.cwd, env: {} });
    const stdin = (session: string) => line({ session_id: session, cwd: workspace.cwd, transcript_path: transcript });
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    // Taken by an adopter that died, a live adopter's (this test), a header that is not engram's, stdin that is not JSON, a file still being written.
    writeFileSync(join(folder, `ev-1-0.json.${dead}.taking`), `${header('Stop')}\n${stdin('sess-dead')}\n`);
    writeFileSync(join(folder, `ev-2-0.json.${process.pid}.taking`), `${header('Stop')}\n${stdin('sess-busy')}\n`);
    writeFileSync(join(folder, 'ev-3-0.json'), `${header('UserPromptSubmit')}\n${stdin('sess-foreign')}\n`);
    writeFileSync(join(folder, 'ev-4-0.json'), `${header('SessionEnd')}\n{"session_id": "sess-torn", \n`);
    writeFileSync(join(folder, 'ev-5-0.json.part'), `${header('Stop')}\n`);
    expect(adoptIncoming({ home: workspace.home, env: process.env, startWorkers: false })).toEqual({
      adopted: 1,
      skipped: 2,
    });
    expect(spoolLines(workspace).map((entry) => entry.sessionId)).toEqual(['sess-dead']);
    expect(readdirSync(folder).sort()).toEqual([`ev-2-0.json.${process.pid}.taking`, 'ev-5-0.json.part']);
    const skipped = logLines(workspace).filter((entry) => entry.status === 'skipped');
    expect(skipped.map((entry) => entry.message)).toEqual([
      'a fast-path hook event with an unreadable header was dropped',
      expect.stringContaining('stdin is not JSON'),
    ]);
  });
});
