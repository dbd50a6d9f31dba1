import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, hookContext, requestsOf, useClaudeWorld } from '../../support/claude-code-harness.js';

// The real Claude Code CLI (2.1.332, a dev dependency) against the loopback Messages server: each
// `claude -p` takes 1.3-3 s, so one world walks the whole life of an install.
describe('engram in the real Claude Code, installed with engram install claude-code', () => {
  const { server, world } = useClaudeWorld();
  let projectA: string;
  let projectB: string;

  beforeAll(() => {
    projectA = world.project('alpha');
    projectB = world.project('beta');
  });

  it('injects a project memory in its project only, learns "remember that …" from a session for the next, re-injects after a compaction, and leaves no hook after uninstall', async () => {
    const install = await world.engram(['install', 'claude-code', '--json'], { cwd: projectA });
    expect(install.code, install.stderr).toBe(0);
    const settingsFile = join(world.home, '.claude', 'settings.json');
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
    expect(settings.enabledPlugins).toEqual({ 'engram@engram': true });
    expect(settings.extraKnownMarketplaces.engram.source.source).toBe('directory');
    const status = await world.engram(['status', '--json'], { cwd: projectA });
    expect(status.json().claudeCode.loads).toBe(true);

    const remembered = await world.engram(
      ['remember', 'The staging database is called heron-7.', '--type', 'project'],
      { cwd: projectA },
    );
    expect(remembered.code, remembered.stderr).toBe(0);

    // 1. A remembered fact reaches the request Claude Code sends in its project…
    const inA = await world.claude(['What is the staging database called?'], { cwd: projectA, prefix: 'a1' });
    expect(inA.code, inA.stderr).toBe(0);
    expect(inA.result?.is_error).toBe(false);
    const [requestA] = requestsOf(server, 'a1');
    expect(hookContext(requestA!, 'UserPromptSubmit')).toContain('heron-7');
    expect(hookContext(requestA!, 'UserPromptSubmit')).toContain('memory_context');
    expect(hookContext(requestA!, 'SessionStart')).toContain('Long-term memory');

    // …and never in another project's session.
    const inB = await world.claude(['What is the staging database called?'], { cwd: projectB, prefix: 'b1' });
    expect(inB.code, inB.stderr).toBe(0);
    expect(requestsOf(server, 'b1').length).toBeGreaterThan(0);
    for (const request of requestsOf(server, 'b1')) expect(request.rawBody).not.toContain('heron-7');

    // 2. "remember that …" said in one session is in the store after it ends, and in the next session's request.
    const told = await world.claude(['Please remember that the release train leaves on Thursdays.'], {
      cwd: projectA,
      prefix: 'a2',
    });
    expect(told.code, told.stderr).toBe(0);
    const stored = await eventually(async () => {
      const list = await world.engram(['list', '--json'], { cwd: projectA });
      const memories = (list.json().memories ?? list.json()) as Array<{ content: string; scope: string }>;
      return memories.find((memory) => memory.content.includes('Thursdays'));
    });
    expect(stored.scope).toMatch(/^project:/);
    const asked = await world.claude(['When does the release train leave?'], { cwd: projectA, prefix: 'a3' });
    expect(asked.code, asked.stderr).toBe(0);
    expect(hookContext(requestsOf(server, 'a3')[0]!, 'UserPromptSubmit')).toContain('Thursdays');
    const session = asked.result?.session_id;
    expect(session).toBeTruthy();

    // 3. After a compaction the memories surfaced before it come back (SessionStart, source compact).
    const compacted = await world.claude(['/compact', '--resume', session!], { cwd: projectA, prefix: 'a4' });
    expect(compacted.code, compacted.stderr).toBe(0);
    const next = await world.claude(['Thanks. Anything else?', '--resume', session!], { cwd: projectA, prefix: 'a5' });
    expect(next.code, next.stderr).toBe(0);
    const after = requestsOf(server, 'a5').at(-1)!;
    expect(after.rawBody).toContain('This session is being continued');
    expect(hookContext(after, 'SessionStart')).toContain('Thursdays');

    // 4. Uninstall removes what install added: no hook runs any more; memories stay.
    const uninstall = await world.engram(['uninstall', 'claude-code'], { cwd: projectA });
    expect(uninstall.code, uninstall.stderr).toBe(0);
    if (existsSync(settingsFile)) {
      const left = JSON.parse(readFileSync(settingsFile, 'utf8'));
      expect(JSON.stringify(left)).not.toContain('engram');
    }
    const plain = await world.claude(['What is the staging database called?'], { cwd: projectA, prefix: 'a6' });
    expect(plain.code, plain.stderr).toBe(0);
    for (const request of requestsOf(server, 'a6')) {
      expect(request.rawBody).not.toContain('hook additional context');
      expect(request.rawBody).not.toContain('heron-7');
    }
    const list = await world.engram(['list', '--json'], { cwd: projectA });
    expect(JSON.stringify(list.json())).toContain('heron-7');
  }, 120_000);
});
