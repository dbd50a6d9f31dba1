import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeBinary, hookContext, requestsOf, useClaudeWorld } from '../../support/claude-code-harness.js';
import { startGitHttpServer, type GitHttpServer } from '../../support/git-http-server.js';

const run = promisify(execFile);
const REPOSITORY = join(import.meta.dirname, '..', '..', '..');

// The git marketplace path (FORMATS.md §1.6): Claude Code clones the marketplace, copies the plugin
// folder alone into its cache and runs `npm ci --ignore-scripts` there. The release that
// scripts/build-plugin-release.mjs makes is pushed to a git host on loopback (git's own smart HTTP
// server) and installed with the real Claude Code CLI, as a user would from GitHub. The plugin's
// `npm ci` fetches the SQLite addon and sqlite-vec from the npm registry.
describe('the engram plugin installed from a git marketplace', () => {
  const { server, world } = useClaudeWorld();
  let git: GitHttpServer;

  beforeAll(async () => {
    git = await startGitHttpServer(world.project('git-host'));
  });
  afterAll(async () => {
    await git?.close();
  });

  it('installs with `plugin marketplace add <git url>`, runs from its own copy with no engram checkout, and injects what was remembered', async () => {
    const release = world.project('release');
    const built = await run(process.execPath, [join(REPOSITORY, 'scripts', 'build-plugin-release.mjs'), release]);
    expect(built.stdout).toContain('Claude Code marketplace');
    const commit = ['-c', 'user.name=engram', '-c', 'user.email=engram@example.invalid'];
    await run('git', ['init', '-q', release]);
    await run('git', ['-C', release, 'add', '-A']);
    await run('git', ['-C', release, ...commit, 'commit', '-q', '-m', 'engram plugin release']);
    await run('git', ['clone', '-q', '--bare', release, join(world.root, 'git-host', 'engram.git')]);

    // The plugin's npm ci uses the machine's npm cache, as it would for a user who has used npm before.
    const npmCache = join(homedir(), '.npm');
    const claude = (args: string[]) =>
      run(claudeBinary(), args, {
        cwd: world.root,
        env: { ...world.env, ANTHROPIC_BASE_URL: `${server.url}/setup`, npm_config_cache: npmCache },
        timeout: 120_000,
      });
    await claude(['plugin', 'marketplace', 'add', `${git.url}/engram.git`]);
    const installed = await claude(['plugin', 'install', 'engram@engram']);
    expect(installed.stdout).toContain('Successfully installed');

    // The copy Claude Code runs: the plugin folder alone, with the bundle and the npm-installed addon.
    const cache = join(world.home, '.claude', 'plugins', 'cache', 'engram', 'engram');
    const [version] = readdirSync(cache);
    const copy = join(cache, version!);
    expect(existsSync(join(copy, 'runtime', 'main.js'))).toBe(true);
    // The addon is what Node 20 needs (Node 22.13+ has node:sqlite built in, and npm may skip the addon there).
    const [major, minor] = process.versions.node.split('.').map(Number);
    if (major! < 22 || (major === 22 && minor! < 13))
      expect(existsSync(join(copy, 'node_modules', '@photostructure', 'sqlite', 'package.json'))).toBe(true);

    // `engram` through the copied plugin's launcher (what its skills and MCP server run).
    const project = world.project('gamma');
    const launcher = join(copy, 'scripts', 'engram.mjs');
    const engram = (args: string[]) => run(process.execPath, [launcher, ...args], { cwd: project, env: world.env });
    await engram(['remember', 'The gamma service deploys from the release-train branch.', '--type', 'project']);
    expect((await engram(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);

    const answered = await world.claude(['Which branch does the gamma service deploy from?'], {
      cwd: project,
      prefix: 'g1',
    });
    expect(answered.code, answered.stderr).toBe(0);
    const [request] = requestsOf(server, 'g1');
    expect(hookContext(request!, 'UserPromptSubmit')).toContain('release-train');
    expect(hookContext(request!, 'SessionStart')).toContain('Long-term memory');
  }, 240_000);
});
