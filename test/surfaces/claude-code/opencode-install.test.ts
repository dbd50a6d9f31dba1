import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { opencodePluginModule } from '../../../src/surfaces/claude-code/opencode-plugin-module.js';
import { hookServerStatus } from '../../../src/surfaces/claude-code/hook-server-status.js';
import { createWorkspace, type Workspace, expectInstalledOnce } from '../../support/cli-harness.js';
import { eventually, HOOK_LAUNCHER } from '../../support/claude-code-harness.js';
import { hookEnv } from '../../support/claude-code-hook-run.js';

// `engram install opencode` without the OpenCode CLI (test/agents/opencode-engram.test.ts runs the
// real one): the files it writes, what it refuses, what status says, what uninstall gives back; and
// the plugin module it writes, run in Node as OpenCode runs it (its hooks called with OpenCode's
// shapes) against engram's real hook runner and a real OpenCode database.

const FIXTURE = join(
  process.cwd(),
  'test',
  'fixtures',
  'agents',
  'opencode',
  'opencode-1.18.33-tool-call-continue.sql',
);
const FIXTURE_SESSION = 'ses_db971c803ffePvgAIm2n4eSMIM';

type Step = { event: { type: string; properties: Record<string, unknown> } } | { sessionID: string; prompt: string };

// The plugin's hooks called in order in one process, as OpenCode calls them; prints what each
// chat.message added to the message's parts and how long it took.
const DRIVER = `
const [plugin, directory, steps] = JSON.parse(process.argv[1]);
const { EngramMemory } = await import(plugin);
const hooks = await EngramMemory({ directory, worktree: directory });
const results = [];
for (const step of steps) {
  const started = Date.now();
  if (step.event) {
    await hooks.event({ event: step.event });
    results.push({ ms: Date.now() - started });
    continue;
  }
  const output = { message: { id: 'msg_' + results.length, sessionID: step.sessionID }, parts: [{ type: 'text', text: step.prompt }] };
  await hooks['chat.message']({ sessionID: step.sessionID }, output);
  results.push({ ms: Date.now() - started, added: output.parts.slice(1) });
}
console.log(JSON.stringify(results));
`;

