import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';
import { writeClaudeMemoryTopics } from '../../support/claude-memory-topics.js';

let workspace: Workspace;
let directory: string;

beforeEach(() => {
  workspace = createWorkspace();
  // Claude Code's auto memory, as it writes it: MEMORY.md, topic files in the current and the v2.1.120 format, one without frontmatter.
  directory = join(workspace.home, '.claude', 'projects', '-tmp-app', 'memory');
  mkdirSync(directory, { recursive: true });
  writeFileSync(
    join(directory, 'MEMORY.md'),
    '- [User role](user_role.md) — data engineer\n- [Testing](feedback_testing.md) — no mocks\n',
  );
  writeClaudeMemoryTopics(directory);
  writeFileSync(join(directory, 'deploy_window.md'), 'Deploys happen on Tuesdays after the standup.\n');
});
afterEach(() => workspace.cleanup());

/** Every file of the directory and its bytes' hash: import must leave them exactly as they were. */
function snapshot(): Record<string, string> {
  return Object.fromEntries(
    readdirSync(directory)
      .sort()
      .map((name) => [
        name,
        createHash('sha256')
          .update(readFileSync(join(directory, name)))
          .digest('hex'),
      ]),
  );
}

async function memories(): Promise<Array<{ name: string; content: string }>> {
  const listed = await workspace.json(['list']);
  return listed.memories
    .map((memory: { name: string; content: string }) => ({ name: memory.name, content: memory.content }))
    .sort((a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : 1));
}

describe('engram import of a Claude Code memory directory is idempotent', () => {
  it('adds nothing the second and third time, and never rewrites the files', async () => {
    const before = snapshot();
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 3, updated: 0, skipped: 0 });
    const first = await memories();
    expect(first).toHaveLength(3);
    for (let round = 0; round < 2; round += 1)
      expect(await workspace.json(['import', directory])).toMatchObject({ created: 0, updated: 0, skipped: 3 });
    expect(await memories()).toEqual(first);
    expect((await workspace.json(['stats', '--all'])).total).toBe(3);
    expect(snapshot()).toEqual(before);
  });

  it('an edited file updates its memory instead of adding one; Claude Code stamping modified: changes nothing', async () => {
    await workspace.json(['import', directory]);
    writeFileSync(
      join(directory, 'user_role.md'),
      '---\nname: user-role\ndescription: The user is a data engineer\nmetadata:\n  type: user\n---\n\nThe user is a data engineer who works in Rust now.\n',
    );
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 0, updated: 1, skipped: 2 });
    const role = (await memories()).find((memory) => memory.name === 'user-role');
    expect(role?.content).toContain('Rust now');
    expect((await workspace.json(['stats', '--all'])).total).toBe(3);
    // The same again, with the modified: stamp Claude Code adds when it rewrites a file: nothing to do.
    writeFileSync(
      join(directory, 'user_role.md'),
      '---\nname: user-role\ndescription: The user is a data engineer\nmodified: 2026-11-30T10:00:00.000Z\nmetadata:\n  type: user\n---\n\nThe user is a data engineer who works in Rust now.\n',
    );
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 0, updated: 0, skipped: 3 });
  });

  it('a renamed file renames its memory (one memory, not two); a file renamed under the same frontmatter name changes nothing', async () => {
    await workspace.json(['import', directory]);
    const names = (await memories()).map((memory) => memory.name);
    expect(names).toContain('deploy_window');
    renameSync(join(directory, 'deploy_window.md'), join(directory, 'release_day.md'));
    renameSync(join(directory, 'feedback_testing.md'), join(directory, 'testing.md'));
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 0, updated: 1, skipped: 2 });
    const after = await memories();
    expect(after).toHaveLength(3);
    expect(after.map((memory) => memory.name)).toContain('release_day');
    expect(after.map((memory) => memory.name)).not.toContain('deploy_window');
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 0, updated: 0, skipped: 3 });
  });

  it('the same content under another name is one memory, in the first import and in later ones', async () => {
    writeFileSync(join(directory, 'copy_of_deploys.md'), 'Deploys happen on Tuesdays  after the standup.\n');
    const first = await workspace.json(['import', directory]);
    expect(first).toMatchObject({ created: 3, skipped: 1 });
    expect(first.warnings.join('\n')).toMatch(/same content/);
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 0, updated: 0, skipped: 4 });
    expect((await workspace.json(['stats', '--all'])).total).toBe(3);
    // A new file with new content is still imported.
    writeFileSync(join(directory, 'oncall.md'), 'The on-call rotation changes every Monday.\n');
    expect(await workspace.json(['import', directory])).toMatchObject({ created: 1, updated: 0, skipped: 4 });
  });

  it('an engram export (ids in the files) still imports by id: twice adds nothing', async () => {
    await workspace.json(['import', directory]);
    const exported = join(workspace.root, 'exported');
    await workspace.json(['export', '--format', 'claude', '--dir', exported]);
    expect(await workspace.json(['import', exported])).toMatchObject({ created: 0, skipped: 3 });
    expect((await workspace.json(['stats', '--all'])).total).toBe(3);
  });

  it("import --claude-code finds this project's auto memory by Claude Code's slug rule, and says where it looked when there is none", async () => {
    const own = join(workspace.home, '.claude', 'projects', workspace.cwd.replace(/[^A-Za-z0-9]/g, '-'), 'memory');
    mkdirSync(own, { recursive: true });
    writeFileSync(join(own, 'staging_db.md'), 'The staging database is Postgres 15.\n');
    expect(await workspace.json(['import', '--claude-code'])).toMatchObject({ created: 1, path: own });
    expect(await workspace.json(['import', '--claude-code'])).toMatchObject({ created: 0, skipped: 1 });
    const other = createWorkspace();
    try {
      const missing = await other.run(['import', '--claude-code']);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('no Claude Code auto memory');
    } finally {
      other.cleanup();
    }
  });
});

describe('engram skills', () => {
  it('sync writes procedures as skills in --dir, list shows them, remove takes them away; a bad action is refused', async () => {
    const skills = join(workspace.root, 'skills');
    await workspace.json([
      'remember',
      'Tag the commit, then publish from CI.',
      '--type',
      'procedure',
      '--name',
      'release',
    ]);
    expect(await workspace.json(['skills', 'sync', '--dir', skills])).toMatchObject({ added: ['engram-release'] });
    expect(readFileSync(join(skills, 'engram-release', 'SKILL.md'), 'utf8')).toContain('name: engram-release');
    expect((await workspace.json(['skills', 'list', '--dir', skills])).skills).toEqual([
      expect.objectContaining({ name: 'engram-release' }),
    ]);
    expect(await workspace.json(['skills', 'sync', '--dir', skills])).toMatchObject({
      added: [],
      unchanged: ['engram-release'],
    });
    expect(await workspace.json(['skills', 'remove', '--dir', skills])).toMatchObject({ removed: ['engram-release'] });
    expect(readdirSync(skills)).toEqual([]);
    for (const args of [['skills'], ['skills', 'nuke'], ['skills', 'sync', 'extra']])
      expect((await workspace.run(args)).code).toBe(2);
  });
});
