import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { openSandbox } from '../../../src/sandbox/node/sandbox.js';

// A repository from a downloaded archive may carry any .git/config: git in the sandbox must never
// start a program it names. Each case below is a real repository with one hostile setting; a
// program that writes a marker file stands in for the attacker's, and every git command the
// sandbox allows is run against it.

let base: string;
let template: string;
let evil: string;
let marker: string;
const MISSING = 'f'.repeat(40);

function gitIn(folder: string, args: string[], input?: string): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
    cwd: folder,
    input,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: base, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  }).trim();
}

// A commit object carrying a signature header of one format: showing its signature runs that format's program.
// Each changes a file, so that path-limited history (the sandbox adds exclude pathspecs) keeps it.
function signedCommit(folder: string, parent: string, header: string, footer: string, subject: string): string {
  writeFileSync(join(folder, `${subject}.md`), `${subject}\n`);
  gitIn(folder, ['add', `${subject}.md`]);
  const tree = gitIn(folder, ['write-tree']);
  const body =
    `tree ${tree}\nparent ${parent}\nauthor Test <test@example.com> 1700000000 +0000\n` +
    `committer Test <test@example.com> 1700000000 +0000\ngpgsig ${header}\n \n AAAA\n ${footer}\n\n${subject}\n`;
  return gitIn(folder, ['hash-object', '-t', 'commit', '-w', '--stdin'], body);
}

interface HostileCase {
  name: string;
  /** Settings written to the repository's own config (`git config --local`). */
  config?: Array<[string, string]>;
  /** Anything else done to the copy (files, hooks). */
  prepare?: (project: string) => void;
  /** The parent environment the sandbox is given. */
  env?: Record<string, string>;
}

const PROMISOR: Array<[string, string]> = [
  ['core.repositoryformatversion', '1'],
  ['extensions.partialClone', 'origin'],
  ['remote.origin.promisor', 'true'],
];

