/**
 * Re-measures the hardening of issue 17 as an attacker would, beside check-secrets.ts: store file
 * modes under loose umasks (every file 0600, every folder 0700, an old loose ENGRAM_HOME tightened),
 * copies of purged memories left in the raw bytes of engram.db, -wal and -shm, and whether
 * `engram mcp` answers lines over 10 MB and keeps serving. Prints the figures; exits 1 on any failure.
 * Run: npx tsx scripts/check-hardening.ts
 */
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { openEngram } from '../src/node/open-engram.js';

const repository = fileURLToPath(new URL('..', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'engram-check-hardening-'));
const failures: string[] = [];

/** Every path under a folder (itself included) whose mode is not 0700 (folders) or 0600 (files). */
function looseModes(directory: string): string[] {
  const loose: string[] = [];
  const check = (path: string): void => {
    const stats = statSync(path);
    if ((stats.mode & 0o777) !== (stats.isDirectory() ? 0o700 : 0o600))
      loose.push(`${path.slice(directory.length) || '.'} ${(stats.mode & 0o777).toString(8)}`);
  };
  check(directory);
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true }))
    check(join(entry.parentPath, entry.name));
  return loose;
}

// 1. File modes: a child under each umask opens a store, writes, and lists ENGRAM_HOME while the
// connection (and so -wal and -shm) is open.
const CHILD = `
import { join } from 'node:path';
import { readdirSync, statSync } from 'node:fs';
const { openEngram } = await import(${JSON.stringify(join(repository, 'src/node/open-engram.ts'))});
const opened = await openEngram({ cwd: process.env.ENGRAM_HOME });
await opened.engram.save({ content: 'The user prefers tabs.' });
const home = process.env.ENGRAM_HOME;
const found = [home, ...readdirSync(home, { recursive: true }).map((name) => join(home, name))];
console.log(JSON.stringify(found.map((path) => [path, statSync(path).mode & 0o777, statSync(path).isDirectory()])));
await opened.close();
`;
let filesChecked = 0;
let filesLoose = 0;
for (const umask of ['000', '002', '022']) {
  const home = join(root, `home-${umask}`);
  const output = execFileSync(
    '/bin/sh',
    ['-c', `umask ${umask}; exec "$0" --import tsx --input-type=module -e "$1"`, process.execPath, CHILD],
    {
      cwd: repository,
      env: { ...process.env, ENGRAM_HOME: home, ENGRAM_PROJECT: 'check-hardening' },
      encoding: 'utf8',
    },
  );
  const entries = JSON.parse(output.trim().split('\n').at(-1)!) as Array<[string, number, boolean]>;
  for (const [path, mode, directory] of entries) {
    filesChecked += 1;
    if (mode !== (directory ? 0o700 : 0o600)) {
      filesLoose += 1;
      failures.push(`umask ${umask}: ${path} is ${mode.toString(8)}`);
    }
  }
  if (!entries.some(([path]) => path.endsWith('engram.db-wal')))
    failures.push(`umask ${umask}: no -wal was open to check`);
}
// An ENGRAM_HOME left loose by an older version is tightened when engram opens it.
const oldHome = join(root, 'old-home');
mkdirSync(oldHome, { mode: 0o755 });
chmodSync(oldHome, 0o755);
writeFileSync(join(oldHome, 'config.json'), '{}\n', { mode: 0o644 });
chmodSync(join(oldHome, 'config.json'), 0o644);
const oldOpened = await openEngram({ env: { ...process.env, ENGRAM_HOME: oldHome }, cwd: oldHome });
await oldOpened.engram.save({ content: 'The user prefers spaces.' });
const oldLoose = looseModes(oldHome);
await oldOpened.close();
filesChecked += readdirSync(oldHome).length + 1;
filesLoose += oldLoose.length;
for (const path of oldLoose) failures.push(`old ENGRAM_HOME not tightened: ${path}`);
console.log(
  `store files not 0600 (folders not 0700): ${filesLoose} of ${filesChecked}, umask 000, 002, 022 and an old loose ENGRAM_HOME`,
);

