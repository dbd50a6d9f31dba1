import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/kernel/settings.js';
import { Engram } from '../../../src/engram.js';
import { MemoryTool } from '../../../src/memory-tool/memory-tool.js';
import { openSandbox, type Sandbox, type SandboxToolResult } from '../../../src/sandbox/node/sandbox.js';
import { planCommand } from '../../../src/sandbox/sandbox-commands.js';
import { isSecretPath } from '../../../src/privacy/secret-files.js';
import { resolveSandboxRoot } from '../../../src/sandbox/node/sandbox-paths.js';
import { sandboxEnvironment } from '../../../src/sandbox/node/sandbox-process.js';
import { openTemporaryStore, type TemporaryStore } from '../../support/temporary-store.js';

let base: string;
let root: string;
let outside: string;
let sandbox: Sandbox;
let temporary: TemporaryStore;

function git(...args: string[]): void {
  execFileSync('git', args, {
    cwd: root,
    stdio: 'ignore',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: base },
  });
}

function settingsWith(sandboxSettings: Partial<Settings['sandbox']>): Settings {
  return { ...DEFAULT_SETTINGS, sandbox: { ...DEFAULT_SETTINGS.sandbox, ...sandboxSettings } };
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'engram-sandbox-'));
  root = join(base, 'project');
  outside = join(base, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE-SECRET-CONTENT\n');
  mkdirSync(join(root, 'src'), { recursive: true });
  mkdirSync(join(root, 'docs'));
  mkdirSync(join(root, 'keys'));
  mkdirSync(join(root, 'bin'));
  writeFileSync(join(root, 'README.md'), '# Acme app\nDeploys run on Fridays.\nTODO: write more docs.\n');
  writeFileSync(
    join(root, 'src', 'index.ts'),
    "export const answer = 42;\n// TODO: remove the legacy path\nexport function legacy() { return 'aaaa'; }\n",
  );
  writeFileSync(join(root, 'src', 'util.ts'), 'export const pad = (text: string) => text.padStart(6);\n');
  writeFileSync(join(root, 'docs', 'notes.md'), 'Integration tests use the real database.\n');
  writeFileSync(join(root, '.env'), 'API_TOKEN=ENV-SECRET-CONTENT\n');
  writeFileSync(join(root, 'keys', 'server.pem'), '-----BEGIN PRIVATE KEY-----\nPEM-SECRET-CONTENT\n');
  writeFileSync(join(root, 'binary.dat'), Buffer.from([0x00, 0x01, 0x02, 0x41]));
  writeFileSync(join(root, 'slow.txt'), `${'a'.repeat(32)}b\n`.repeat(20));
  // A project file named like an allowed command: PATH lookups must never pick it.
  writeFileSync(join(root, 'bin', 'ls'), `#!/bin/sh\necho hijacked > "${join(root, 'pwned')}"\n`);
  chmodSync(join(root, 'bin', 'ls'), 0o755);
  symlinkSync(outside, join(root, 'link-out'));
  symlinkSync(join(outside, 'secret.txt'), join(root, 'link-file-out'));
  symlinkSync(join(root, 'src'), join(root, 'link-in'));
  execFileSync('mkfifo', [join(root, 'pipe')]);
  git('init', '-q', '-b', 'main');
  git('-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'add', 'README.md', 'src', 'docs');
  git('-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'commit', '-q', '-m', 'First commit');
  writeFileSync(
    join(root, 'README.md'),
    '# Acme app\nDeploys run on Fridays.\nTODO: write more docs.\nReleases are tagged.\n',
  );
  git('-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'commit', '-q', '-am', 'Second commit');
  writeFileSync(
    join(root, 'README.md'),
    '# Acme app\nDeploys run on Fridays and Tuesdays.\nTODO: write more docs.\nReleases are tagged.\n',
  );

  temporary = await openTemporaryStore(Date.parse('2026-03-01T09:00:00.000Z'));
  const engram = new Engram({ store: temporary.store, defaultScope: 'project:acme' });
  sandbox = await openSandbox({
    root,
    memoryTool: new MemoryTool({ engram, actor: 'extraction-helper' }),
    env: { PATH: `${join(root, 'bin')}:bin:${process.env.PATH ?? ''}`, HOME: base },
  });
});

afterAll(async () => {
  await temporary?.close();
  rmSync(base, { recursive: true, force: true });
});

/** Every entry under the temp folder (project and outside), with type, size, mtime and content hash. */
function diskState(): string {
  const entries: string[] = [];
  const walk = (folder: string): void => {
    for (const name of readdirSync(folder).sort()) {
      const path = join(folder, name);
      const info = lstatSync(path);
      if (info.isDirectory()) {
        entries.push(`d ${path} ${info.mtimeMs}`);
        walk(path);
      } else if (info.isSymbolicLink()) entries.push(`l ${path} -> ${readlinkSync(path)}`);
      else if (info.isFile())
        entries.push(
          `f ${path} ${info.size} ${info.mtimeMs} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`,
        );
      else entries.push(`s ${path} ${info.mtimeMs}`);
    }
  };
  walk(base);
  return entries.join('\n');
}

async function run(name: string, input: unknown, using: Sandbox = sandbox): Promise<SandboxToolResult> {
  return using.runSandboxTool(name, input);
}

async function allowed(name: string, input: unknown, using: Sandbox = sandbox): Promise<string> {
  const result = await run(name, input, using);
  expect(result.isError, result.content).toBe(false);
  return result.content;
}

async function denied(name: string, input: unknown): Promise<string> {
  const result = await run(name, input);
  expect(result, `${name} ${JSON.stringify(input)}`).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
  expect(result.content).toMatch(/^SANDBOX_DENIED: \S/);
  expect(result.content).not.toMatch(/OUTSIDE-SECRET|ENV-SECRET|PEM-SECRET/);
  return result.content;
}

const ESCAPING_PATHS = [
  '../outside/secret.txt',
  'src/../../outside/secret.txt',
  '/etc/passwd',
  '/',
  '..',
  '%2e%2e%2foutside%2fsecret.txt',
  '%2E%2E/outside/secret.txt',
  '%252e%252e%252foutside%252fsecret.txt',
  '..%2foutside/secret.txt',
  '..\\outside\\secret.txt',
  'link-out/secret.txt',
  'link-file-out',
  'src/\u0000x',
  `${'a/'.repeat(600)}x`,
];

describe('escape attempts fail with SANDBOX_DENIED and change nothing on disk', () => {
  it('file tools refuse paths leaving the project: ../, absolute, symlinks out, encoded traversal, NUL, absurd lengths', async () => {
    const before = diskState();
    for (const path of [...ESCAPING_PATHS, join(outside, 'secret.txt'), join(root, 'link-out', 'secret.txt')]) {
      await denied('read_file', { path });
      await denied('list_directory', { path });
      await denied('search_files', { pattern: 'SECRET', path });
    }
    await denied('list_directory', { path: 'link-out' });
    expect(diskState()).toBe(before);
  });

  it('file tools refuse files that usually hold secrets, and a FIFO', async () => {
    expect(await denied('read_file', { path: '.env' })).toMatch(/usually holds secrets/);
    await denied('read_file', { path: 'keys/server.pem' });
    await denied('read_file', { path: '.git/config' });
    expect(await denied('read_file', { path: 'pipe' })).toMatch(/not a regular file/);
    const search = await allowed('search_files', { pattern: 'SECRET-CONTENT' });
    expect(search).toMatch(/^No matches/);
  });

  it('the shell refuses metacharacters, redirections, $(…), backticks and newlines before anything runs', async () => {
    const before = diskState();
    const attempts = [
      'cat README.md; rm README.md',
      'cat README.md | tee copy.md',
      'cat README.md > copy.md',
      'cat README.md >> copy.md',
      'cat < README.md',
      'ls && touch pwned',
      'ls || touch pwned',
      'ls & touch pwned',
      'echo $(touch pwned)',
      'ls $(touch pwned)',
      'ls `touch pwned`',
      'ls $HOME',
      'ls ${PWD}',
      'ls (src)',
      'ls\ntouch pwned',
      'ls\rtouch pwned',
      "cat 'README.md; touch pwned'",
      'cat "unclosed',
      '',
      '   ',
      `ls ${'x'.repeat(5_000)}`,
    ];
    for (const command of attempts) await denied('run_command', { command });
    for (const input of [{}, { command: 42 }, null, 'ls']) await denied('run_command', input);
    expect(diskState()).toBe(before);
  });

  it('the shell refuses commands off the read-only list and options that write, delete, run programs or follow links', async () => {
    const before = diskState();
    const attempts = [
      'rm README.md',
      'touch pwned',
      'tee pwned',
      'cp README.md copy.md',
      'mv README.md moved.md',
      'sed -i s/Acme/Evil/ README.md',
      'chmod 777 README.md',
      'node -e 1',
      'sh -c ls',
      'bash',
      'python3 -c 1',
      'env ls',
      'FOO=1 ls',
      './bin/ls',
      'bin/ls',
      '/bin/ls',
      'find . -delete',
      'find . -name README.md -delete',
      'find . -exec rm {} +',
      'find . -execdir cat {} +',
      'find . -ok rm {} +',
      'find . -fprint found.txt',
      'find . -fprintf found.txt %p',
      'find . -fls found.txt',
      'find -L . -name secret.txt',
      'find . -follow -name secret.txt',
      'find . -newer ../outside/secret.txt',
      'find ../outside',
      'find -- ../outside',
      'find -H -- /etc -maxdepth 0',
      'find / -name passwd',
      'find link-out',
      'grep -R SECRET .',
      'grep -rf /etc/passwd .',
      'grep -f ../outside/secret.txt README.md',
      'grep --exclude-from=../outside/secret.txt x .',
      'grep SECRET ../outside/secret.txt',
      'grep SECRET link-file-out',
      'grep API_TOKEN .env',
      'cat /etc/passwd',
      `cat ${join(outside, 'secret.txt')}`,
      'cat ../outside/secret.txt',
      'cat %2e%2e%2foutside%2fsecret.txt',
      'cat ..%2foutside%2fsecret.txt',
      'cat link-out/secret.txt',
      'cat link-file-out',
      'cat .env',
      'cat keys/server.pem',
      'head -n 5 /etc/passwd',
      'tail -f README.md',
      'tail --follow README.md',
      'wc --files0-from=list.txt',
      'ls -L link-out',
      'ls --dereference link-out',
      'ls ..',
      'ls link-out',
      'rg --pre cat SECRET',
      'rg -z SECRET',
      'rg --follow SECRET',
      'git',
      'git checkout README.md',
      'git restore README.md',
      'git commit -am x',
      'git reset --hard',
      'git clean -fdx',
      'git stash',
      'git push',
      'git fetch',
      'git config user.name x',
      'git -C .. status',
      '-c core.pager=x git log',
      'git branch new-branch',
      'git branch -D main',
      'git branch -m main renamed',
      'git branch --set-upstream-to=origin/main',
      'git branch -- evil',
      'git branch -v -- evil',
      'git diff --output=diff.txt',
      'git log --output=log.txt',
      'git diff --no-index ../outside/secret.txt README.md',
      'git diff --ext-diff',
      'git show --textconv HEAD',
      'git log --show-signature',
      'git log -O/etc/passwd',
      'git log -- ../outside',
      'git show HEAD:.env',
      'git show HEAD:../outside/secret.txt',
      'git log -L1,2:.env',
      // getopt and git take unambiguous prefixes of long options.
      'tail --fol README.md',
      'ls --deref link-out',
      'grep --derefer SECRET .',
      'grep --fi=.env x README.md',
      'wc --files0=list.txt',
      'git diff --out=diff.txt',
      'git diff --no-ind ../outside/secret.txt README.md',
    ];
    for (const command of attempts) await denied('run_command', { command });
    expect(diskState()).toBe(before);
  });

  it('writes exist only as memories: write and edit tools do not exist, and the memory tool writes to the store, not the disk', async () => {
    const before = diskState();
    for (const name of [
      'write_file',
      'edit_file',
      'create_file',
      'str_replace_based_edit_tool',
      'bash',
      'delete_file',
    ]) {
      expect(await denied(name, { path: 'README.md', content: 'overwritten' })).toMatch(/No tool writes files/);
    }
    expect(sandbox.tools.map((tool) => tool.name)).toEqual([
      'read_file',
      'list_directory',
      'search_files',
      'run_command',
      'memory',
    ]);
    const memory = await run('memory', {
      command: 'create',
      path: '/memories/deploy-days.md',
      file_text: 'Deploys run on Fridays and Tuesdays.',
    });
    expect(memory).toEqual({ content: 'File created successfully at: /memories/deploy-days.md', isError: false });
    const escape = await run('memory', {
      command: 'create',
      path: '/memories/../../project/README.md',
      file_text: 'overwritten',
    });
    expect(escape).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
    expect(diskState()).toBe(before);
    const [stored] = await temporary.store.list({ scopes: ['project:acme'] });
    expect(stored).toMatchObject({ name: 'deploy-days', content: 'Deploys run on Fridays and Tuesdays.' });
    expect((await temporary.store.history(stored!.id))[0]!.actor).toBe('extraction-helper');
  });

  it('a sandbox without a memory tool writes nothing at all', async () => {
    const bare = await openSandbox({ root });
    expect(bare.tools.map((tool) => tool.name)).toEqual(['read_file', 'list_directory', 'search_files', 'run_command']);
    expect(await bare.runSandboxTool('memory', { command: 'view', path: '/memories' })).toMatchObject({
      isError: true,
      code: 'SANDBOX_DENIED',
    });
  });

  it('never runs a project file in place of an allowed command, whatever PATH says', async () => {
    const listing = await allowed('run_command', { command: 'ls' });
    expect(listing.split('\n')).toContain('README.md');
    expect(readdirSync(root)).not.toContain('pwned');
  });
});

describe('allowed tools work inside the project', () => {
  it('reads files with numbered lines, by offset and limit; names binary files; refuses folders and missing files clearly', async () => {
    expect(await allowed('read_file', { path: 'README.md' })).toBe(
      '     1\t# Acme app\n     2\tDeploys run on Fridays and Tuesdays.\n     3\tTODO: write more docs.\n     4\tReleases are tagged.',
    );
    expect(await allowed('read_file', { path: 'README.md', offset: 2, limit: 1 })).toBe(
      '     2\tDeploys run on Fridays and Tuesdays.\n[Lines 2-2 of 4 shown. Read on with offset 3.]',
    );
    expect(await allowed('read_file', { path: join(root, 'src', 'util.ts') })).toContain('padStart');
    expect(await allowed('read_file', { path: 'link-in/index.ts' })).toContain('answer = 42');
    expect(await allowed('read_file', { path: 'binary.dat' })).toBe(
      'binary.dat is a binary file (4 bytes); it is not shown.',
    );
    expect(await run('read_file', { path: 'src' })).toMatchObject({ isError: true, code: 'INVALID_INPUT' });
    expect(await run('read_file', { path: 'nothing.md' })).toMatchObject({ isError: true, code: 'NOT_FOUND' });
    expect(await run('read_file', { path: 'README.md', offset: 0 })).toMatchObject({
      isError: true,
      code: 'INVALID_INPUT',
    });
    expect(await run('read_file', {})).toMatchObject({ isError: true, code: 'INVALID_INPUT' });
  });

  it('cuts reads at readMaxBytes and says where to continue', async () => {
    const small = await openSandbox({ root, settings: settingsWith({ readMaxBytes: 40 }) });
    expect(await allowed('read_file', { path: 'README.md' }, small)).toBe(
      '     1\t# Acme app\n[Lines 1-1 of 4 shown. Read on with offset 2.]',
    );
  });

  it('lists folders without following links out', async () => {
    expect(await allowed('list_directory', {})).toBe(
      [
        './ (13 entries)',
        '.env (29 bytes)',
        '.git/',
        'README.md (92 bytes)',
        'bin/',
        'binary.dat (4 bytes)',
        'docs/',
        'keys/',
        'link-file-out@',
        'link-in@',
        'link-out@',
        'pipe (special file)',
        'slow.txt (680 bytes)',
        'src/',
      ].join('\n'),
    );
    expect(await allowed('list_directory', { path: 'src' })).toBe(
      'src/ (2 entries)\nindex.ts (102 bytes)\nutil.ts (55 bytes)',
    );
    expect(await run('list_directory', { path: 'README.md' })).toMatchObject({ isError: true, code: 'INVALID_INPUT' });
  });

  it('searches text and regular expressions, bounded; skips secrets, binaries, .git and links', async () => {
    expect(await allowed('search_files', { pattern: 'TODO' })).toBe(
      '2 matches in 7 files searched:\nREADME.md:3: TODO: write more docs.\nsrc/index.ts:2: // TODO: remove the legacy path',
    );
    expect(await allowed('search_files', { pattern: 'todo', ignore_case: true, glob: '*.ts' })).toBe(
      '1 match in 2 files searched:\nsrc/index.ts:2: // TODO: remove the legacy path',
    );
    expect(await allowed('search_files', { pattern: '^export (const|function) \\w+', regex: true, path: 'src' })).toBe(
      "3 matches in 2 files searched:\nsrc/index.ts:1: export const answer = 42;\nsrc/index.ts:3: export function legacy() { return 'aaaa'; }\nsrc/util.ts:1: export const pad = (text: string) => text.padStart(6);",
    );
    expect(await allowed('search_files', { pattern: 'First commit' })).toMatch(/^No matches/);
    expect(await run('search_files', { pattern: '(', regex: true })).toMatchObject({
      isError: true,
      code: 'INVALID_INPUT',
    });
    expect(await run('search_files', { pattern: '' })).toMatchObject({ isError: true, code: 'INVALID_INPUT' });
    const capped = await openSandbox({ root, settings: settingsWith({ searchMaxMatches: 1 }) });
    expect(await allowed('search_files', { pattern: 'a' }, capped)).toMatch(
      /\[Search stopped at 1 matches \(sandbox.searchMaxMatches\)/,
    );
  });

  it('stops a catastrophic regular expression within the time budget instead of hanging', async () => {
    const quick = await openSandbox({ root, settings: settingsWith({ searchTimeoutMs: 200 }) });
    const result = await quick.runSandboxTool('search_files', { pattern: '^(a+)+$', regex: true, glob: 'slow.txt' });
    expect(result).toMatchObject({ isError: true, code: 'INVALID_INPUT' });
    expect(result.content).toMatch(/took too long/);
  });

  it('runs the read-only commands with execFile in the project root', async () => {
    const before = diskState();
    expect((await allowed('run_command', { command: 'ls -a src' })).split('\n')).toEqual([
      '.',
      '..',
      'index.ts',
      'util.ts',
    ]);
    expect(await allowed('run_command', { command: 'cat README.md' })).toContain(
      'Deploys run on Fridays and Tuesdays.',
    );
    expect(await allowed('run_command', { command: 'head -n 1 README.md' })).toBe('# Acme app');
    expect(await allowed('run_command', { command: 'tail -n 1 README.md' })).toBe('Releases are tagged.');
    expect(await allowed('run_command', { command: 'wc -l README.md' })).toBe('4 README.md');
    expect(await allowed('run_command', { command: 'grep -rn TODO src' })).toBe(
      'src/index.ts:2:// TODO: remove the legacy path',
    );
    expect(await allowed('run_command', { command: 'grep -rl SECRET-CONTENT .' })).toBe('[No matches.]');
    expect(await allowed('run_command', { command: 'grep -r --include=.env --include=*.pem SECRET-CONTENT .' })).toBe(
      '[No matches.]',
    );
    expect(await allowed('run_command', { command: 'grep -r -e SECRET-CONTENT -- .' })).toBe('[No matches.]');
    expect(await allowed('run_command', { command: 'grep -rn --include=*.ts TODO' })).toBe(
      'src/index.ts:2:// TODO: remove the legacy path',
    );
    expect(await allowed('run_command', { command: 'grep -e "Fridays and" README.md' })).toBe(
      'Deploys run on Fridays and Tuesdays.',
    );
    expect((await allowed('run_command', { command: "find src -name '*.ts'" })).split('\n').sort()).toEqual([
      'src/index.ts',
      'src/util.ts',
    ]);
    expect(await allowed('run_command', { command: 'cat link-in/util.ts' })).toContain('padStart');
    expect(await allowed('run_command', { command: 'git status --short' })).toContain(' M README.md');
    expect(
      (await allowed('run_command', { command: 'git log --oneline' })).split('\n').map((line) => line.slice(8)),
    ).toEqual(['Second commit', 'First commit']);
    expect(await allowed('run_command', { command: 'git log --format=%s HEAD~1..HEAD' })).toBe('Second commit');
    expect(await allowed('run_command', { command: 'git diff' })).toContain('+Deploys run on Fridays and Tuesdays.');
    expect(await allowed('run_command', { command: 'git diff HEAD~1 -- README.md' })).toContain(
      '+Releases are tagged.',
    );
    expect(await allowed('run_command', { command: 'git show --stat HEAD' })).toContain('Second commit');
    expect(await allowed('run_command', { command: 'git show HEAD:src/util.ts' })).toContain('padStart');
    expect(await allowed('run_command', { command: 'git branch' })).toBe('* main');
    expect(await allowed('run_command', { command: 'git branch --list "ma*"' })).toBe('* main');
    expect(await allowed('run_command', { command: 'git rev-parse --abbrev-ref HEAD' })).toBe('main');
    // Reading changed nothing: not even git's index (optional locks are off).
    expect(diskState()).toBe(before);
  });

  it('reports exit codes, and stops commands past the timeout or the output cap', async () => {
    const failing = await run('run_command', { command: 'cat missing.md' });
    expect(failing.isError).toBe(true);
    expect(failing.content).toMatch(/No such file or directory[\s\S]*\[Exit code 1\.\]/);

    const quick = await openSandbox({ root, settings: settingsWith({ timeoutMs: 300 }) });
    const blocked = await quick.runSandboxTool('run_command', { command: 'cat pipe' });
    expect(blocked).toMatchObject({ isError: true });
    expect(blocked.content).toMatch(/\[Stopped after 300 ms \(sandbox.timeoutMs\)\.\]/);

    const small = await openSandbox({ root, settings: settingsWith({ outputMaxBytes: 16 }) });
    const cut = await small.runSandboxTool('run_command', { command: 'cat README.md' });
    expect(cut.isError).toBe(false);
    expect(cut.content).toBe(
      '# Acme app\nDeplo\n[Output cut at 16 bytes (sandbox.outputMaxBytes); the command was stopped. Narrow it down.]',
    );
  });

  it('says when an allowed command is not installed', async () => {
    const result = await run('run_command', { command: 'rg TODO' });
    if (result.code === 'NOT_FOUND') expect(result.content).toMatch(/rg is not installed/);
    else expect(result.content).toContain('TODO');
  });
});

describe('secret files stay out of grep, rg and git', () => {
  const MARKERS = /GIT-ENV-SECRET|AWS-CRED-SECRET|CRED-JSON-SECRET|SSH-KEY-SECRET|PEM-IN-GIT-SECRET|PGPASS-SECRET/;
  let project: string;
  let secrets: Sandbox;
  let envBlob: string;

  function gitIn(folder: string, ...args: string[]): string {
    return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
      cwd: folder,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: base },
      encoding: 'utf8',
    }).trim();
  }

  beforeAll(async () => {
    project = join(base, 'secrets-project');
    for (const folder of ['src', '.aws', '.ssh', 'config']) mkdirSync(join(project, folder), { recursive: true });
    writeFileSync(join(project, 'src', 'app.ts'), 'export const app = "visible";\n');
    writeFileSync(join(project, '.env'), 'TOKEN=GIT-ENV-SECRET-1\n');
    writeFileSync(join(project, '.aws', 'credentials'), 'aws_secret_access_key=AWS-CRED-SECRET\n');
    writeFileSync(join(project, 'credentials.json'), '{"token": "CRED-JSON-SECRET"}\n');
    writeFileSync(join(project, '.ssh', 'id_work'), 'SSH-KEY-SECRET\n');
    writeFileSync(join(project, 'config', 'Server.PEM'), 'PEM-IN-GIT-SECRET\n');
    writeFileSync(join(project, '.pgpass'), 'db:5432:*:app:PGPASS-SECRET\n');
    writeFileSync(join(project, '.env.example'), 'TOKEN=\n');
    gitIn(project, 'init', '-q', '-b', 'main');
    gitIn(project, 'add', '-A');
    gitIn(project, 'commit', '-q', '-m', 'Everything, secrets included');
    writeFileSync(join(project, '.env'), 'TOKEN=GIT-ENV-SECRET-2\n');
    writeFileSync(join(project, 'src', 'app.ts'), 'export const app = "changed";\n');
    gitIn(project, 'add', '.env');
    envBlob = gitIn(project, 'rev-parse', 'HEAD:.env');
    secrets = await openSandbox({ root: project, env: { PATH: process.env.PATH ?? '', HOME: base } });
  });

  async function refused(command: string): Promise<string> {
    const result = await secrets.runSandboxTool('run_command', { command });
    expect(result, command).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
    expect(result.content).not.toMatch(MARKERS);
    return result.content;
  }

  async function clean(command: string): Promise<string> {
    const result = await secrets.runSandboxTool('run_command', { command });
    expect(result.isError, `${command}: ${result.content}`).toBe(false);
    expect(result.content, command).not.toMatch(MARKERS);
    return result.content;
  }

  it('one list names the secret files: credentials, .pgpass, keystores, .ssh, .aws, .gnupg, .git/config, in any case where it matters', () => {
    for (const path of [
      '.env',
      '.env.local',
      'a/.pgpass',
      'x.jks',
      'release.keystore',
      'KEY.PEM',
      'credentials',
      'credentials.json',
      'credentials.csv',
      '.aws/config',
      'home/.ssh/known_hosts',
      '.gnupg/pubring.kbx',
      '.git/config',
      'id_ed25519',
      '.claude/.credentials.json',
    ]) {
      expect(isSecretPath(path), path).toBe(true);
    }
    for (const path of [
      '.env.example',
      'id_rsa.pub',
      'src/credentials.ts',
      'config/git.config',
      'README.md',
      'keys.md',
    ])
      expect(isSecretPath(path), path).toBe(false);
  });

  it('grep leaves secret files, secret folders and .git out however recursion is asked for', async () => {
    for (const command of [
      'grep -rn SECRET .',
      'grep --rec -n SECRET .',
      'grep --recursive SECRET .',
      'grep -d recurse SECRET .',
      'grep --directories=recurse SECRET .',
      'grep -r -e SECRET -- .',
    ]) {
      expect(await clean(command)).toBe('[No matches.]');
    }
    expect(await clean('grep -rn changed .')).toBe('./src/app.ts:1:export const app = "changed";');
    // .git holds the same words (hooks, the index): it is never searched.
    expect(await clean('grep -rln Everything .')).toBe('[No matches.]');
  });

  it('rg gets the same exclusions, derived from the same list', () => {
    const { args } = planCommand(['rg', '-uuu', 'SECRET', '.']);
    expect(args.slice(0, 3)).toEqual(['-uuu', 'SECRET', '.']);
    expect(args).toEqual(
      expect.arrayContaining([
        '--glob=!.env',
        '--glob=!.pgpass',
        '--glob=!credentials',
        '--glob=!*.[pP][eE][mM]',
        '--glob=!*.[jJ][kK][sS]',
        '--glob=!.ssh',
        '--glob=!.aws',
        '--glob=!.gnupg',
        '--glob=!.git',
      ]),
    );
    const grep = planCommand(['grep', '--rec', 'x', '--', '.']).args;
    expect(grep.at(-2)).toBe('--');
    expect(grep).toEqual(
      expect.arrayContaining(['--exclude=.env', '--exclude=credentials.*', '--exclude-dir=.aws', '--exclude-dir=.git']),
    );
  });

  it('git refuses secret files named as paths, as rev:path, by index stage, or by blob id', async () => {
    for (const command of [
      'git show HEAD .env',
      'git show HEAD -- .env',
      'git log -p --oneline .env',
      'git log -p -- .aws/credentials',
      'git diff .env',
      'git diff --cached -- .env',
      'git diff HEAD -- credentials.json',
      'git show HEAD:.aws/credentials',
      'git show HEAD:config/Server.PEM',
      'git show :0:.env',
      'git show :.env',
      'git show "HEAD@{2099-01-01 10:00:00}:.env"',
      'git show HEAD:./.env',
      `git show ${envBlob}`,
      `git show ${envBlob.slice(0, 10)}`,
      `git diff ${envBlob} HEAD:src/app.ts`,
      'git log -p --full-diff src/app.ts',
      'git log -p --follow src/app.ts',
      'git log -L1,1:.env',
      'git diff --submodule=diff',
      'git status -v',
      'git status --verb',
      "git log -p -- '**/*.PEM'",
    ]) {
      await refused(command);
    }
  });

  it('git diffs of the whole repository leave secret files out, and still show the rest', async () => {
    expect(await clean('git log -p')).toContain('+export const app = "visible";');
    expect(await clean('git show HEAD')).toContain('src/app.ts');
    expect(await clean('git show --stat HEAD')).not.toMatch(/\.env|credentials|\.pgpass|\.ssh|\.aws|PEM/);
    expect(await clean('git diff')).toContain('+export const app = "changed";');
    expect(await clean('git diff --cached')).toBe('[No output.]');
    expect(await clean('git diff HEAD --stat')).not.toMatch(/\.env/);
    expect(await clean('git status --short')).toBe(' M src/app.ts');
    for (const command of [
      "git log -p -- '*.env'",
      "git log -p -- '.en*'",
      "git log -p -- '*'",
      'git log -p -- .',
      'git show HEAD -- config',
      "git log -p -- '**'",
      "git log -p -- 'config/*'",
    ]) {
      expect(await clean(command)).not.toMatch(/\+TOKEN|aws_secret/);
    }
    expect(await clean('git show HEAD:src/app.ts')).toBe('export const app = "visible";');
    const commit = gitIn(project, 'rev-parse', 'HEAD');
    expect(await clean(`git show --stat ${commit.slice(0, 12)}`)).toContain('Everything, secrets included');
    expect(await clean('git log -L1,1:src/app.ts --format=%s')).toContain('Everything, secrets included');
  });
});

