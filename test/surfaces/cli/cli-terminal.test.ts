import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ENGRAM_BINARY, useSuiteWorkspace } from '../../support/cli-harness.js';

// util-linux `script` runs a command on a pseudo-terminal: the only way to see what a user at a
// terminal sees (the confirmation prompt, colors) from a test.
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

const workspace = useSuiteWorkspace();

const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** Runs engram on a terminal; when the output shows `waitFor`, types `answer`. */
function onTerminal(
  args: string[],
  options: { env?: Record<string, string>; waitFor?: string; answer?: string } = {},
): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, ENGRAM_BINARY, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd: workspace.cwd,
    env: { PATH: process.env.PATH, HOME: workspace.home, ENGRAM_HOME: workspace.home, TERM: 'xterm', ...options.env },
  });
  let output = '';
  let answered = false;
  child.stdout.on('data', (chunk) => {
    output += chunk;
    if (options.waitFor && !answered && output.includes(options.waitFor)) {
      answered = true;
      child.stdin.write(options.answer ?? '\n');
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

describe.skipIf(!hasScript)('engram on a terminal (skipped: util-linux "script" is not installed)', () => {
  it('asks before forget --hard: "n" keeps the memory, "y" deletes it', async () => {
    const { memory } = await workspace.json(['remember', 'The build cache lives in /var/cache/ci.']);
    const kept = await onTerminal(['forget', memory.id, '--hard'], { waitFor: '[y/N]', answer: 'n\n' });
    expect(kept.code).toBe(0);
    expect(kept.output).toContain('Nothing deleted.');
    expect((await workspace.run(['show', memory.id])).code).toBe(0);

    const deleted = await onTerminal(['forget', memory.id, '--hard'], { waitFor: '[y/N]', answer: 'y\n' });
    expect(deleted.code).toBe(0);
    expect(deleted.output).toMatch(/Deleted mem_/);
    expect((await workspace.run(['show', memory.id])).code).toBe(1);
  });

  it('uses ANSI styling on a terminal, and none with NO_COLOR', async () => {
    await workspace.json(['remember', 'Styling check.']);
    expect((await onTerminal(['list'])).output).toContain('\u001b[1m');
    expect((await onTerminal(['list'], { env: { NO_COLOR: '1' } })).output).not.toContain('\u001b[');
  });
});
