import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  activeInstructions,
  formatInstructions,
  type InstructionSet,
} from '../../../src/instructions/instruction-format.js';
import { loadInstructions } from '../../../src/instructions/node/instruction-files.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';

let root: string;
let home: string;
let project: string;
let managedPath: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'engram-instructions-')));
  home = join(root, 'home');
  project = join(root, 'repo');
  managedPath = join(root, 'etc', 'claude-code', 'CLAUDE.md');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function write(path: string, text: string | Buffer): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function load(
  options: { cwd?: string; settings?: Partial<typeof DEFAULT_SETTINGS.instructions>; excludes?: string[] } = {},
): Promise<InstructionSet> {
  return loadInstructions({
    cwd: options.cwd ?? project,
    home,
    managedPath,
    projectRoot: project,
    ...(options.excludes && { excludes: options.excludes }),
    ...(options.settings && { settings: { instructions: { ...DEFAULT_SETTINGS.instructions, ...options.settings } } }),
  });
}

const summary = (set: InstructionSet) => set.files.map((file) => [file.scope, file.path.slice(root.length + 1)]);

describe('load order', () => {
  it('loads managed, user (+ rules), then project from the root down to cwd, CLAUDE.local.md after CLAUDE.md in each folder', async () => {
    write(managedPath, 'Managed policy.');
    write(join(home, '.claude', 'CLAUDE.md'), 'User prefers tabs.');
    write(join(home, '.claude', 'rules', 'b.md'), 'User rule b.');
    write(join(home, '.claude', 'rules', 'a', 'nested.md'), 'User rule a/nested.');
    write(join(home, '.claude', 'rules', 'notes.txt'), 'not a rule');
    write(join(project, 'CLAUDE.md'), 'Root project.');
    write(join(project, '.claude', 'CLAUDE.md'), 'Root .claude project.');
    write(join(project, '.claude', 'rules', 'style.md'), 'Project style rule.');
    write(join(project, '.claude', 'rules', 'deep', 'er', 'x.md'), 'Deep rule.');
    write(join(project, 'CLAUDE.local.md'), 'Root local.');
    const cwd = join(project, 'packages', 'app');
    write(join(project, 'packages', 'CLAUDE.md'), 'Packages.');
    write(join(cwd, '.claude', 'CLAUDE.md'), 'App nested.');
    write(join(cwd, 'CLAUDE.local.md'), 'App local.');
    write(join(project, 'other', 'CLAUDE.md'), 'Sibling folder, never loaded.');
    write(join(root, 'CLAUDE.md'), 'Above the project root, not loaded when projectRoot is given.');

    const set = await load({ cwd });
    expect(summary(set)).toEqual([
      ['managed', 'etc/claude-code/CLAUDE.md'],
      ['user', 'home/.claude/CLAUDE.md'],
      ['user', 'home/.claude/rules/a/nested.md'],
      ['user', 'home/.claude/rules/b.md'],
      ['project', 'repo/CLAUDE.md'],
      ['project', 'repo/.claude/CLAUDE.md'],
      ['project', 'repo/.claude/rules/deep/er/x.md'],
      ['project', 'repo/.claude/rules/style.md'],
      ['local', 'repo/CLAUDE.local.md'],
      ['project', 'repo/packages/CLAUDE.md'],
      ['project', 'repo/packages/app/.claude/CLAUDE.md'],
      ['local', 'repo/packages/app/CLAUDE.local.md'],
    ]);
    expect(set.warnings).toEqual([]);
    expect(set.projectRoot).toBe(project);
    const text = formatInstructions(set.files);
    expect(text.indexOf('Managed policy.')).toBeLessThan(text.indexOf('User prefers tabs.'));
    expect(text.indexOf('Root local.')).toBeLessThan(text.indexOf('App local.'));
  });

  it('finds nothing and warns nothing when no file exists; an empty managedPath loads no policy', async () => {
    expect(await load()).toEqual({ files: [], warnings: [], projectRoot: project });
    write(managedPath, 'Policy');
    const set = await loadInstructions({ cwd: project, home, managedPath: '', projectRoot: project });
    expect(set.files).toEqual([]);
  });

  it('without projectRoot walks every ancestor of cwd and uses the git root as the project root', async () => {
    mkdirSync(join(project, '.git'));
    write(join(root, 'CLAUDE.md'), 'From an ancestor folder.');
    write(join(project, 'CLAUDE.md'), 'Repo.');
    const cwd = join(project, 'src');
    mkdirSync(cwd);
    const set = await loadInstructions({ cwd, home, managedPath });
    const paths = set.files.map((file) => file.path);
    expect(paths.indexOf(join(root, 'CLAUDE.md'))).toBeGreaterThanOrEqual(0);
    expect(paths.indexOf(join(root, 'CLAUDE.md'))).toBeLessThan(paths.indexOf(join(project, 'CLAUDE.md')));
    expect(set.projectRoot).toBe(project);
  });

  it('loads a file reached twice (home inside the walk, a symlink) only once', async () => {
    write(join(home, '.claude', 'CLAUDE.md'), 'User.');
    write(join(project, 'shared.md'), 'Shared.');
    mkdirSync(join(project, '.claude', 'rules'), { recursive: true });
    symlinkSync(join(project, 'shared.md'), join(project, '.claude', 'rules', 'linked.md'));
    write(join(project, 'CLAUDE.md'), '@shared.md');
    const set = await loadInstructions({ cwd: home, home, managedPath, projectRoot: root });
    expect(set.files.filter((file) => file.content === 'User.')).toHaveLength(1);
    const fromProject = await load();
    expect(fromProject.files.filter((file) => file.content === 'Shared.')).toHaveLength(1);
  });

  it('accepts a project root spelled through a symlink while cwd is the real path', async () => {
    write(join(project, 'CLAUDE.md'), 'Root.');
    write(join(project, 'sub', 'CLAUDE.md'), 'Sub.');
    symlinkSync(project, join(root, 'link'));
    const set = await loadInstructions({
      cwd: join(project, 'sub'),
      home,
      managedPath,
      projectRoot: join(root, 'link'),
    });
    expect(set.files.map((file) => file.path)).toEqual([join(project, 'CLAUDE.md'), join(project, 'sub', 'CLAUDE.md')]);
    expect(set.projectRoot).toBe(project);
  });

  it('skips files matching excludes (globs on absolute paths), but never the managed policy', async () => {
    write(managedPath, 'Policy.');
    write(join(project, 'CLAUDE.md'), 'Root.');
    write(join(project, 'vendor', 'CLAUDE.md'), 'Vendored, excluded.');
    const set = await load({
      cwd: join(project, 'vendor'),
      excludes: [`${project}/vendor/**`, '**/etc/claude-code/*'],
    });
    expect(set.files.map((file) => file.content)).toEqual(['Policy.', 'Root.']);
  });
});