describe('git stays inside the project root', () => {
  it('a project inside a larger repository gets no git at all: the repository around it is never read', async () => {
    const outer = join(base, 'outer-repository');
    const inner = join(outer, 'project');
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(inner, 'a.txt'), 'hello\n');
    writeFileSync(join(outer, 'outside.txt'), 'OUTSIDE-REPO-SECRET\n');
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: base };
    execFileSync('git', ['init', '-q', outer], { env });
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@e', 'add', '-A'], { cwd: outer, env });
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@e', 'commit', '-qm', 'outer'], { cwd: outer, env });
    writeFileSync(join(outer, 'outside.txt'), 'OUTSIDE-REPO-CHANGED\n');

    // The environment alone already stops git at the root (GIT_CEILING_DIRECTORIES)...
    const sandboxEnv = sandboxEnvironment({ PATH: process.env.PATH, HOME: base }, await resolveSandboxRoot(inner));
    expect(() =>
      execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: inner, env: sandboxEnv, stdio: 'pipe' }),
    ).toThrow(/not a git repository/);

    // ...and the sandbox refuses git plainly rather than running it.
    const nested = await openSandbox({ root: inner, env: { PATH: process.env.PATH ?? '', HOME: base } });
    for (const command of ['git show HEAD:outside.txt', 'git diff', 'git status --short', 'git log -p']) {
      const result = await nested.runSandboxTool('run_command', { command });
      expect(result, command).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
      expect(result.content).toMatch(/not the top of a git repository/);
      expect(result.content).not.toMatch(/OUTSIDE-REPO/);
    }
    // The other tools still work there.
    expect(await nested.runSandboxTool('run_command', { command: 'cat a.txt' })).toEqual({
      content: 'hello',
      isError: false,
    });
  });

  it('a repository whose work tree is set elsewhere (core.worktree) is refused; a repository at the root works', async () => {
    const parent = join(base, 'worktree-parent');
    const inner = join(parent, 'project');
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(parent, 'outside.txt'), 'WORKTREE-SECRET\n');
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: base };
    execFileSync('git', ['init', '-q', inner], { env });
    execFileSync('git', ['config', 'core.worktree', parent], { cwd: inner, env });
    const moved = await openSandbox({ root: inner, env: { PATH: process.env.PATH ?? '', HOME: base } });
    const result = await moved.runSandboxTool('run_command', { command: 'git status --short' });
    expect(result).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
    expect(result.content).toMatch(/work tree is .*worktree-parent.*not the project root/);

    execFileSync('git', ['config', '--unset', 'core.worktree'], { cwd: inner, env });
    writeFileSync(join(inner, 'here.txt'), 'inside\n');
    const fixed = await openSandbox({ root: inner, env: { PATH: process.env.PATH ?? '', HOME: base } });
    expect(await fixed.runSandboxTool('run_command', { command: 'git status --short' })).toEqual({
      content: '?? here.txt',
      isError: false,
    });
  });
});