function cases(): HostileCase[] {
  const run = evil;
  return [
    { name: 'filter.<driver>.clean', config: [['filter.evil.clean', run]] },
    { name: 'filter.<driver>.process', config: [['filter.evil.process', run]] },
    {
      name: 'filter.<driver>.smudge',
      config: [
        ['filter.evil.smudge', run],
        ['filter.evil.required', 'true'],
      ],
    },
    { name: 'diff.<driver>.textconv', config: [['diff.evil.textconv', run]] },
    { name: 'diff.<driver>.command', config: [['diff.evil.command', run]] },
    { name: 'diff.external', config: [['diff.external', run]] },
    { name: 'merge.<driver>.driver', config: [['merge.evil.driver', run]] },
    { name: 'gpg.program', config: [['gpg.program', run]] },
    { name: 'gpg.openpgp.program', config: [['gpg.openpgp.program', run]] },
    { name: 'gpg.x509.program', config: [['gpg.x509.program', run]] },
    {
      name: 'gpg.ssh.program',
      config: [
        ['gpg.ssh.program', run],
        ['gpg.ssh.allowedSignersFile', '/dev/null'],
      ],
    },
    { name: 'gpg.ssh.defaultKeyCommand', config: [['gpg.ssh.defaultKeyCommand', run]] },
    {
      name: 'log.showSignature',
      config: [
        ['log.showSignature', 'true'],
        ['gpg.program', run],
      ],
    },
    { name: 'pretty.<name> with %G?', config: [['pretty.evil', '%G? %GS']] },
    {
      name: 'format.pretty with %GG',
      config: [
        ['format.pretty', 'format:%h %GG'],
        ['gpg.program', run],
      ],
    },
    { name: 'core.fsmonitor', config: [['core.fsmonitor', run]] },
    { name: 'core.pager', config: [['core.pager', run]] },
    {
      name: 'pager.<command>',
      config: ['status', 'log', 'diff', 'show', 'branch'].map((command): [string, string] => [`pager.${command}`, run]),
    },
    { name: 'core.editor', config: [['core.editor', run]] },
    { name: 'sequence.editor', config: [['sequence.editor', run]] },
    { name: 'interactive.diffFilter', config: [['interactive.diffFilter', run]] },
    { name: 'core.alternateRefsCommand', config: [['core.alternateRefsCommand', run]] },
    {
      name: 'core.hooksPath',
      prepare: (project) => {
        const hooks = join(project, 'hooks-elsewhere');
        mkdirSync(hooks);
        for (const hook of ['post-index-change', 'reference-transaction', 'post-checkout', 'pre-auto-gc']) {
          writeFileSync(join(hooks, hook), `#!/bin/sh\nexec ${run} hook "$@"\n`);
          chmodSync(join(hooks, hook), 0o755);
        }
        gitIn(project, ['config', '--local', 'core.hooksPath', hooks]);
      },
    },
    {
      name: 'hooks in .git/hooks',
      prepare: (project) => {
        for (const hook of ['post-index-change', 'reference-transaction', 'post-checkout', 'fsmonitor-watchman']) {
          writeFileSync(join(project, '.git', 'hooks', hook), `#!/bin/sh\nexec ${run} hook "$@"\n`);
          chmodSync(join(project, '.git', 'hooks', hook), 0o755);
        }
      },
    },
    {
      name: 'core.sshCommand (lazy fetch from a promisor remote)',
      config: [...PROMISOR, ['remote.origin.url', 'ssh://git@example.invalid/repo.git'], ['core.sshCommand', run]],
    },
    {
      name: 'remote.<name>.uploadpack (file remote)',
      config: [...PROMISOR, ['remote.origin.url', `file://${base}`], ['remote.origin.uploadpack', run]],
    },
    {
      name: 'remote ext:: transport',
      config: [...PROMISOR, ['remote.origin.url', `ext::${run} %S`], ['protocol.ext.allow', 'always']],
    },
    {
      name: 'core.gitProxy',
      config: [...PROMISOR, ['remote.origin.url', 'git://example.invalid/repo.git'], ['core.gitProxy', run]],
    },
    {
      name: 'credential.helper',
      config: [...PROMISOR, ['remote.origin.url', 'https://127.0.0.1:9/repo.git'], ['credential.helper', `!${run}`]],
    },
    {
      name: 'core.askPass',
      config: [...PROMISOR, ['remote.origin.url', 'https://127.0.0.1:9/repo.git'], ['core.askPass', run]],
    },
    {
      name: 'remote.<name>.vcs (remote helper)',
      config: [...PROMISOR, ['remote.origin.url', 'evil::x'], ['remote.origin.vcs', 'evil']],
      prepare: (project) => {
        // git looks for git-remote-evil on PATH: the sandbox PATH holds no project folder, but make one anyway.
        writeFileSync(join(project, 'git-remote-evil'), `#!/bin/sh\nexec ${run} remote-helper "$@"\n`);
        chmodSync(join(project, 'git-remote-evil'), 0o755);
      },
    },
    {
      name: 'include.path (filter in an included file)',
      prepare: (project) => {
        const included = join(project, '..', `included-${Math.random().toString(36).slice(2)}.config`);
        writeFileSync(included, `[filter "evil"]\n\tclean = ${run}\n\tprocess = ${run}\n`);
        gitIn(project, ['config', '--local', 'include.path', included]);
      },
    },
    {
      name: 'includeIf.gitdir (textconv in an included file)',
      prepare: (project) => {
        const included = join(project, '..', `included-${Math.random().toString(36).slice(2)}.config`);
        writeFileSync(included, `[diff "evil"]\n\ttextconv = ${run}\n[core]\n\tfsmonitor = ${run}\n`);
        gitIn(project, ['config', '--local', 'includeIf.gitdir:/.path', included]);
      },
    },
    {
      name: 'config.worktree (extensions.worktreeConfig)',
      prepare: (project) => {
        gitIn(project, ['config', '--local', 'extensions.worktreeConfig', 'true']);
        gitIn(project, ['config', '--local', 'core.repositoryformatversion', '1']);
        writeFileSync(join(project, '.git', 'config.worktree'), `[filter "evil"]\n\tclean = ${run}\n`);
      },
    },
    {
      name: 'submodule with its own filter',
      prepare: (project) => {
        const inner = join(project, '..', `inner-${Math.random().toString(36).slice(2)}`);
        mkdirSync(inner);
        writeFileSync(join(inner, 'inner.txt'), 'inner\n');
        writeFileSync(join(inner, '.gitattributes'), '*.txt filter=evil diff=evil\n');
        gitIn(inner, ['init', '-q', '-b', 'main']);
        gitIn(inner, ['add', '-A']);
        gitIn(inner, ['commit', '-q', '-m', 'inner']);
        gitIn(project, ['-c', 'protocol.file.allow=always', 'submodule', '--quiet', 'add', inner, 'sub']);
        gitIn(project, ['commit', '-q', '-m', 'Add a submodule']);
        const moduleConfig = join(project, '.git', 'modules', 'sub');
        gitIn(moduleConfig, ['config', 'filter.evil.clean', run]);
        gitIn(moduleConfig, ['config', 'diff.evil.textconv', run]);
        writeFileSync(join(project, 'sub', 'inner.txt'), 'inner, changed\n');
      },
    },
    {
      name: 'environment: GIT_* variables of the parent',
      env: {
        GIT_EXTERNAL_DIFF: run,
        GIT_PAGER: run,
        PAGER: run,
        GIT_SSH_COMMAND: run,
        GIT_ASKPASS: run,
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_0: 'filter.evil.clean',
        GIT_CONFIG_VALUE_0: run,
        GIT_CONFIG_KEY_1: 'core.fsmonitor',
        GIT_CONFIG_VALUE_1: run,
        GIT_CONFIG_PARAMETERS: `'diff.external'='${run}'`,
        GIT_CONFIG_GLOBAL: join(base, 'hostile-global.config'),
        GIT_CONFIG_SYSTEM: join(base, 'hostile-global.config'),
      },
    },
    {
      name: 'a hostile ~/.gitconfig and XDG config',
      prepare: (project) => {
        const home = join(project, '..', `home-${Math.random().toString(36).slice(2)}`);
        mkdirSync(join(home, '.config', 'git'), { recursive: true });
        const hostile = `[filter "evil"]\n\tclean = ${run}\n[diff]\n\texternal = ${run}\n[gpg]\n\tprogram = ${run}\n`;
        writeFileSync(join(home, '.gitconfig'), hostile);
        writeFileSync(join(home, '.config', 'git', 'config'), hostile);
        writeFileSync(join(project, '..', 'home-of-last-case'), home);
      },
    },
  ];
}