// 2. Purge: private facts (not secrets the detector would redact), edited, some deleted first,
// quoted by a job; after purge, the raw bytes of every file must hold none of them.
const FACTS = Array.from(
  { length: 20 },
  (_, index) => `zqxprivate${index}fact ${['diagnosis', 'landlord', 'salary', 'court case'][index % 4]}`,
);
const purgeHome = join(root, 'purge');
mkdirSync(purgeHome);
const store = new SqliteMemoryStore({ path: join(purgeHome, 'engram.db') });
await store.open();
const engram = new Engram({ store, defaultScope: 'project:check-hardening', onWarning: () => {} });
const ids: string[] = [];
for (const [index, fact] of FACTS.entries()) {
  await engram.save({ content: `Ordinary note ${index} about the build pipeline.` });
  const saved = await engram.save({ content: `Private: ${fact}.` });
  ids.push(saved.memory.id);
  await engram.update(saved.memory.id, { content: `Private: ${fact}, noted again.` });
  await store.jobs.enqueue({ queue: 'extraction', key: `turn-${index}`, payload: { text: `Private: ${fact}.` } });
  if (index % 2 === 0) await engram.forget(saved.memory.id, { hard: true });
}
const copies = (): number => {
  const files = readdirSync(purgeHome).map((name) => readFileSync(join(purgeHome, name)));
  return FACTS.filter((fact) => files.some((bytes) => bytes.includes(fact.split(' ')[0]!))).length;
};
const beforePurge = copies();
let notCleared = 0;
for (const id of ids) if (!(await engram.purge(id)).copiesCleared) notCleared += 1;
const afterPurge = copies();
await store.close();
const afterClose = copies();
if (afterPurge > 0 || afterClose > 0)
  failures.push(`purged facts left in the files: ${afterPurge} open, ${afterClose} closed`);
if (notCleared > 0) failures.push(`${notCleared} purges could not clear freed pages`);
console.log(
  `purged memories with a copy left in engram.db/-wal/-shm: ${Math.max(afterPurge, afterClose)} of ${FACTS.length} (before purge, after edit and forget --hard: ${beforePurge} of ${FACTS.length})`,
);

// 3. engram mcp: lines over 10 MB (with an id and without) are answered and the next line is served.
const mcpHome = join(root, 'mcp');
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--input-type=module',
    '-e',
    `const m = await import(${JSON.stringify(join(repository, 'src/surfaces/mcp/stdio-mcp-server.ts'))}); await m.runStdioMcpServer();`,
  ],
  {
    cwd: repository,
    env: { ...process.env, ENGRAM_HOME: mcpHome, ENGRAM_PROJECT: 'check-hardening' },
    stdio: ['pipe', 'pipe', 'ignore'],
  },
);
let stdout = '';
child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
const send = (line: string | Buffer): void => void child.stdin.write(line);
send(
  `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'check', version: '1' } } })}\n`,
);
send(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
send(
  `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory_save","arguments":{"content":"${'x'.repeat(11 * 1024 * 1024)}"}},"id":2}\n`,
);
send(Buffer.alloc(12 * 1024 * 1024, 'y'));
send('\n');
send(
  `${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'memory_save', arguments: 'not an object' } })}\n`,
);
send(`${JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' })}\n`);
child.stdin.end();
const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
const answers = stdout
  .trim()
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number }; result?: unknown });
const oversizedAnswered = answers.filter(
  (answer) => answer.error?.code === -32600 && (answer.id === 2 || answer.id === null),
).length;
const invalidParams = answers.find((answer) => answer.id === 3)?.error?.code;
const servedAfter = answers.some((answer) => answer.id === 4 && answer.result !== undefined);
if (oversizedAnswered !== 2) failures.push(`oversized MCP lines answered: ${oversizedAnswered} of 2`);
if (invalidParams !== -32602) failures.push(`invalid params answered with ${invalidParams}, not -32602`);
if (!servedAfter) failures.push('engram mcp served nothing after the oversized lines');
console.log(
  `engram mcp lines over 10 MB answered: ${oversizedAnswered} of 2; served after: ${servedAfter ? 'yes' : 'no'}; invalid params: ${invalidParams}; exit ${exitCode}`,
);

rmSync(root, { recursive: true, force: true });
for (const failure of failures) console.log(`  FAIL: ${failure}`);
process.exitCode = failures.length > 0 ? 1 : 0;
