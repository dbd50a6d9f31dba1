import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeBinary, hookContext, requestsOf, useClaudeWorld } from '../../support/claude-code-harness.js';

// Issue 28 item 8: engram must not vanish from the interactive path either. The real `claude`
// (2.1.332) runs with no -p in a pseudo-terminal made by util-linux's `script` (no native pty addon
// needed), with engram's plugin installed by `engram install claude-code`; the first request it
// sends to the loopback server carries the UserPromptSubmit hook's memory. ~/.claude.json marks
// onboarding done, the key approved and the project trusted, as a person's first run leaves it.

const binary = claudeBinary();
const script = spawnSync('script', ['--version'], { encoding: 'utf8' });
const missing =
  process.platform !== 'linux'
    ? `the pseudo-terminal comes from util-linux's script (${process.platform} has another script)`
    : script.status !== 0
      ? 'util-linux script is not installed (apt-get install bsdutils)'
      : !existsSync(binary)
        ? `the Claude Code CLI is not installed at ${binary} (npm ci)`
        : undefined;
if (missing !== undefined && process.env.CI === 'true')
  throw new Error(`CI needs the interactive claude test: ${missing}`);
if (missing !== undefined) console.log(`claude interactive: skipped: ${missing}`);

const WAIT_MS = 90_000;
const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

describe.skipIf(missing !== undefined)('engram in the interactive Claude Code (a pseudo-terminal)', () => {
  const { server, world } = useClaudeWorld();

  /** Runs `claude '<prompt>'` in a pty in `cwd` until its first model request has arrived, then types /exit. */
  async function interactive(
    cwd: string,
    prefix: string,
    prompt: string,
  ): Promise<{ screen: string; code: number | null }> {
    writeFileSync(
      join(world.home, '.claude.json'),
      JSON.stringify({
        hasCompletedOnboarding: true,
        theme: 'dark',
        customApiKeyResponses: { approved: [world.env.ANTHROPIC_API_KEY], rejected: [] },
        projects: { [cwd]: { hasTrustDialogAccepted: true } },
      }),
    );
    const child = spawn('script', ['-q', '-e', '-c', `${shellQuote(binary)} ${shellQuote(prompt)}`, '/dev/null'], {
      cwd,
      env: {
        ...world.env,
        TERM: 'xterm-256color',
        COLUMNS: '120',
        LINES: '40',
        ANTHROPIC_BASE_URL: `${server.url}/${prefix}`,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const started = Date.now();
      while (Date.now() - started < WAIT_MS && requestsOf(server, prefix).length === 0 && child.exitCode === null)
        await new Promise((resolve) => setTimeout(resolve, 250));
      // The answer is rendered and the Stop hook has run once the prompt is back: then leave as a person would.
      const shown = Date.now();
      while (Date.now() - shown < 20_000 && !/done \d/.test(screen) && child.exitCode === null)
        await new Promise((resolve) => setTimeout(resolve, 250));
      child.stdin.write('/exit\r');
      const code = await Promise.race([
        exited,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000)),
      ]);
      return { screen, code };
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }

  it("the UserPromptSubmit hook of engram's plugin puts the project memory in the request of a claude started without -p", async () => {
    const project = world.project('alpha');
    const install = await world.engram(['install', 'claude-code'], { cwd: project });
    expect(install.code, install.stderr).toBe(0);
    const remembered = await world.engram(
      ['remember', 'The staging database is called heron-7.', '--type', 'project'],
      {
        cwd: project,
      },
    );
    expect(remembered.code, remembered.stderr).toBe(0);

    const run = await interactive(project, 'tty1', 'What is the staging database called?');
    const [first] = requestsOf(server, 'tty1');
    expect(first, `no request from the interactive claude; its screen:\n${run.screen.slice(-2000)}`).toBeDefined();
    // Interactive, not print mode: Claude Code says so in the request's metadata and in its user agent.
    expect(first!.headers['user-agent']).not.toContain('sdk-cli');
    expect(hookContext(first!, 'UserPromptSubmit')).toContain('heron-7');
    expect(run.screen).toContain('What is the staging database called?');
    expect(run.code).toBe(0);
  }, 180_000);
});