/** Every git command line the sandbox allows, and a few it refuses, run against each hostile repository. */
const COMMANDS = [
  'git status',
  'git status --short',
  'git status --porcelain=v2',
  'git status --ignored',
  'git diff',
  'git diff --stat',
  'git diff --numstat',
  'git diff HEAD',
  'git diff --cached',
  'git diff HEAD~1',
  'git diff HEAD~3 HEAD',
  'git diff -- notes.txt',
  'git log',
  'git log -p',
  'git log --stat',
  'git log -3 --oneline',
  'git log --format=%G?',
  'git log --pretty=%GS',
  'git log --format=%GK',
  'git log --format=%GG',
  'git log --pretty=format:%GF',
  'git log --format=tformat:%GP',
  'git log --format=%GT',
  'git log --format %G?',
  'git log --pretty=evil',
  'git log --pretty=%%%G?',
  `git log ${MISSING}`,
  'git log -L1,1:notes.txt',
  'git show',
  'git show HEAD',
  'git show HEAD~1',
  'git show HEAD~2',
  'git show --stat',
  'git show --format=%GS',
  'git show HEAD:notes.txt',
  `git show ${MISSING}`,
  `git diff ${MISSING}`,
  'git branch',
  'git branch -v',
  'git branch -a',
  'git branch "--format=%(objectname) %(contents:signature)"',
  'git rev-parse HEAD',
  'git rev-parse --show-toplevel',
  `git rev-parse ${MISSING}^{commit}`,
];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'engram-git-programs-'));
  marker = join(base, 'programs-started.log');
  evil = join(base, 'evil-program.sh');
  writeFileSync(evil, `#!/bin/sh\necho "started: $*" >> "${marker}"\nexit 1\n`);
  chmodSync(evil, 0o755);

  template = join(base, 'template');
  mkdirSync(template);
  writeFileSync(join(template, '.gitattributes'), '*.txt filter=evil diff=evil merge=evil\n');
  writeFileSync(join(template, 'notes.txt'), 'first\n');
  writeFileSync(join(template, 'other.txt'), 'other\n');
  gitIn(template, ['init', '-q', '-b', 'main']);
  gitIn(template, ['add', '-A']);
  gitIn(template, ['commit', '-q', '-m', 'First']);
  // Three commits signed in each format git knows: OpenPGP, X.509 and SSH.
  let head = gitIn(template, ['rev-parse', 'HEAD']);
  head = signedCommit(template, head, '-----BEGIN PGP SIGNATURE-----', '-----END PGP SIGNATURE-----', 'PGP');
  head = signedCommit(template, head, '-----BEGIN SIGNED MESSAGE-----', '-----END SIGNED MESSAGE-----', 'X509');
  head = signedCommit(template, head, '-----BEGIN SSH SIGNATURE-----', '-----END SSH SIGNATURE-----', 'SSH');
  gitIn(template, ['update-ref', 'refs/heads/main', head]);
  gitIn(template, ['tag', '-a', '-m', 'signed?', 'v1']);
  // A change in the work tree and one staged: status and diff look at both.
  writeFileSync(join(template, 'notes.txt'), 'first, changed\n');
  writeFileSync(join(template, 'other.txt'), 'other, staged\n');
  gitIn(template, ['add', 'other.txt']);
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe('git in the sandbox starts no program named by a repository, its config or the environment', () => {
  it('runs no program for any program-valued key under any allowed git command', async () => {
    const started: string[] = [];
    let runs = 0;
    let answered = 0;
    const all = cases();
    for (const [index, hostile] of all.entries()) {
      const project = join(base, `case-${index}`);
      cpSync(template, project, { recursive: true });
      for (const [key, value] of hostile.config ?? []) gitIn(project, ['config', '--local', key, value]);
      hostile.prepare?.(project);
      const homeFile = join(project, '..', 'home-of-last-case');
      const home = existsSync(homeFile) ? readFileSync(homeFile, 'utf8') : base;
      rmSync(homeFile, { force: true });
      const sandbox = await openSandbox({
        root: project,
        settings: { ...DEFAULT_SETTINGS, sandbox: { ...DEFAULT_SETTINGS.sandbox, timeoutMs: 5_000 } },
        env: { PATH: `${project}:${process.env.PATH ?? ''}`, HOME: home, ...hostile.env },
      });
      for (const command of COMMANDS) {
        const result = await sandbox.runSandboxTool('run_command', { command });
        runs += 1;
        if (!result.isError) answered += 1;
        if (existsSync(marker)) {
          started.push(`${hostile.name} × ${command}: ${readFileSync(marker, 'utf8').trim()}`);
          rmSync(marker);
        }
      }
    }
    console.info(
      `programs started ${started.length} of ${all.length} keys × ${COMMANDS.length} commands (${runs} runs, ${answered} answered)`,
    );
    expect(started).toEqual([]);
    expect(runs).toBe(all.length * COMMANDS.length);
  }, 600_000);

  it('still answers git commands in an ordinary repository', async () => {
    const project = join(base, 'plain');
    cpSync(template, project, { recursive: true });
    const sandbox = await openSandbox({ root: project, env: { PATH: process.env.PATH ?? '', HOME: base } });
    const status = await sandbox.runSandboxTool('run_command', { command: 'git status --short' });
    expect(status).toMatchObject({ isError: false });
    expect(status.content).toContain(' M notes.txt');
    expect(status.content).toContain('M  other.txt');
    const log = await sandbox.runSandboxTool('run_command', { command: 'git log --format=%s' });
    expect(log.content).toBe('SSH\nX509\nPGP\nFirst');
    const diff = await sandbox.runSandboxTool('run_command', { command: 'git diff' });
    expect(diff.content).toContain('+first, changed');
  });

  it('refuses format placeholders and options that verify signatures, before running anything', async () => {
    const project = join(base, 'plain-formats');
    cpSync(template, project, { recursive: true });
    const sandbox = await openSandbox({ root: project, env: { PATH: process.env.PATH ?? '', HOME: base } });
    for (const command of [
      'git log --format=%G?',
      'git log --format=%h%n%GS',
      'git log --pretty=format:%GK',
      'git log --pretty tformat:%GG',
      'git show --format=%GF',
      'git show --pretty=%GP HEAD',
      'git log --form=%GT',
      'git log --pre=%G?',
      'git show --show-sig',
      'git log --grep=x --format=%an%GS',
    ]) {
      const result = await sandbox.runSandboxTool('run_command', { command });
      expect(result, command).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
      expect(result.content, command).toMatch(/signature|gpg|runs other programs/i);
    }
    // A literal "%%G" is text, not a placeholder.
    const literal = await sandbox.runSandboxTool('run_command', { command: 'git log -1 --format=100%%Good' });
    expect(literal).toMatchObject({ isError: false, content: '100%Good' });
  });
});