describe('engram install / uninstall / status opencode', () => {
  let workspace: Workspace;
  let config: string;
  let settings: string;
  let plugin: string;
  beforeEach(() => {
    workspace = createWorkspace();
    config = join(workspace.home, '.config', 'opencode');
    mkdirSync(config, { recursive: true });
    settings = join(config, 'opencode.json');
    plugin = join(config, 'plugin', 'engram.js');
  });
  afterEach(() => workspace.cleanup());

  function drive(
    steps: Step[],
    options: { plugin?: string; env?: Record<string, string> } = {},
  ): Promise<Array<{ ms: number; added?: Array<{ type: string; text: string; synthetic: boolean; id: string }> }>> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          DRIVER,
          JSON.stringify([pathToFileURL(options.plugin ?? plugin).href, workspace.cwd, steps]),
        ],
        {
          cwd: workspace.cwd,
          env: hookEnv(workspace, { XDG_DATA_HOME: join(workspace.home, 'data'), ...options.env }),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => {
        if (code !== 0) reject(new Error(`driver exited ${code}: ${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!));
      });
    });
  }

  it("writes the plugin and mcp.engram beside the user's settings; status, install again, uninstall byte for byte", async () => {
    const own =
      '{\n\t"$schema": "https://opencode.ai/config.json",\n\t"mcp": {"mine": {"type": "remote", "url": "http://x"}}\n}';
    writeFileSync(settings, own);
    const installed = await workspace.json(['install', 'opencode']);
    expect(installed.changed.map((entry: { file: string }) => entry.file)).toEqual([plugin, settings]);
    const written = JSON.parse(readFileSync(settings, 'utf8'));
    expect(written.mcp.mine).toEqual({ type: 'remote', url: 'http://x' });
    expect(written.mcp.engram.type).toBe('local');
    expect(written.mcp.engram.command.slice(-1)).toEqual(['mcp']);
    const module = readFileSync(plugin, 'utf8');
    // Nothing for OpenCode's installer to fetch: only Node built-ins.
    const imports = [...module.matchAll(/^import .* from '([^']+)';$/gm)].map((match) => match[1]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.every((name) => name!.startsWith('node:'))).toBe(true);
    await expectInstalledOnce(workspace, 'opencode', 'loads');

    await workspace.json(['uninstall', 'opencode']);
    expect(readFileSync(settings, 'utf8')).toBe(own);
    expect(existsSync(plugin)).toBe(false);
    expect((await workspace.json(['status'])).opencode).toBeUndefined();
  });

  it('writes under $XDG_CONFIG_HOME, and removes the settings file it created', async () => {
    const xdg = join(workspace.root, 'xdg');
    const env = { XDG_CONFIG_HOME: xdg };
    await workspace.json(['install', 'opencode'], 0, { env });
    expect(existsSync(join(xdg, 'opencode', 'plugin', 'engram.js'))).toBe(true);
    expect(JSON.parse(readFileSync(join(xdg, 'opencode', 'opencode.json'), 'utf8')).mcp.engram).toBeDefined();
    expect(existsSync(plugin)).toBe(false);
    await workspace.json(['uninstall', 'opencode'], 0, { env });
    expect(existsSync(join(xdg, 'opencode', 'opencode.json'))).toBe(false);
    expect(existsSync(join(xdg, 'opencode', 'plugin', 'engram.js'))).toBe(false);
  });

  it('refuses an opencode.json that is not JSON or whose mcp is not an object, and writes nothing', async () => {
    for (const text of ['{"mcp": {', '{"mcp": ["engram"]}', '// a comment\n{}']) {
      writeFileSync(settings, text);
      const result = await workspace.run(['install', 'opencode']);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/not valid JSON|is not an object/);
      expect(readFileSync(settings, 'utf8')).toBe(text);
      expect(existsSync(plugin)).toBe(false);
    }
  });

  it("leaves the user's own mcp.engram and plugin/engram.js alone, says so, and status names what is not engram's", async () => {
    const own = '{"mcp":{"engram":{"type":"local","command":["engram","mcp"]}}}';
    writeFileSync(settings, own);
    mkdirSync(join(config, 'plugin'));
    writeFileSync(plugin, 'export const Mine = async () => ({});\n');
    const result = await workspace.run(['install', 'opencode']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('has "mcp.engram" already');
    expect(result.stdout).toContain('is there already and is not engram');
    expect((await workspace.run(['status'])).stdout).toMatch(
      /opencode\s+will NOT run engram: .*is not the plugin this engram writes/,
    );
    await workspace.json(['uninstall', 'opencode']);
    expect(readFileSync(settings, 'utf8')).toBe(own);
    expect(readFileSync(plugin, 'utf8')).toBe('export const Mine = async () => ({});\n');
  });

  it('a plugin edited since install is reported by status and left by uninstall', async () => {
    await workspace.json(['install', 'opencode']);
    writeFileSync(plugin, `${readFileSync(plugin, 'utf8')}// my change\n`);
    expect((await workspace.json(['status'])).opencode.problems.join(' ')).toContain(
      'is not the plugin this engram writes',
    );
    const removed = await workspace.run(['uninstall', 'opencode']);
    expect(removed.stdout).toContain('was changed since install: left as it is');
    expect(readFileSync(plugin, 'utf8')).toContain('// my change');
  });

  it('the plugin gives the index at the first prompt, recall at each, the index again after a compaction, and only to its own session', async () => {
    await workspace.json(['install', 'opencode']);
    await workspace.run(['remember', 'The staging database listens on port 6543.']);
    const prompt = (sessionID: string, text: string): Step => ({ sessionID, prompt: text });
    const results = await drive([
      { event: { type: 'session.created', properties: { sessionID: 'ses_a', info: { id: 'ses_a' } } } },
      prompt('ses_a', 'Which port does the staging database use?'),
      prompt('ses_a', 'And the staging database port again?'),
      { event: { type: 'session.compacted', properties: { sessionID: 'ses_a' } } },
      prompt('ses_a', 'Go on.'),
      prompt('ses_b', 'Go on.'),
    ]);
    const texts = (at: number) => results[at]!.added!.map((part) => part.text);
    expect(results[1]!.added!.every((part) => part.type === 'text' && part.synthetic === true)).toBe(true);
    expect(texts(1)).toHaveLength(2);
    expect(texts(1)[0]).toContain('# Memory index');
    expect(texts(1)[1]).toContain('<memory_context>');
    expect(texts(1)[1]).toContain('port 6543');
    // The index is given once a session; a memory surfaced before is not given again.
    expect(texts(2).join('\n')).not.toContain('# Memory index');
    expect(texts(2).join('\n')).not.toContain('port 6543');
    // After session.compacted, the next prompt starts with the index and what was surfaced before.
    expect(texts(4).join('\n')).toContain('# Memory index');
    expect(texts(4).join('\n')).toContain('port 6543');
    // Another session (no session.created seen) starts at its first prompt.
    expect(texts(5).join('\n')).toContain('# Memory index');
    const ids = results.flatMap((result) => result.added ?? []).map((part) => part.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^prt_[0-9a-f]{12}[0-9A-Za-z]{14}$/.test(id))).toBe(true);
  });

  it('with the hook server up, the plugin asks it on its socket from inside OpenCode: no process is started', async () => {
    await workspace.json(['install', 'opencode']);
    await workspace.run(['remember', 'The staging database listens on port 6543.']);
    const server = spawn(process.execPath, [HOOK_LAUNCHER, 'hook', 'serve'], {
      cwd: workspace.cwd,
      env: hookEnv(workspace),
      stdio: 'ignore',
    });
    try {
      const up = await eventually(() => hookServerStatus(workspace.home, 2_000), 80, 250);
      // No PATH: the plugin can start no process (no sh, no curl), so the answers are the socket's.
      const results = await drive(
        [
          { event: { type: 'session.created', properties: { sessionID: 'ses_s', info: { id: 'ses_s' } } } },
          { sessionID: 'ses_s', prompt: 'Which port does the staging database use?' },
        ],
        { env: { PATH: join(workspace.root, 'no-programs') } },
      );
      const texts = results[1]!.added!.map((part) => part.text);
      expect(texts[0]).toContain('# Memory index');
      expect(texts[1]).toContain('port 6543');
      // Session start and the prompt, both by the server; no runner ran (it would log why it was asked).
      expect((await hookServerStatus(workspace.home, 2_000))!.requests - up.requests).toBe(2);
      const log = join(workspace.home, 'logs', 'claude-code-hooks.log');
      expect(existsSync(log) ? readFileSync(log, 'utf8') : '').not.toContain('fallback');
    } finally {
      server.kill('SIGTERM');
    }
  });

  it('session.idle queues the session\'s rows from OpenCode\'s database: a "remember that …" is stored', async () => {
    await workspace.json(['install', 'opencode']);
    const database = join(workspace.home, 'data', 'opencode', 'opencode.db');
    mkdirSync(join(workspace.home, 'data', 'opencode'), { recursive: true });
    const db = openSqlite(database);
    db.exec(readFileSync(FIXTURE, 'utf8'));
    closeSqlite(db);
    await drive([{ event: { type: 'session.idle', properties: { sessionID: FIXTURE_SESSION } } }]);
    let listed = '';
    for (let waited = 0; waited < 60_000 && !listed.includes('tabs'); waited += 500) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      listed = (await workspace.run(['list', '--json'])).stdout;
    }
    expect(listed).toMatch(/prefers? tabs/i);
  });

  it('a runner that hangs or is missing: the prompt goes on without memory after the wait', async () => {
    const hang = join(workspace.root, 'hang.mjs');
    writeFileSync(hang, 'setTimeout(() => {}, 60_000);\n');
    const file = (name: string, launcher: string): string => {
      const path = join(workspace.root, name);
      writeFileSync(path, opencodePluginModule({ node: process.execPath, launcher, waitMs: 300 }));
      return path;
    };
    for (const path of [file('hanging.mjs', hang), file('missing.mjs', join(workspace.root, 'gone.mjs'))]) {
      const [created, asked] = await drive(
        [
          { event: { type: 'session.created', properties: { info: { id: 'ses_h' } } } },
          { sessionID: 'ses_h', prompt: 'Hello there.' },
        ],
        { plugin: path },
      );
      expect(created).toEqual({ ms: expect.any(Number) });
      expect(asked!.added).toEqual([]);
    }
  });
});
