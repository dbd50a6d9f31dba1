#!/usr/bin/env node
// A smoke run of an installed engram CLI: remember, recall, `serve` then GET /health, and MCP over
// stdio (initialize, tools/list). Used by scripts/ci-install-paths.sh on each install path.
//
//   node scripts/smoke-cli.mjs <command…>     e.g.  node scripts/smoke-cli.mjs node dist/surfaces/cli/main.js
//                                                   node scripts/smoke-cli.mjs npx --no-install engram
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [command, ...prefix] = process.argv.slice(2);
if (!command) {
  console.error('Usage: node scripts/smoke-cli.mjs <command…> (the engram CLI to run)');
  process.exit(2);
}
const home = mkdtempSync(join(tmpdir(), 'engram-smoke-'));
const env = {
  PATH: process.env.PATH,
  HOME: home,
  ENGRAM_HOME: home,
  // Nothing here reaches a model or an embedding service.
  ANTHROPIC_API_KEY: '',
  OPENAI_API_KEY: '',
};
const cwd = home;
const fail = (message) => {
  console.error(`smoke: FAIL ${message}`);
  process.exitCode = 1;
};

function run(args) {
  const result = spawnSync(command, [...prefix, ...args], { cwd, env, encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0) throw new Error(`engram ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result;
}

/** Starts `engram serve` on a free loopback port, waits for its address, GETs /health, stops it. */
async function serveHealth() {
  const child = spawn(command, [...prefix, 'serve', '--port', '0', '--json'], { cwd, env });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  try {
    const line = await new Promise((resolve, reject) => {
      let buffer = '';
      const timer = setTimeout(() => reject(new Error(`serve printed no address in 30 s: ${stderr}`)), 30_000);
      child.stdout.on('data', (chunk) => {
        buffer += chunk;
        if (buffer.includes('\n')) {
          clearTimeout(timer);
          resolve(buffer.slice(0, buffer.indexOf('\n')));
        }
      });
      child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
    });
    const { url } = JSON.parse(line);
    const response = await fetch(new URL('/health', url));
    const body = await response.json();
    if (response.status !== 200) throw new Error(`/health answered ${response.status} ${JSON.stringify(body)}`);
    return body;
  } finally {
    child.kill('SIGTERM');
  }
}

/** Runs `engram mcp`, sends initialize and tools/list as newline-delimited JSON-RPC, returns the tool names. */
async function mcpTools() {
  const child = spawn(command, [...prefix, 'mcp'], { cwd, env });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const answers = new Map();
  let buffer = '';
  const waiting = new Map();
  child.stdout.on('data', (chunk) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const message = JSON.parse(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      answers.set(message.id, message);
      waiting.get(message.id)?.(message);
    }
  });
  const request = (id, method, params) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no MCP answer to ${method} in 30 s: ${stderr}`)), 30_000);
      waiting.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  try {
    const initialized = await request(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'engram-smoke', version: '0' },
    });
    if (!initialized.result?.serverInfo) throw new Error(`initialize: ${JSON.stringify(initialized)}`);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const listed = await request(2, 'tools/list', {});
    const names = (listed.result?.tools ?? []).map((tool) => tool.name);
    if (names.length === 0) throw new Error(`tools/list: ${JSON.stringify(listed)}`);
    return names;
  } finally {
    child.stdin.end();
    child.kill('SIGTERM');
  }
}

try {
  run(['remember', '--scope', 'global', '--json', 'The smoke test deploys with make ship.']);
  const recalled = JSON.parse(run(['recall', '--scope', 'global', '--json', 'how', 'to', 'deploy']).stdout);
  const text = JSON.stringify(recalled);
  if (!text.includes('make ship')) fail(`recall did not find the memory: ${text.slice(0, 500)}`);
  else console.log('smoke: remember + recall ok');
  const health = await serveHealth();
  console.log(`smoke: serve /health ok ${JSON.stringify(health)}`);
  const tools = await mcpTools();
  console.log(`smoke: mcp stdio ok (${tools.length} tools: ${tools.join(', ')})`);
} catch (error) {
  fail(error.message);
} finally {
  rmSync(home, { recursive: true, force: true });
}
