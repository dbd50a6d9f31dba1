import { spawn } from 'node:child_process';
import { ENGRAM_BINARY } from './cli-harness.js';

/** What a raw `engram mcp` session printed: one parsed answer a stdout line, its exit code, its stderr. */
export interface RawMcpSession {
  answers: any[];
  code: number | null;
  stderr: string;
}

/** Writes raw lines to a fresh `engram mcp` (with exactly `env`), ends stdin, and collects the answers until it exits. */
export async function rawMcpSession(
  env: NodeJS.ProcessEnv,
  lines: ReadonlyArray<string | Buffer>,
): Promise<RawMcpSession> {
  const child = spawn(process.execPath, [ENGRAM_BINARY, 'mcp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  for (const line of lines) child.stdin.write(line);
  child.stdin.end();
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const answers = stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  return { answers, code, stderr };
}
