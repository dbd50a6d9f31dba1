import { spawn } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENGRAM_BINARY, createWorkspace, type Workspace } from '../../support/cli-harness.js';

let workspace: Workspace;
let managed: string;
let env: Record<string, string>;

beforeEach(() => {
  workspace = createWorkspace();
  managed = join(workspace.root, 'etc', 'CLAUDE.md');
  // Never the machine's own /etc/claude-code/CLAUDE.md.
  env = { ENGRAM_MANAGED_INSTRUCTIONS: managed };
});

afterEach(() => workspace.cleanup());

function write(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function setUpProject(): void {
  write(managed, 'Managed: never push to main.\n');
  write(join(workspace.home, '.claude', 'CLAUDE.md'), 'User: answer briefly.\n');
  write(join(workspace.cwd, 'CLAUDE.md'), '# Project\nRun tests with npm test.\nSee @docs/style.md and @gone.md\n');
  write(join(workspace.cwd, 'docs', 'style.md'), 'Two-space indent.\n');
  write(
    join(workspace.cwd, '.claude', 'rules', 'api.md'),
    '---\npaths:\n  - "src/api/**/*.{ts,tsx}"\n---\nAPI handlers validate input.\n',
  );
  write(join(workspace.cwd, 'CLAUDE.local.md'), 'Local: my port is 3001.\n');
}

describe('engram instructions', () => {
  it('lists what loaded with scope, path, lines, bytes, globs and warnings (--json)', async () => {
    setUpProject();
    const document = await workspace.json(['instructions', '--root', '.'], 0, { env });
    expect(document.projectRoot).toBe(workspace.cwd);
    expect(document.files.map((file: any) => [file.scope, file.path, file.lines, file.bytes, file.active])).toEqual([
      ['managed', managed, 1, 29, true],
      ['user', join(workspace.home, '.claude', 'CLAUDE.md'), 1, 22, true],
      ['project', join(workspace.cwd, 'CLAUDE.md'), 3, 67, true],
      ['project', join(workspace.cwd, 'docs', 'style.md'), 1, 18, true],
      ['project', join(workspace.cwd, '.claude', 'rules', 'api.md'), 1, 29, false],
      ['local', join(workspace.cwd, 'CLAUDE.local.md'), 1, 24, true],
    ]);
    expect(document.files[3].importedFrom).toBe(join(workspace.cwd, 'CLAUDE.md'));
    expect(document.files[4].paths).toEqual(['src/api/**/*.{ts,tsx}']);
    expect(document.warnings).toEqual([
      `${join(workspace.cwd, 'gone.md')} (imported by ${join(workspace.cwd, 'CLAUDE.md')}): not found; skipped`,
    ]);
    expect(document.text).toBeUndefined();
  });

  it('counts a path-scoped rule as active for a matching --working file', async () => {
    setUpProject();
    const matching = await workspace.json(['instructions', '--root', '.', '--working', 'src/api/users.tsx'], 0, {
      env,
    });
    expect(matching.files.find((file: any) => file.path.endsWith('api.md')).active).toBe(true);
    const other = await workspace.json(
      ['instructions', '--root', '.', '--working', 'src/ui/button.tsx', '--working', 'README.md'],
      0,
      { env },
    );
    expect(other.files.find((file: any) => file.path.endsWith('api.md')).active).toBe(false);
  });

  it('prints a readable table and the warnings in text mode', async () => {
    setUpProject();
    const result = await workspace.run(['instructions', '--root', '.'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^project root\s+/);
    expect(result.stdout).toMatch(/SCOPE\s+LINES\s+BYTES\s+ACTIVE\s+PATH\s+NOTE/);
    expect(result.stdout).toMatch(/managed\s+1\s+29\s+yes\s+\S*etc\/CLAUDE\.md/);
    expect(result.stdout).toMatch(/user\s+1\s+22\s+yes\s+~\/\.claude\/CLAUDE\.md/);
    expect(result.stdout).toMatch(
      /project\s+1\s+29\s+no\s+\S*\.claude\/rules\/api\.md\s+paths: src\/api\/\*\*\/\*\.\{ts,tsx\}/,
    );
    expect(result.stdout).toContain('warnings:\n  ');
    expect(result.stdout).toContain('gone.md');
  });

  it('prints the instructions text with --content, byte-identical on every run, path-scoped rules only when active', async () => {
    setUpProject();
    const first = await workspace.run(['instructions', '--root', '.', '--content'], { env });
    const second = await workspace.run(['instructions', '--root', '.', '--content'], { env });
    expect(first.code, first.stderr).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    expect(first.stdout).toContain(
      `Contents of ${managed} (managed policy instructions, set by an administrator):\n\nManaged: never push to main.`,
    );
    expect(first.stdout.indexOf('Managed: never')).toBeLessThan(first.stdout.indexOf('Local: my port'));
    expect(first.stdout).not.toContain('API handlers validate input.');
    const withRule = await workspace.run(['instructions', '--root', '.', '--content', '--working', 'src/api/a.ts'], {
      env,
    });
    expect(withRule.stdout).toContain('API handlers validate input.');
  });

  it('never prints a secret a project file imports: --content leaves both out and warns about each on stderr', async () => {
    write(join(workspace.home, '.ssh', 'id_rsa'), 'PRIVATE-KEY-home-secret\n');
    write(join(workspace.cwd, '.env'), 'TOKEN=project-env-secret\n');
    write(join(workspace.cwd, 'CLAUDE.md'), 'Cloned project.\n@~/.ssh/id_rsa\n@.env\n');
    const result = await workspace.run(['instructions', '--root', '.', '--content'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Cloned project.');
    expect(result.stdout).not.toMatch(/home-secret|project-env-secret/);
    expect(result.stderr).toContain(
      `engram: warning: ${join(workspace.home, '.ssh', 'id_rsa')} (imported by ${join(workspace.cwd, 'CLAUDE.md')}, line 2): outside the project`,
    );
    expect(result.stderr).toContain('instructions.allowImportsFrom');
    expect(result.stderr).toContain(
      `engram: warning: ${join(workspace.cwd, '.env')} (imported by ${join(workspace.cwd, 'CLAUDE.md')}, line 3): a file that usually holds secrets`,
    );
    const document = await workspace.json(['instructions', '--root', '.', '--content'], 0, { env });
    expect(JSON.stringify(document)).not.toMatch(/home-secret|project-env-secret/);
    expect(document.warnings).toHaveLength(2);
  });

  it('says plainly when nothing is found', async () => {
    const result = await workspace.run(['instructions', '--root', '.'], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('No instruction files found');
    expect((await workspace.json(['instructions', '--root', '.'], 0, { env })).files).toEqual([]);
  });

  it('exits non-zero with a clear message on bad flags and bad settings, and writes nothing', async () => {
    const missing = await workspace.run(['instructions', '--root', join(workspace.root, 'nope')], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^engram: --root .*nope is not an existing folder\./);
    const outside = await workspace.json(['instructions', '--root', join(workspace.root, 'home')], 2, { env });
    expect(outside.error).toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('does not contain the current folder'),
    });
    const empty = await workspace.run(['instructions', '--root', ''], { env });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('Empty --root');
    const positional = await workspace.run(['instructions', 'extra'], { env });
    expect(positional.code).toBe(2);
    expect(positional.stderr).toContain('takes no arguments');
    const unknown = await workspace.run(['instructions', '--nope'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown option '--nope'.*engram instructions --help/s);
    write(join(workspace.home, 'config.json'), JSON.stringify({ instructions: { maxImportDepth: -1 } }));
    const badConfig = await workspace.json(['instructions'], 2, { env });
    expect(badConfig.error.code).toBe('CONFIG_INVALID');
    expect(badConfig.error.message).toContain('instructions.maxImportDepth');
    expect(readdirSync(workspace.home)).toEqual(['config.json']);
    expect(readdirSync(workspace.cwd)).toEqual([]);
  });

  it('survives hostile input: a brace-bomb --exclude and a huge import fan-out stay bounded', async () => {
    write(join(workspace.cwd, 'CLAUDE.md'), Array.from({ length: 2_000 }, (_, index) => `@f${index}.md`).join('\n'));
    for (let index = 0; index < 30; index += 1) write(join(workspace.cwd, `f${index}.md`), `File ${index}.`);
    write(join(workspace.home, 'config.json'), JSON.stringify({ instructions: { maxFiles: 20 } }));
    const document = await workspace.json(['instructions', '--root', '.', '--exclude', '{a,b}'.repeat(40)], 0, { env });
    expect(document.files).toHaveLength(20);
    // Only the first 20 imports are followed, and loading stops at the file cap: f30.md … f1999.md (absent) are never looked up.
    expect(document.warnings).toEqual([
      expect.stringMatching(
        /CLAUDE\.md: 2000 @imports, more than 20 \(instructions\.maxFiles\); only the first 20 are followed$/,
      ),
      expect.stringMatching(/f19\.md .*more than 20 instruction files \(instructions\.maxFiles\)/),
    ]);
  });

  it('reports a file it may not read (permission denied) and lists the rest', async () => {
    setUpProject();
    const locked = write(join(workspace.cwd, '.claude', 'rules', 'locked.md'), 'Secret rule.\n');
    chmodSync(locked, 0o000);
    // Root reads anything, so run the binary as an unprivileged user then; the temp tree must be reachable for it.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      chmodSync(workspace.root, 0o755);
      for (const path of [workspace.home, workspace.cwd]) chownRecursive(path, 65_534);
      chownRecursive(dirname(managed), 65_534);
      chmodSync(locked, 0o000);
    }
    const result = await runAs(['instructions', '--root', '.', '--json'], asRoot ? 65_534 : undefined);
    expect(result.code, result.stderr).toBe(0);
    const document = JSON.parse(result.stdout);
    expect(document.warnings).toContain(`${locked}: unreadable (EACCES); skipped`);
    expect(document.files.map((file: any) => file.scope)).toEqual([
      'managed',
      'user',
      'project',
      'project',
      'project',
      'local',
    ]);
  });
});

function chownRecursive(path: string, id: number): void {
  chownSync(path, id, id);
  if (!lstatSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) chownRecursive(join(path, name), id);
}

function runAs(
  args: string[],
  uid: number | undefined,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENGRAM_BINARY, ...args], {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH, HOME: workspace.home, ENGRAM_HOME: join(workspace.root, 'engram-home'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(uid !== undefined && { uid, gid: uid }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
