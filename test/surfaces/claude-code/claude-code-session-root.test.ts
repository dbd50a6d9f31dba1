import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spoolPath } from '../../../src/surfaces/claude-code/hook-spool.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import { createWorkspace, runEngram, type Workspace } from '../../support/cli-harness.js';
import { eventually, useClaudeWorld } from '../../support/claude-code-harness.js';
import { assistantLine, line, runHook, userLine, type HookRun } from '../../support/claude-code-hook-run.js';

// Issue 26 item 9: a hook's input `cwd` follows the session's `cd` (Claude Code 2.1.332 measured
// below: after a Bash `cd sub`, Stop and SessionEnd get cwd …/sub, CLAUDE_PROJECT_DIR stays). The
// session's project is fixed by its first hook (CLAUDE_PROJECT_DIR, else that hook's cwd) and kept.

const NO_WORKER = { ENGRAM_HOOK_WORKER: 'false' };

/** Two projects with one memory each: A (alpha) and B (beta), side by side or B inside A. */
function makeProjects(root: string, nested: boolean): { a: string; b: string } {
  const a = join(root, 'alpha');
  const b = nested ? join(a, 'sub') : join(root, 'beta');
  mkdirSync(a, { recursive: true });
  mkdirSync(b, { recursive: true });
  writeFileSync(join(a, '.engram.json'), JSON.stringify({ project: { id: 'alpha' } }));
  writeFileSync(join(b, '.engram.json'), JSON.stringify({ project: { id: 'beta' } }));
  return { a, b };
}

const contextOf = (run: HookRun): string =>
  run.stdout === '' ? '' : (JSON.parse(run.stdout).hookSpecificOutput.additionalContext as string);

function spooledFolders(workspace: Workspace): string[] {
  try {
    return readFileSync(spoolPath(workspace.home), 'utf8')
      .split('\n')
      .filter((text) => text !== '')
      .map((text) => (JSON.parse(text) as { cwd: string }).cwd);
  } catch {
    return [];
  }
}

