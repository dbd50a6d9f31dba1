import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../support/cli-harness.js';
import { bareRepository } from '../support/sync-machines.js';

/**
 * `engram sync` as a person runs it: an existing store and its Claude Code auto memory pushed once
 * (a second run pushes nothing), a new machine importing them, and `sync status` listing a conflict
 * that `sync resolve` settles.
 */

const workspaces: Workspace[] = [];
afterEach(() => {
  for (const workspace of workspaces.splice(0)) workspace.cleanup();
});

interface SyncedJson {
  remotes: Array<{
    status: string;
    report: { pulled: { written: number }; pushed: { written: number }; conflicts: unknown[] };
  }>;
}

function remoteFiles(remote: string): string[] {
  return execFileSync('git', ['--git-dir', remote, 'ls-tree', '-r', '--name-only', 'engram'])
    .toString()
    .split('\n')
    .filter((path) => path.startsWith('memories/'));
}

describe('engram sync from the command line', () => {
  it('an existing store and its Claude Code memory go up once; a new machine brings them down; status lists a conflict until it is resolved', async () => {
    const laptop = createWorkspace();
    const desktop = createWorkspace();
    workspaces.push(laptop, desktop);
    const remote = bareRepository(join(laptop.root, 'memories.git'));
    const env = { env: { ENGRAM_MODEL_PROVIDER: 'none', ENGRAM_PROJECT: 'demo' } };
    const written = await laptop.json(
      ['remember', 'The release train leaves on Thursdays.', '--scope', 'global'],
      0,
      env,
    );
    await laptop.json(['remember', 'Staging runs on Postgres 16.'], 0, env);
    const claude = join(laptop.home, '.claude', 'projects', laptop.cwd.replace(/[^A-Za-z0-9]/g, '-'), 'memory');
    mkdirSync(claude, { recursive: true });
    writeFileSync(join(claude, 'lint_rules.md'), 'Lint with Biome; ESLint is gone.\n');

    // The remote is named once; the Claude Code folder is imported because the user asked.
    const first = (await laptop.json(['sync', '--remote', remote, '--import-claude-code'], 0, env)) as SyncedJson;
    const pushed = first.remotes.reduce((sum, outcome) => sum + outcome.report.pushed.written, 0);
    expect(pushed).toBe(3);
    expect(remoteFiles(remote)).toHaveLength(3);
    const again = (await laptop.json(['sync', '--import-claude-code'], 0, env)) as SyncedJson;
    expect(again.remotes.every((outcome) => outcome.status === 'synced' && outcome.report.pushed.written === 0)).toBe(
      true,
    );
    expect(remoteFiles(remote)).toHaveLength(3);

    const arrived = (await desktop.json(['sync', '--remote', remote], 0, env)) as SyncedJson;
    expect(arrived.remotes.reduce((sum, outcome) => sum + outcome.report.pulled.written, 0)).toBe(3);
    expect((await desktop.json(['stats', '--all'], 0, env)).total).toBe(3);

    // The same field edited on both: the later edit is kept, the other listed.
    const id = written.memory.id as string;
    await desktop.json(['edit', id, '--content', 'The release train leaves on Wednesdays.'], 0, env);
    await desktop.json(['sync'], 0, env);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await laptop.json(['edit', id, '--content', 'The release train leaves on Fridays.'], 0, env);
    await laptop.json(['sync'], 0, env);
    const status = await laptop.run(['sync', 'status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('Conflicts to review (1)');
    expect(status.stdout).toContain(id);
    expect(status.stdout).toContain('Wednesdays');
    expect((await laptop.json(['sync', 'status'], 0, env)).conflicts).toHaveLength(1);
    await laptop.json(['sync', 'resolve', id, '--keep', 'other'], 0, env);
    expect((await laptop.json(['show', id], 0, env)).memory.content).toContain('Wednesdays');
    expect((await laptop.run(['sync', 'status'], env)).stdout).toContain('No conflicts to review.');
    await laptop.json(['sync'], 0, env);
    await desktop.json(['sync'], 0, env);
    expect((await desktop.json(['show', id], 0, env)).memory.content).toContain('Wednesdays');
  }, 120_000);
});
