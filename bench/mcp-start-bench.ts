import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { median, round } from './statistics.js';

/**
 * Part `mcp-start`: how long a client that spawns `engram mcp` waits for its tool list (spawn,
 * initialize, notifications/initialized, tools/list answered), as a ratio to `node -e ''` measured
 * in the same run, alternating (target ≤ 2×). A Claude Code session waits for this at every start.
 */
const RUNS = Number(process.env.ENGRAM_BENCH_MCP_RUNS ?? 15);
const TARGET_RATIO = 2;

export interface McpStartResult {
  runs: number;
  nodeMedianMs: number;
  toolsListMedianMs: number;
  ratio: number;
  targetRatio: number;
}

export async function benchMcpStartPart(): Promise<McpStartResult> {
  const root = resolve(import.meta.dirname, '..');
  const binary = join(root, 'dist/surfaces/cli/main.js');
  const home = mkdtempSync(join(tmpdir(), 'engram-bench-mcp-'));
  try {
    const env = {
      PATH: process.env.PATH,
      ENGRAM_HOME: home,
      ENGRAM_PROJECT: 'bench-mcp',
      ENGRAM_MODEL_PROVIDER: 'none',
    };
    const nodeTimes: number[] = [];
    const listTimes: number[] = [];
    // One run first, untimed: the store is created and the file cache warm, as on a user's second session.
    await toolsList(binary, env);
    for (let run = 0; run < RUNS; run += 1) {
      nodeTimes.push(await nodeStart());
      listTimes.push(await toolsList(binary, env));
    }
    const result = {
      runs: RUNS,
      nodeMedianMs: round(median(nodeTimes)),
      toolsListMedianMs: round(median(listTimes)),
      ratio: round(median(listTimes) / median(nodeTimes), 2),
      targetRatio: TARGET_RATIO,
    };
    console.log(`\nmcp-start: engram mcp answers tools/list (target: ≤ ${TARGET_RATIO}× node -e '')`);
    console.table([
      { command: "node -e ''", 'median ms': result.nodeMedianMs },
      { command: 'engram mcp → tools/list', 'median ms': result.toolsListMedianMs, ratio: result.ratio },
    ]);
    return result;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function nodeStart(): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((done) => child.once('exit', done));
  return performance.now() - started;
}

/** Spawn to the tools/list answer; then stdin ends and the process is waited for (untimed). */
async function toolsList(binary: string, env: Record<string, string | undefined>): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [binary, 'mcp'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
  let output = '';
  const answered = new Promise<number>((done, fail) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('"id":2')) done(performance.now() - started);
    });
    child.once('exit', () => fail(new Error(`engram mcp exited before answering tools/list: ${output}`)));
  });
  const line = (message: object): string => `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`;
  child.stdin.write(
    line({
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  );
  child.stdin.write(line({ method: 'notifications/initialized' }));
  child.stdin.write(line({ id: 2, method: 'tools/list' }));
  const time = await answered;
  child.stdin.end();
  await new Promise((done) => child.once('exit', done));
  return time;
}
