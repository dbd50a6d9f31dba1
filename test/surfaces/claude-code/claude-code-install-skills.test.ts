import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useWorkspace, type Workspace } from '../../support/cli-harness.js';
import { HOOK_LAUNCHER } from '../../support/claude-code-harness.js';
import { hookEnv } from '../../support/claude-code-hook-run.js';

function sessionStart(workspace: Workspace): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HOOK_LAUNCHER, 'hook', 'session-start', '--from', 'engram-plugin'], {
      cwd: workspace.cwd,
      env: hookEnv(workspace),
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.on('error', reject);
    child.on('close', resolve);
    child.stdin.end(
      `${JSON.stringify({ session_id: 'sess-s', cwd: workspace.cwd, hook_event_name: 'SessionStart', source: 'startup' })}\n`,
    );
  });
}

const engramSkills = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.startsWith('engram-'))
        .sort()
    : [];

describe('engram install claude-code --skills', () => {
  const workspace = useWorkspace();

  it("renders the project's procedures in the project and global ones for the user, follows them at session start, and uninstall removes only engram's", async () => {
    const release = await workspace.json([
      'remember',
      'To cut a release: bump the version, run npm test, tag it and push the tag.',
      '--type',
      'procedure',
      '--name',
      'cut-a-release',
    ]);
    await workspace.json([
      'remember',
      'To review a pull request: read the tests first, then the diff.',
      '--type',
      'procedure',
      '--name',
      'review-a-pull-request',
      '--scope',
      'global',
    ]);
    const projectSkills = join(workspace.cwd, '.claude', 'skills');
    const userSkills = join(workspace.home, '.claude', 'skills');
    // A skill of the user's own, with the name engram would pick: never touched.
    mkdirSync(join(userSkills, 'engram-mine'), { recursive: true });
    writeFileSync(
      join(userSkills, 'engram-mine', 'SKILL.md'),
      '---\nname: engram-mine\ndescription: mine\n---\nmine\n',
    );

    const installed = await workspace.json(['install', 'claude-code', '--skills']);
    expect(installed.skills.map((report: { dir: string }) => report.dir)).toEqual([projectSkills, userSkills]);
    expect(engramSkills(projectSkills)).toHaveLength(1);
    expect(readFileSync(join(projectSkills, engramSkills(projectSkills)[0]!, 'SKILL.md'), 'utf8')).toContain(
      'tag it and push the tag',
    );
    expect(engramSkills(userSkills)).toHaveLength(2);
    expect(readFileSync(join(userSkills, 'engram-mine', 'SKILL.md'), 'utf8')).toContain('mine');

    // Forgotten: the next session start takes its skill away; a new procedure gets one.
    await workspace.json(['forget', release.memory?.id ?? release.id]);
    await workspace.json([
      'remember',
      'To rotate the logs: gzip them and keep ten.',
      '--type',
      'procedure',
      '--name',
      'rotate-logs',
    ]);
    expect(await sessionStart(workspace)).toBe(0);
    const now = engramSkills(projectSkills);
    expect(now).toHaveLength(1);
    expect(readFileSync(join(projectSkills, now[0]!, 'SKILL.md'), 'utf8')).toContain('gzip');

    await workspace.json(['uninstall', 'claude-code']);
    expect(engramSkills(projectSkills)).toEqual([]);
    expect(engramSkills(userSkills)).toEqual(['engram-mine']);
  });
});