describe("a hooked session keeps its project when its shell's cwd moves", () => {
  let workspace: Workspace;
  let a: string;
  let b: string;
  beforeEach(async () => {
    workspace = createWorkspace();
    ({ a, b } = makeProjects(workspace.root, false));
    for (const [cwd, fact] of [
      [a, 'The alpha staging database is called heron-7.'],
      [b, 'The beta staging database is called osprey-3.'],
    ] as const) {
      const remembered = await workspace.run(['remember', fact, '--type', 'project'], { cwd });
      expect(remembered.code, remembered.stderr).toBe(0);
    }
  });
  afterEach(() => workspace.cleanup());

  const prompt = (session: string, cwd: string, env: Record<string, string> = {}) =>
    runHook(
      workspace,
      'user-prompt-submit',
      line({ session_id: session, cwd, prompt: 'What is the staging database called?' }),
      env,
    );

  it("started in A, moved into B: prompts get A's memories, Stop queues for A, a resume and a gone cwd stay in A", async () => {
    const start = await runHook(workspace, 'session-start', line({ session_id: 's1', cwd: a, source: 'startup' }));
    expect(contextOf(start)).toContain('heron-7');
    const moved = contextOf(await prompt('s1', b));
    expect(moved).not.toContain('osprey-3');
    // A is what the session had: its memory was given at start, so nothing new; B's never.
    const resumed = contextOf(
      await runHook(workspace, 'session-start', line({ session_id: 's1', cwd: b, source: 'resume' })),
    );
    expect(resumed).toContain('heron-7');
    expect(resumed).not.toContain('osprey-3');
    const gone = join(workspace.root, 'gone');
    const inGone = await prompt('s1', gone);
    expect(inGone.code).toBe(0);
    expect(contextOf(inGone)).not.toContain('osprey-3');

    const transcript = join(workspace.root, 's1.jsonl');
    writeFileSync(
      transcript,
      [userLine('u1', null, 'Remember that the alpha cache is redis-9.'), assistantLine('a1', 'u1', 'Noted.')]
        .map((text) => text.replaceAll('"sess-1"', '"s1"'))
        .join('\n'),
    );
    await runHook(workspace, 'stop', line({ session_id: 's1', cwd: b, transcript_path: transcript }), NO_WORKER);
    // A subagent of the session, in a folder of its own, with its own transcript.
    const agent = join(workspace.root, 'agent-x.jsonl');
    writeFileSync(agent, readFileSync(transcript, 'utf8').replaceAll('"isSidechain":false', '"isSidechain":true'));
    await runHook(workspace, 'stop', line({ session_id: 's1', cwd: gone, transcript_path: agent }), NO_WORKER);
    await runHook(workspace, 'session-end', line({ session_id: 's1', cwd: b, reason: 'other' }), NO_WORKER);
    expect(spooledFolders(workspace)).toEqual([a, a, a]);
    const run = await workspace.json(['queue', 'run'], 0, { cwd: a });
    expect(run.spool).toMatchObject({ claimed: 3, dropped: 0 });
    const inA = JSON.stringify(await workspace.json(['list'], 0, { cwd: a }));
    const inB = JSON.stringify(await workspace.json(['list'], 0, { cwd: b }));
    expect(inA).toContain('redis-9');
    expect(inB).not.toContain('redis-9');
  }, 90_000);

  it("no SessionStart seen: CLAUDE_PROJECT_DIR names the project; without it the session's first hook fixes it", async () => {
    expect(contextOf(await prompt('s2', b, { CLAUDE_PROJECT_DIR: a }))).toContain('heron-7');
    // Fixed now: a later hook without the variable stays in A.
    expect(
      contextOf(await runHook(workspace, 'session-start', line({ session_id: 's2', cwd: b, source: 'resume' }))),
    ).not.toContain('osprey-3');

    expect(contextOf(await prompt('s3', b))).toContain('osprey-3');
    const later = contextOf(
      await runHook(workspace, 'session-start', line({ session_id: 's3', cwd: a, source: 'resume' })),
    );
    expect(later).not.toContain('heron-7');
    // Another session in the same folders is its own.
    expect(contextOf(await prompt('s4', a))).toContain('heron-7');
  }, 90_000);

  it('a remembered folder that was removed gives way to what the next hook names, remembered from then on', async () => {
    const c = join(workspace.root, 'gamma');
    mkdirSync(c);
    writeFileSync(join(c, '.engram.json'), JSON.stringify({ project: { id: 'gamma' } }));
    await runHook(workspace, 'session-start', line({ session_id: 's5', cwd: c, source: 'startup' }));
    rmSync(c, { recursive: true });
    expect(contextOf(await prompt('s5', b))).toContain('osprey-3');
    expect(contextOf(await prompt('s5', a))).not.toContain('heron-7');
  }, 60_000);
});

describe('in the real Claude Code 2.1.332, a session that cds into another project', () => {
  // The session's model runs `cd sub` once, then answers.
  const { world } = useClaudeWorld(() =>
    startAnthropicMessagesServer({
      claudeCode: true,
      respond: (request) => {
        const messages = (request.body as { messages: unknown[] }).messages;
        return JSON.stringify(messages.slice(-3)).includes('tool_result')
          ? { message: { text: 'Noted.' } }
          : {
              message: {
                content: [
                  {
                    type: 'tool_use',
                    id: 'toolu_cd',
                    name: 'Bash',
                    input: { command: 'cd sub && pwd', description: 'Go into sub' },
                  },
                ],
              },
            };
      },
    }),
  );

  it('stores what it learns in the project it started in, not the one its shell is in at Stop', async () => {
    const { a, b } = makeProjects(world.root, true);
    const install = await world.engram(['install', 'claude-code'], { cwd: a });
    expect(install.code, install.stderr).toBe(0);
    const run = await world.claude(
      ['Remember that the alpha release train leaves on Thursdays.', '--allowedTools', 'Bash'],
      {
        cwd: a,
        prefix: 'cd1',
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const stored = await eventually(async () => {
      const list = await world.engram(['list', '--json'], { cwd: a });
      const memories = list.json().memories as Array<{ content: string; scope: string }>;
      return memories.find((memory) => memory.content.includes('Thursdays'));
    });
    expect(stored.scope).toBe('project:alpha');
    const inB = await runEngram(['list', '--json'], { cwd: b, home: world.engramHome, env: world.env });
    expect(JSON.stringify(inB.json())).not.toContain('Thursdays');
  }, 120_000);
});