describe('rules with paths:', () => {
  it('are active only while a matching file (relative to the project root) is worked on', async () => {
    write(join(project, '.claude', 'rules', 'ts.md'), '---\npaths: src/**/*.{ts,tsx}\n---\nTypeScript rule.');
    write(join(project, '.claude', 'rules', 'api.md'), '---\npaths:\n  - "api/**"\n  - docs/api.md\n---\nAPI rule.');
    write(join(project, '.claude', 'rules', 'always.md'), 'Always rule.');
    write(join(home, '.claude', 'rules', 'go.md'), '---\nglobs: **/*.go\n---\nGo rule.');
    const set = await load();
    const ts = set.files.find((file) => file.path.endsWith('ts.md'))!;
    expect(ts.paths).toEqual(['src/**/*.{ts,tsx}']);
    expect(ts.content).toBe('TypeScript rule.');
    const active = (paths: string[]) => activeInstructions(set, paths).map((file) => file.content);
    expect(active([])).toEqual(['Always rule.']);
    expect(active(['src/ui/button.tsx'])).toEqual(['Always rule.', 'TypeScript rule.']);
    expect(active([join(project, 'docs', 'api.md'), 'cmd/main.go'])).toEqual(['Go rule.', 'Always rule.', 'API rule.']);
    expect(active(['README.md', 'srcx/a.ts'])).toEqual(['Always rule.']);
  });

  it('in a nested folder match relative to that folder, and their imports inherit the paths', async () => {
    const app = join(project, 'app');
    write(
      join(app, '.claude', 'rules', 'views.md'),
      '---\npaths: views/**\n---\nViews rule, see @../../view-details.md',
    );
    write(join(app, 'view-details.md'), 'View details.');
    const set = await load({ cwd: app });
    expect(set.warnings).toEqual([]);
    const details = set.files.find((file) => file.content === 'View details.')!;
    expect(details.paths).toEqual(['views/**']);
    expect(activeInstructions(set, ['views/a.html'])).toHaveLength(0);
    expect(activeInstructions(set, ['app/views/a.html']).map((file) => file.content)).toEqual([
      'Views rule, see @../../view-details.md',
      'View details.',
    ]);
  });

  it('caps how many patterns one rule may expand to, with a warning', async () => {
    write(join(project, '.claude', 'rules', 'bomb.md'), `---\npaths: ${'{a,b}'.repeat(20)}\n---\nBomb.`);
    const set = await load({ settings: { maxPathPatterns: 50 } });
    expect(set.files[0]!.patterns).toHaveLength(50);
    expect(set.warnings.join('\n')).toMatch(/more than 50 patterns \(instructions\.maxPathPatterns\)/);
  });

  it('follows symlinked rule files and folders, each folder once even when links loop', async () => {
    write(join(root, 'shared-rules', 'team.md'), 'Team rule.');
    write(join(root, 'single.md'), 'Single linked rule.');
    mkdirSync(join(project, '.claude', 'rules'), { recursive: true });
    symlinkSync(join(root, 'shared-rules'), join(project, '.claude', 'rules', 'team'));
    symlinkSync(join(root, 'single.md'), join(project, '.claude', 'rules', 'single.md'));
    symlinkSync(join(project, '.claude', 'rules'), join(root, 'shared-rules', 'loop'));
    const set = await load();
    expect(set.files.map((file) => file.content).sort()).toEqual(['Single linked rule.', 'Team rule.']);
  });

  it('bounds a huge rules folder: entries looked at and files loaded', async () => {
    const rules = join(project, '.claude', 'rules');
    mkdirSync(rules, { recursive: true });
    for (let index = 0; index < 300; index += 1)
      writeFileSync(join(rules, `r${String(index).padStart(3, '0')}.md`), `Rule ${index}.`);
    const byEntries = await load({ settings: { maxRuleEntries: 120 } });
    expect(byEntries.files).toHaveLength(120);
    expect(byEntries.files.at(-1)!.content).toBe('Rule 119.');
    expect(byEntries.warnings).toEqual([
      `${rules}: more than 120 entries (instructions.maxRuleEntries); the rest are not read`,
    ]);
    const byFiles = await load({ settings: { maxFiles: 40 } });
    expect(byFiles.files).toHaveLength(40);
    expect(byFiles.warnings).toHaveLength(1);
    expect(byFiles.warnings[0]).toMatch(/more than 40 instruction files/);
  });
});