describe('git in the sandbox reads no repository outside the project', () => {
  function outsideRepository(name: string): string {
    const folder = join(base, name);
    mkdirSync(folder);
    writeFileSync(join(folder, 'secret.txt'), 'OUTSIDE-REPOSITORY-SECRET\n');
    gitIn(folder, ['init', '-q', '-b', 'main']);
    gitIn(folder, ['add', '-A']);
    gitIn(folder, ['commit', '-q', '-m', 'Outside secret commit']);
    return folder;
  }

  async function refused(project: string, env: Record<string, string> = {}): Promise<void> {
    const sandbox = await openSandbox({ root: project, env: { PATH: process.env.PATH ?? '', HOME: base, ...env } });
    for (const command of ['git log -p', 'git show HEAD:secret.txt', 'git status', 'git rev-parse HEAD']) {
      const result = await sandbox.runSandboxTool('run_command', { command });
      expect(result.content, command).not.toContain('OUTSIDE-REPOSITORY-SECRET');
      expect(result.content, command).not.toContain('Outside secret commit');
      expect(result, command).toMatchObject({ isError: true, code: 'SANDBOX_DENIED' });
    }
  }

  it('refuses a .git file whose gitdir points outside the root', async () => {
    const outside = outsideRepository('outside-gitdir');
    const project = join(base, 'gitdir-file');
    mkdirSync(project);
    writeFileSync(join(project, '.git'), `gitdir: ${join(outside, '.git')}\n`);
    await refused(project);
    const relative = join(base, 'gitdir-relative');
    mkdirSync(relative);
    writeFileSync(join(relative, '.git'), 'gitdir: ../outside-gitdir/.git\n');
    await refused(relative);
  });

  it('refuses a linked worktree of a repository outside the root, and a .git symlink leading out', async () => {
    const outside = outsideRepository('outside-worktree');
    const project = join(base, 'linked-worktree');
    gitIn(outside, ['worktree', 'add', '-q', project]);
    await refused(project);
    const linked = join(base, 'gitdir-symlink');
    mkdirSync(linked);
    execFileSync('ln', ['-s', join(outside, '.git'), join(linked, '.git')]);
    await refused(linked);
  });

  it('refuses a repository borrowing objects from outside through objects/info/alternates', async () => {
    const outside = outsideRepository('outside-alternates');
    const project = join(base, 'alternates');
    mkdirSync(project);
    gitIn(project, ['init', '-q', '-b', 'main']);
    writeFileSync(join(project, '.git', 'objects', 'info', 'alternates'), `${join(outside, '.git', 'objects')}\n`);
    gitIn(project, ['update-ref', 'refs/heads/main', gitIn(outside, ['rev-parse', 'HEAD'])]);
    await refused(project);
  });

  it('ignores GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR and GIT_CEILING_DIRECTORIES from the parent, and -C/--git-dir words', async () => {
    const outside = outsideRepository('outside-env');
    const project = join(base, 'no-repository');
    mkdirSync(project);
    writeFileSync(join(project, 'secret.txt'), 'inside\n');
    await refused(project, {
      GIT_DIR: join(outside, '.git'),
      GIT_WORK_TREE: outside,
      GIT_COMMON_DIR: join(outside, '.git'),
      GIT_OBJECT_DIRECTORY: join(outside, '.git', 'objects'),
      GIT_ALTERNATE_OBJECT_DIRECTORIES: join(outside, '.git', 'objects'),
      GIT_CEILING_DIRECTORIES: '',
      GIT_DISCOVERY_ACROSS_FILESYSTEM: '1',
    });
    const plain = join(base, 'plain-for-words');
    cpSync(template, plain, { recursive: true });
    const sandbox = await openSandbox({ root: plain, env: { PATH: process.env.PATH ?? '', HOME: base } });
    for (const command of [
      `git -C ${outside} log`,
      `git --git-dir=${join(outside, '.git')} log`,
      `git --work-tree=${outside} status`,
      `git log --git-dir=${join(outside, '.git')}`,
      `git status --git-dir=${join(outside, '.git')}`,
    ]) {
      const result = await sandbox.runSandboxTool('run_command', { command });
      expect(result.content, command).not.toContain('Outside secret commit');
      expect(result.isError, command).toBe(true);
    }
  });
});
