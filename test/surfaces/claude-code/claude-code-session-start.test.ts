import { beforeAll, describe, expect, it } from 'vitest';
import { hookContext, PLUGIN_DIR, requestsOf, useClaudeWorld } from '../../support/claude-code-harness.js';

// SessionStart at startup gives, besides the index, the project's most relevant memories in full
// (ways of working first), in the request the real Claude Code sends; never another project's.
describe('SessionStart in the real Claude Code: the most relevant memories for the project', () => {
  const { server, world } = useClaudeWorld();
  let alpha: string;
  let beta: string;
  const remember = async (cwd: string, args: string[]): Promise<void> => {
    const run = await world.engram(['remember', ...args], { cwd });
    expect(run.code, run.stderr).toBe(0);
  };

  beforeAll(() => {
    alpha = world.project('alpha');
    beta = world.project('beta');
  });

  it('injects the feedback, the user preference and the project memory the index does not show in full, tagged, only in their project', async () => {
    const lint =
      'Always run the linter before committing: CI rejects unformatted code, and the fix is npm run lint -- --fix.';
    const tabs = 'The user reads code with tabs four columns wide and wants no trailing whitespace in any file.';
    const otter = 'The build uses the otter toolchain with -O3 and link-time optimisation on every target.';
    await remember(alpha, [lint, '--type', 'feedback', '--description', 'Lint before committing']);
    await remember(alpha, [tabs, '--type', 'user', '--scope', 'global', '--description', 'Editor preferences']);
    await remember(alpha, ['The staging database is called heron-7.', '--type', 'project']);
    await remember(beta, [otter, '--type', 'project', '--description', 'Build toolchain']);

    const inAlpha = await world.claude(['--plugin-dir', PLUGIN_DIR, 'What should I do before committing?'], {
      cwd: alpha,
      prefix: 'ssa',
    });
    expect(inAlpha.code, inAlpha.stderr).toBe(0);
    const [request] = requestsOf(server, 'ssa');
    const start = hookContext(request!, 'SessionStart');
    expect(start).toContain('Long-term memory');
    // In full, inside the block extraction strips; the feedback before the user preference.
    expect(start).toContain('<memory_context>');
    expect(start).toContain('npm run lint -- --fix');
    expect(start).toContain('four columns wide');
    expect(start.indexOf('npm run lint')).toBeLessThan(start.indexOf('four columns wide'));
    // The index line already shows heron-7 in full: it is not given twice.
    expect(start.slice(0, start.lastIndexOf('<memory_context>'))).toContain('The staging database is called heron-7.');
    expect(start.slice(start.lastIndexOf('<memory_context>'))).not.toContain('heron-7');
    expect(request!.rawBody).not.toContain('otter');
    // Given at the start, so the prompt's recall leaves it out.
    expect(hookContext(request!, 'UserPromptSubmit')).not.toContain('npm run lint');

    const inBeta = await world.claude(['--plugin-dir', PLUGIN_DIR, 'hello'], { cwd: beta, prefix: 'ssb' });
    expect(inBeta.code, inBeta.stderr).toBe(0);
    const [other] = requestsOf(server, 'ssb');
    expect(hookContext(other!, 'SessionStart')).toContain('otter toolchain');
    for (const sent of requestsOf(server, 'ssb')) {
      expect(sent.rawBody).not.toContain('npm run lint');
      expect(sent.rawBody).not.toContain('heron-7');
    }
  }, 90_000);
});