describe('@path imports', () => {
  it('resolve relative, absolute and ~/ paths, each imported file after its importer', async () => {
    write(
      join(project, 'CLAUDE.md'),
      `Read @docs/style.md and @${join(root, 'shared', 'abs.md')} and @~/.claude/personal.md.`,
    );
    write(join(project, 'docs', 'style.md'), 'Style: see @../AGENTS.md');
    write(join(project, 'AGENTS.md'), 'Agents file.');
    write(join(root, 'shared', 'abs.md'), 'Absolute.');
    write(join(home, '.claude', 'personal.md'), 'Personal.');
    // Outside the project and ~/.claude only with the folder allowed.
    const set = await load({ settings: { allowImportsFrom: join(root, 'shared') } });
    expect(set.warnings).toEqual([]);
    expect(set.files.map((file) => [file.content.slice(0, 12), file.importedFrom?.slice(root.length + 1)])).toEqual([
      ['Read @docs/s', undefined],
      ['Style: see @', 'repo/CLAUDE.md'],
      ['Agents file.', 'repo/docs/style.md'],
      ['Absolute.', 'repo/CLAUDE.md'],
      ['Personal.', 'repo/CLAUDE.md'],
    ]);
    expect(set.files.every((file) => file.scope === 'project')).toBe(true);
    expect(formatInstructions(set.files)).toContain(
      `Contents of ${join(project, 'AGENTS.md')} (project instructions, shared with the codebase; imported by ${join(project, 'docs', 'style.md')}):`,
    );
  });

  it('ignore imports in code spans, fences and HTML comments', async () => {
    write(
      join(project, 'CLAUDE.md'),
      'Use `@inline.md` literally.\n```\n@fenced.md\n```\n<!-- @commented.md -->\nDone.',
    );
    const set = await load();
    expect(set.files).toHaveLength(1);
    expect(set.warnings).toEqual([]);
    expect(set.files[0]!.content).toBe('Use `@inline.md` literally.\n```\n@fenced.md\n```\nDone.');
  });

  it('load five levels deep; the sixth is not loaded and a warning says so', async () => {
    write(join(project, 'CLAUDE.md'), '@level1.md');
    for (let level = 1; level <= 6; level += 1)
      write(join(project, `level${level}.md`), `Level ${level}. @level${level + 1}.md`);
    const set = await load();
    expect(set.files.map((file) => file.path.slice(project.length + 1))).toEqual([
      'CLAUDE.md',
      'level1.md',
      'level2.md',
      'level3.md',
      'level4.md',
      'level5.md',
    ]);
    expect(set.warnings).toEqual([
      `${join(project, 'level6.md')} (imported by ${join(project, 'level5.md')}, line 1): past the import depth limit of 5 (instructions.maxImportDepth); not loaded`,
    ]);
    const shallow = await load({ settings: { maxImportDepth: 4 } });
    expect(shallow.files).toHaveLength(5);
  });

  it('refuse a cycle with a warning and terminate', async () => {
    write(join(project, 'CLAUDE.md'), 'Root @a.md');
    write(join(project, 'a.md'), 'A @b.md');
    write(join(project, 'b.md'), 'B @a.md and @CLAUDE.md and @./b.md');
    const set = await load();
    expect(set.files.map((file) => file.content)).toEqual([
      'Root @a.md',
      'A @b.md',
      'B @a.md and @CLAUDE.md and @./b.md',
    ]);
    expect(set.warnings).toHaveLength(3);
    for (const warning of set.warnings) expect(warning).toMatch(/import cycle/);
    expect(set.warnings[0]).toContain(
      `${join(project, 'CLAUDE.md')} -> ${join(project, 'a.md')} -> ${join(project, 'b.md')} -> ${join(project, 'a.md')}`,
    );
  });

  it('follow at most maxFiles imports of one file, and list at most maxFiles problems, then count the rest', async () => {
    write(join(project, 'CLAUDE.md'), Array.from({ length: 50 }, (_, index) => `@missing${index}.md`).join(' '));
    const set = await load({ settings: { maxFiles: 10 } });
    expect(set.files).toHaveLength(1);
    expect(set.warnings[0]).toBe(
      `${join(project, 'CLAUDE.md')}: 50 @imports, more than 10 (instructions.maxFiles); only the first 10 are followed`,
    );
    expect(set.warnings.slice(1, 10)).toEqual(
      Array.from({ length: 9 }, (_, index) => expect.stringContaining(`missing${index}.md`)),
    );
    expect(set.warnings[10]).toBe('1 more problems not listed (over instructions.maxFiles)');
    expect(set.warnings).toHaveLength(11);
    const rules = join(project, '.claude', 'rules');
    mkdirSync(rules, { recursive: true });
    execFileSync(
      'mkfifo',
      Array.from({ length: 25 }, (_, index) => join(rules, `pipe${String(index).padStart(2, '0')}.md`)),
    );
    const many = await load({ settings: { maxFiles: 10 } });
    expect(many.warnings).toHaveLength(11);
    expect(many.warnings[10]).toBe('26 more problems not listed (over instructions.maxFiles)');
  });

  it('refuse secret files anywhere and, from project files, anything outside the project and ~/.claude', async () => {
    write(join(home, '.ssh', 'id_rsa'), '-----BEGIN OPENSSH PRIVATE KEY----- home-key-secret');
    write(join(project, '.env'), 'API_TOKEN=project-env-secret');
    write(join(home, '.claude', '.credentials.json'), '{"token":"claude-login-secret"}');
    write(join(home, 'notes.md'), 'Home notes, personal.');
    write(join(root, 'elsewhere', 'other.md'), 'Another repository.');
    write(join(project, 'docs', 'ok.md'), 'Docs inside the project.');
    symlinkSync(join(home, 'notes.md'), join(project, 'docs', 'linked.md'));
    symlinkSync(join(project, '.env'), join(project, 'docs', 'env.md'));
    write(
      join(project, 'CLAUDE.md'),
      [
        'Project.',
        '@~/.ssh/id_rsa',
        '@.env',
        '@~/notes.md',
        '@../elsewhere/other.md',
        '@docs/linked.md',
        '@docs/env.md',
        '@~/.claude/.credentials.json',
        '@docs/ok.md',
      ].join('\n'),
    );
    write(join(project, 'CLAUDE.local.md'), `@${join(home, '.ssh', 'id_rsa')}`);
    const set = await load();
    expect(set.files.map((file) => file.path)).toEqual([
      join(project, 'CLAUDE.md'),
      join(project, 'docs', 'ok.md'),
      join(project, 'CLAUDE.local.md'),
    ]);
    const text = formatInstructions(set.files);
    for (const secret of [
      'home-key-secret',
      'project-env-secret',
      'claude-login-secret',
      'Home notes',
      'Another repository',
    ])
      expect(text).not.toContain(secret);
    const importer = join(project, 'CLAUDE.md');
    const outside = `outside the project (${project}) and ~/.claude; not loaded. Project instructions may import only files there; to allow another folder, add it to the setting instructions.allowImportsFrom (folders separated by ":")`;
    const secret = 'a file that usually holds secrets (keys, tokens, passwords); instruction imports never load one';
    expect(set.warnings).toEqual([
      `${join(home, '.ssh', 'id_rsa')} (imported by ${importer}, line 2): ${outside}`,
      `${join(project, '.env')} (imported by ${importer}, line 3): ${secret}`,
      `${join(home, 'notes.md')} (imported by ${importer}, line 4): ${outside}`,
      `${join(root, 'elsewhere', 'other.md')} (imported by ${importer}, line 5): ${outside}`,
      `${join(project, 'docs', 'linked.md')} (imported by ${importer}, line 6): leads through a symbolic link to ${join(home, 'notes.md')}, ${outside}`,
      `${join(project, 'docs', 'env.md')} (imported by ${importer}, line 7): leads through a symbolic link to ${join(project, '.env')}, ${secret}`,
      `${join(home, '.claude', '.credentials.json')} (imported by ${importer}, line 8): ${secret}`,
      `${join(home, '.ssh', 'id_rsa')} (imported by ${join(project, 'CLAUDE.local.md')}, line 1): ${outside.replace('Project instructions', 'Local project instructions')}`,
    ]);

    // Allowing a folder lets its files in, never its secrets.
    const allowed = await load({ settings: { allowImportsFrom: `relative/folder:${join(root, 'elsewhere')}:~` } });
    expect(allowed.files.map((file) => file.content)).toContain('Another repository.');
    expect(allowed.files.map((file) => file.content)).toContain('Home notes, personal.');
    expect(formatInstructions(allowed.files)).not.toMatch(/home-key-secret|project-env-secret|claude-login-secret/);
    expect(allowed.warnings[0]).toBe(
      'instructions.allowImportsFrom: "relative/folder" is not an absolute or ~/ path; ignored',
    );
    expect(allowed.warnings.filter((warning) => warning.endsWith(secret))).toHaveLength(5);
  });

  it('let user and managed files import from the home folder, but never its secret files', async () => {
    write(join(home, 'notes.md'), 'Home notes.');
    write(join(home, '.aws', 'credentials'), 'aws_secret_access_key=aws-secret');
    write(join(home, 'keys', 'server.PEM'), 'pem-secret');
    write(join(root, 'etc', 'claude-code', 'policy.md'), 'Policy detail.');
    write(join(root, 'elsewhere.md'), 'Outside home.');
    write(join(home, '.claude', 'CLAUDE.md'), '@~/notes.md @~/.aws/credentials @~/keys/server.PEM @../../elsewhere.md');
    write(managedPath, '@policy.md @~/notes.md');
    const set = await load();
    expect(set.files.map((file) => [file.scope, file.content])).toEqual([
      ['managed', '@policy.md @~/notes.md'],
      ['managed', 'Policy detail.'],
      ['managed', 'Home notes.'],
      ['user', '@~/notes.md @~/.aws/credentials @~/keys/server.PEM @../../elsewhere.md'],
    ]);
    expect(set.warnings).toEqual([
      expect.stringMatching(/\.aws\/credentials \(imported by .*, line 1\): a file that usually holds secrets/),
      expect.stringMatching(/server\.PEM \(imported by .*, line 1\): a file that usually holds secrets/),
      expect.stringMatching(
        /elsewhere\.md \(imported by .*, line 1\): outside your home folder; not loaded\. User instructions may import only files there/,
      ),
    ]);
  });

  it('warn about a missing import and keep going', async () => {
    write(join(project, 'CLAUDE.md'), 'See @missing.md and @present.md');
    write(join(project, 'present.md'), 'Present.');
    const set = await load();
    expect(set.files.map((file) => file.content)).toEqual(['See @missing.md and @present.md', 'Present.']);
    expect(set.warnings).toEqual([
      `${join(project, 'missing.md')} (imported by ${join(project, 'CLAUDE.md')}): not found; skipped`,
    ]);
  });
});

