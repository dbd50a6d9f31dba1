/**
 * Writes src/surfaces/mcp/memory-mcp-snapshot-data.ts: what the memory MCP server answers before any
 * tool runs (initialize, the tool, resource and template lists, the methods it handles), read off
 * the real server, so `engram mcp` answers them before the SDK and the store have loaded. Run it
 * after changing a tool, a resource or the MCP SDK; test/surfaces/mcp/mcp-fast-start.test.ts fails
 * until the snapshot matches the server again.
 * Run: npx tsx scripts/write-mcp-snapshot.ts
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { recordMemoryMcpAnswers } from '../src/surfaces/mcp/memory-mcp-snapshot-maker.js';
import { SNAPSHOT_SCOPE } from '../src/surfaces/mcp/memory-mcp-snapshot.js';

const target = fileURLToPath(new URL('../src/surfaces/mcp/memory-mcp-snapshot-data.ts', import.meta.url));
const snapshot = await recordMemoryMcpAnswers([SNAPSHOT_SCOPE, 'global'], '0.0.0');
writeFileSync(
  target,
  `// Written by scripts/write-mcp-snapshot.ts from the real server: do not edit by hand.\n` +
    `import type { MemoryMcpSnapshot } from './memory-mcp-snapshot-types.js';\n\n` +
    `export const MEMORY_MCP_SNAPSHOT: MemoryMcpSnapshot = ${JSON.stringify(snapshot, null, 2)};\n`,
);
execFileSync(
  process.execPath,
  [fileURLToPath(new URL('../node_modules/prettier/bin/prettier.cjs', import.meta.url)), '--write', target],
  {
    stdio: 'ignore',
  },
);
console.log(`wrote ${target}`);
