import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ENGRAM_BINARY,
  makeGitRepository,
  runEngram,
  staticImportsOf,
  useSuiteWorkspace,
} from '../../support/cli-harness.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';

const workspace = useSuiteWorkspace();

function inFolder(folder: string) {
  mkdirSync(folder, { recursive: true });
  return {
    json: async (args: string[], expectedCode = 0): Promise<any> => {
      const result = await runEngram([...args, '--json'], { cwd: folder, home: workspace.home });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(expectedCode);
      return result.json();
    },
  };
}

describe('project identity', () => {
  it('gives two repositories with the same folder name but different remotes different scopes, never mixed', async () => {
    const first = join(workspace.root, 'team-a', 'app');
    const second = join(workspace.root, 'team-b', 'app');
    makeGitRepository(first, 'git@github.com:acme/app.git');
    makeGitRepository(second, 'https://github.com/other-org/app.git');
    const a = inFolder(first);
    const b = inFolder(second);
    const deep = inFolder(join(first, 'src', 'deep'));

    const fromA = (await a.json(['remember', 'The app deploys to Fly.io from the main branch.'])).memory;
    const fromB = (await b.json(['remember', 'The app deploys to Heroku from the release branch.'])).memory;
    expect(fromA.scope).toBe('project:github.com/acme/app');
    expect(fromB.scope).toBe('project:github.com/other-org/app');

    expect((await a.json(['list'])).memories.map((memory: any) => memory.id)).toEqual([fromA.id]);
    expect((await b.json(['list'])).memories.map((memory: any) => memory.id)).toEqual([fromB.id]);
    expect(
      (await a.json(['recall', 'where', 'does', 'the', 'app', 'deploy'])).memories.map((entry: any) => entry.memory.id),
    ).toEqual([fromA.id]);
    // "branch" matches both memories; each project still recalls only its own.
    expect(
      (await a.json(['recall', 'Heroku', 'release', 'branch'])).memories.map((entry: any) => entry.memory.id),
    ).toEqual([fromA.id]);
    expect(
      (await b.json(['recall', 'Fly.io', 'main', 'branch'])).memories.map((entry: any) => entry.memory.id),
    ).toEqual([fromB.id]);
    expect((await a.json(['show', fromB.id], 1)).error.code).toBe('NOT_FOUND');
    expect((await a.json(['forget', fromB.id], 1)).error.code).toBe('NOT_FOUND');
    expect((await a.json(['export'])).memories.map((memory: any) => memory.id)).toEqual([fromA.id]);
    // A subfolder is the same project; a clone elsewhere with the same remote in another spelling too.
    expect((await deep.json(['list'])).memories.map((memory: any) => memory.id)).toEqual([fromA.id]);
    const clone = join(workspace.root, 'elsewhere', 'app-clone');
    makeGitRepository(clone, 'https://github.com/acme/app');
    expect((await inFolder(clone).json(['list'])).memories.map((memory: any) => memory.id)).toEqual([fromA.id]);
  });

  it('takes an explicit id from .engram.json, and --project over it', async () => {
    const folder = join(workspace.root, 'explicit', 'app');
    makeGitRepository(folder, 'git@github.com:acme/app.git');
    writeFileSync(join(folder, '.engram.json'), JSON.stringify({ project: { id: 'acme' } }));
    const explicit = inFolder(folder);
    const memory = (await explicit.json(['remember', 'Acme uses trunk-based development.'])).memory;
    expect(memory.scope).toBe('project:acme');
    expect((await explicit.json(['list'])).memories.map((entry: any) => entry.id)).toEqual([memory.id]);
    expect((await explicit.json(['list', '--project', 'other'])).memories).toEqual([]);
    expect((await explicit.json(['remember', 'Other fact.', '--project', 'other'])).memory.scope).toBe('project:other');
  });
});

describe('engram config', () => {
  it('prints every setting with its effective value and source, secrets masked', async () => {
    const folder = join(workspace.root, 'configured');
    mkdirSync(folder);
    writeFileSync(join(workspace.home, 'config.json'), JSON.stringify({ recall: { topK: 9, staleDays: 45 } }));
    writeFileSync(join(folder, '.engram.json'), JSON.stringify({ recall: { minScore: 0.4 } }));
    const store = join(workspace.root, 'other.db');
    try {
      const result = await runEngram(['config', '--json', '--store', store], {
        cwd: folder,
        home: workspace.home,
        env: { ENGRAM_TOP_K: '11', ENGRAM_TOKEN: 'super-secret-token' },
      });
      expect(result.code).toBe(0);
      const { settings } = result.json();
      const byPath = new Map<string, any>(settings.map((setting: any) => [setting.path, setting]));
      expect(byPath.get('recall.topK')).toMatchObject({ value: 11, source: 'env', origin: 'ENGRAM_TOP_K' });
      expect(byPath.get('recall.staleDays')).toMatchObject({
        value: 45,
        source: 'user-config',
        origin: join(workspace.home, 'config.json'),
      });
      expect(byPath.get('recall.minScore')).toMatchObject({
        value: 0.4,
        source: 'project-config',
        origin: join(folder, '.engram.json'),
      });
      expect(byPath.get('store.url')).toMatchObject({ value: store, source: 'flag' });
      expect(byPath.get('injection.maxTokens')).toMatchObject({ value: 3000, source: 'default' });
      expect(byPath.get('server.token')).toMatchObject({ value: '********', source: 'env', masked: true });
      expect(settings.length).toBeGreaterThan(40);
      expect(result.stdout).not.toContain('super-secret-token');

      const text = await runEngram(['config'], {
        cwd: folder,
        home: workspace.home,
        env: { ENGRAM_TOKEN: 'super-secret-token' },
      });
      expect(text.stdout).toMatch(/^recall\.minScore\s+0\.4\s+project config /m);
      expect(text.stdout).not.toContain('super-secret-token');

      writeFileSync(join(folder, '.engram.json'), '{"recall": ');
      expect((await runEngram(['list'], { cwd: folder, home: workspace.home })).code).toBe(2);
    } finally {
      writeFileSync(join(workspace.home, 'config.json'), '{}');
    }
  });
});