describe('content and hostile files', () => {
  it("strips block-level HTML comments and CRLF, and keeps a rule's body without frontmatter", async () => {
    write(join(project, 'CLAUDE.md'), '\uFEFF# Project\r\n<!-- for maintainers only -->\r\nUse pnpm.\r\n');
    write(
      join(project, '.claude', 'rules', 'r.md'),
      '---\r\npaths: x/**\r\n---\r\n<!--\r\nhidden\r\n-->\r\nRule text.',
    );
    const set = await load();
    expect(set.files.map((file) => file.content)).toEqual(['# Project\nUse pnpm.\n', 'Rule text.']);
  });

  it('skips a file over maxFileBytes (4 MiB by default) with a warning', async () => {
    const big = write(join(project, 'CLAUDE.md'), Buffer.alloc(DEFAULT_SETTINGS.instructions.maxFileBytes + 1, 'a'));
    write(join(project, 'CLAUDE.local.md'), 'Small local file.');
    const set = await load();
    expect(set.files.map((file) => file.content)).toEqual(['Small local file.']);
    expect(set.warnings).toEqual([
      `${big}: ${4 * 1024 * 1024 + 1} bytes, over the 4194304-byte limit (instructions.maxFileBytes); skipped`,
    ]);
    write(big, Buffer.alloc(4 * 1024 * 1024, 'b'));
    expect((await load()).files[0]!.content).toHaveLength(4 * 1024 * 1024);
  });

  it('stops at maxTotalBytes across files', async () => {
    write(join(project, 'CLAUDE.md'), 'x'.repeat(600));
    write(join(project, 'CLAUDE.local.md'), 'y'.repeat(600));
    const set = await load({ settings: { maxTotalBytes: 1_000 } });
    expect(set.files).toHaveLength(1);
    expect(set.warnings[0]).toMatch(/pass 1000 bytes in all/);
  });

  it('does not hang or crash on /dev/zero, a FIFO, a directory or binary content: each is a warning', async () => {
    execFileSync('mkfifo', [join(project, 'pipe.md')]);
    mkdirSync(join(project, 'folder.md'));
    write(join(project, 'binary.md'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff]));
    write(join(project, 'CLAUDE.md'), 'Imports: @/dev/zero @pipe.md @folder.md @binary.md\nStill here.');
    // A FIFO and a directory under Claude Code's own names too.
    execFileSync('mkfifo', [join(project, 'CLAUDE.local.md')]);
    mkdirSync(join(project, '.claude', 'CLAUDE.md'), { recursive: true });
    // /dev is outside the project: allowed here so that the device itself is met.
    const set = await load({ settings: { allowImportsFrom: '/dev' } });
    expect(set.files.map((file) => file.path)).toEqual([join(project, 'CLAUDE.md')]);
    const warnings = set.warnings.join('\n');
    expect(warnings).toContain('/dev/zero (imported by');
    expect(warnings).toMatch(/\/dev\/zero .*not a regular file \(a device\)/);
    expect(warnings).toMatch(/pipe\.md .*not a regular file \(a FIFO\)/);
    expect(warnings).toMatch(/folder\.md .*not a regular file \(a directory\)/);
    expect(warnings).toMatch(/binary\.md .*binary content/);
    expect(warnings).toMatch(/CLAUDE\.local\.md: not a regular file \(a FIFO\)/);
    expect(warnings).toMatch(/\.claude\/CLAUDE\.md: not a regular file \(a directory\)/);
  });

  it('reports an unreadable file (a symlink loop; permission denied when not root) and loads the rest', async () => {
    symlinkSync(join(project, 'CLAUDE.md'), join(project, 'CLAUDE.md.tmp'));
    rmSync(join(project, 'CLAUDE.md'), { force: true });
    symlinkSync(join(project, 'CLAUDE.md.tmp'), join(project, 'CLAUDE.md'));
    write(join(project, 'CLAUDE.local.md'), 'Local survives.');
    const set = await load();
    expect(set.files.map((file) => file.content)).toEqual(['Local survives.']);
    expect(set.warnings).toEqual([`${join(project, 'CLAUDE.md')}: unreadable (ELOOP); skipped`]);
    if (process.getuid?.() !== 0) {
      const locked = write(join(project, '.claude', 'rules', 'locked.md'), 'secret');
      execFileSync('chmod', ['000', locked]);
      const denied = await load();
      expect(denied.warnings).toContain(`${locked}: unreadable (EACCES); skipped`);
    }
  });

  it('refuses bad options with a clear INVALID_INPUT', async () => {
    await expect(loadInstructions({ cwd: join(root, 'nope'), home })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('not an existing directory'),
    });
    await expect(loadInstructions({ cwd: project, home: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(loadInstructions({ cwd: project, home: 'a\0b' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(loadInstructions({ cwd: root, home, projectRoot: project })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('not inside the project root'),
    });
    await expect(loadInstructions({ cwd: project, home, managedPath: '\0' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('gives byte-identical system text for the same files, and different text when a file changes', async () => {
    write(join(project, 'CLAUDE.md'), 'One. @two.md');
    write(join(project, 'two.md'), 'Two.');
    write(join(project, '.claude', 'rules', 'r.md'), '---\npaths: ["**/*.py"]\n---\nPython.');
    const first = formatInstructions((await load()).files);
    const second = formatInstructions((await load()).files);
    expect(second).toBe(first);
    write(join(project, 'two.md'), 'Two, changed.');
    expect(formatInstructions((await load()).files)).not.toBe(first);
  });
});
