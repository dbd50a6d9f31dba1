import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// stopOnSignals in a real process whose stop never finishes (something keeps it open): the grace, or a
// second signal, ends it with 128 + the signal's number and says why; a stop that finishes is not delayed.
const MODULE = fileURLToPath(new URL('../../../src/kernel/node/stop-signals.ts', import.meta.url));

function script(graceMs: number, finishes: boolean): string {
  return `
    const { stopOnSignals } = await import(${JSON.stringify(MODULE)});
    const keepOpen = setInterval(() => undefined, 1000);
    const stop = stopOnSignals({
      graceMs: ${graceMs},
      log: (message) => process.stderr.write(message + '\\n'),
      onStop: (signal) => {
        process.stdout.write('stopping ' + signal + ' ' + stop.signal.reason + '\\n');
        if (${finishes}) { clearInterval(keepOpen); stop.dispose(); }
      },
    });
    process.stdout.write('ready\\n');
  `;
}

async function run(
  graceMs: number,
  finishes: boolean,
  signals: NodeJS.Signals[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(graceMs, finishes)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let sent = 0;
  for await (const line of lines) {
    stdout += `${line}\n`;
    // One signal once it listens, the next once the first was seen.
    if (sent < signals.length) child.kill(signals[sent++]!);
  }
  return { code: await exited, stdout, stderr };
}

describe('stopOnSignals', () => {
  it('a stop that finishes: the process ends on its own, exit 0, and the signal is the reason', async () => {
    const { code, stdout, stderr } = await run(60_000, true, ['SIGTERM']);
    expect(code).toBe(0);
    expect(stdout).toContain('stopping SIGTERM SIGTERM');
    expect(stderr).toBe('');
  });

  it('a stop that never finishes: the grace ends it with 143 after SIGTERM, and says so', async () => {
    const { code, stderr } = await run(300, false, ['SIGTERM']);
    expect(code).toBe(143);
    expect(stderr).toMatch(/SIGTERM: the stop did not finish within 300 ms \(server.stopGraceMs\); exiting now/);
  });

  it('a second signal during the stop ends the process at once (130 for SIGINT)', async () => {
    const { code, stderr } = await run(600_000, false, ['SIGTERM', 'SIGINT']);
    expect(code).toBe(130);
    expect(stderr).toMatch(/SIGINT: a second stop signal arrived/);
  });
});