describe('store errors', () => {
  it('exits 3 on a corrupt or foreign database file and leaves it untouched', async () => {
    const cases: Array<[string, Buffer]> = [
      ['not-a-database.db', Buffer.from('these are my notes, not a database\n'.repeat(200))],
      ['broken-sqlite.db', Buffer.concat([Buffer.from('SQLite format 3\u0000'), Buffer.alloc(8192, 0x5a)])],
    ];
    for (const [name, bytes] of cases) {
      const path = join(workspace.root, name);
      writeFileSync(path, bytes);
      for (const args of [['list'], ['remember', 'x']]) {
        const result = await workspace.run([...args, '--store', path, '--json']);
        expect(result.code, `${name} ${args[0]}`).toBe(3);
        expect(result.json().error.code, name).toBe('STORE_CORRUPT');
        expect(result.stderr).toMatch(/^engram: /);
        expect(result.stderr).not.toMatch(/\n\s+at /);
      }
      expect(readFileSync(path).equals(bytes), name).toBe(true);
    }
  });

  it('exits 3 on a database of a newer schema', async () => {
    const path = join(workspace.root, 'newer.db');
    const database = openSqlite(path);
    database.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    database.prepare('INSERT INTO schema_migrations VALUES (999, ?, 0)').run('from the future');
    closeSqlite(database);
    const result = await workspace.run(['list', '--json'], { env: { ENGRAM_STORE: path } });
    expect(result.code).toBe(3);
    expect(result.json().error.code).toBe('STORE_SCHEMA_NEWER');
    const debug = await workspace.run(['list'], { env: { ENGRAM_STORE: path, ENGRAM_DEBUG: '1' } });
    expect(debug.stderr).toMatch(/\n\s+at /);
  });
});

describe('help and version', () => {
  it('prints the version, general help, and help per command', async () => {
    const version = JSON.parse(readFileSync(resolve(dirname(ENGRAM_BINARY), '../../../package.json'), 'utf8')).version;
    expect((await workspace.run(['--version'])).stdout).toBe(`${version}\n`);
    const general = await workspace.run(['help']);
    expect(general.code).toBe(0);
    for (const command of [
      'remember',
      'recall',
      'list',
      'show',
      'edit',
      'forget',
      'restore',
      'undo',
      'stats',
      'export',
      'import',
      'config',
      'serve',
      'mcp',
    ]) {
      expect(general.stdout).toMatch(new RegExp(`^  ${command}\\s`, 'm'));
    }
    expect((await workspace.run([])).stdout).toBe(general.stdout);
    const recall = await workspace.run(['recall', '--help']);
    expect(recall.code).toBe(0);
    expect(recall.stdout).toMatch(/^Usage: engram recall/);
    for (const flag of ['--top-k', '--min-score', '--scope', '--type', '--explain', '--json', '--store', '--project'])
      expect(recall.stdout).toContain(flag);
    expect((await workspace.run(['help', 'recall'])).stdout).toBe(recall.stdout);
    expect((await workspace.run(['help', 'nonsense'])).code).toBe(2);
  });

  it('loads nothing but the store on the recall path: no zod, yaml or MCP SDK', () => {
    const commands = join(dirname(ENGRAM_BINARY), 'commands');
    const { files, packages } = staticImportsOf([
      ENGRAM_BINARY,
      ...['recall', 'remember', 'list', 'show'].map((name) => join(commands, `${name}-command.js`)),
    ]);
    expect(files.size).toBeGreaterThan(10);
    // The walk reached the store; the SQLite library is chosen at run time (sqlite-driver.ts:
    // node:sqlite or the addon) and sqlite-vec is loaded when the store opens: no package is imported.
    expect([...files].some((file) => file.endsWith('sqlite-vector-index.js'))).toBe(true);
    expect([...packages].sort()).toEqual([]);
  });
});

describe('engram serve and engram mcp', () => {
  it('serves HTTP on loopback until SIGTERM, and refuses a public address without a token', async () => {
    const child = spawn(process.execPath, [ENGRAM_BINARY, 'serve', '--port', '0', '--json'], {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH, ENGRAM_HOME: workspace.home, HOME: workspace.home },
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const firstLine = await new Promise<string>((resolveLine, reject) => {
      let buffer = '';
      child.stdout.on('data', (chunk) => {
        buffer += chunk;
        if (buffer.includes('\n')) resolveLine(buffer.slice(0, buffer.indexOf('\n')));
      });
      child.once('exit', () => reject(new Error(`serve exited early: ${stderr}`)));
    });
    const { url } = JSON.parse(firstLine);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);

    const refused = await workspace.run(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/token/);
  });

  it('speaks MCP over stdio and exits when stdin closes', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cli-test', version: '0' } },
    };
    const child = spawn(process.execPath, [ENGRAM_BINARY, 'mcp'], {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH, ENGRAM_HOME: workspace.home, HOME: workspace.home },
    });
    const reply = new Promise<any>((resolveReply) => {
      let buffer = '';
      child.stdout.on('data', (chunk) => {
        buffer += chunk;
        if (buffer.includes('\n')) resolveReply(JSON.parse(buffer.slice(0, buffer.indexOf('\n'))));
      });
    });
    child.stdin.write(`${JSON.stringify(initialize)}\n`);
    const response = await reply;
    expect(response).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: expect.any(Object) } });
    child.stdin.end();
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});
