import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  SKILL_MARKER_FILE,
  defaultSkillsDirectory,
  listProcedureSkills,
  removeProcedureSkills,
  renderProcedureSkill,
  syncProcedureSkills,
} from '../../../../src/surfaces/claude-code/skills/procedure-skills.js';
import { startAnthropicMessagesServer } from '../../../../src/testing/anthropic-messages-server.js';
import { claudeBinary, claudeFullSessionArgs, makeClaudeHome } from '../../../support/claude-code-headless.js';
import { openExtractionFixture, PROJECT, type ExtractionFixture } from '../../../support/extraction-support.js';

const run = promisify(execFile);
let fixture: ExtractionFixture;
let dir: string;

beforeEach(async () => {
  fixture = await openExtractionFixture();
  dir = join(fixture.directory, 'skills');
});
afterEach(async () => fixture.close());

const procedure = (name: string, content: string, extra: { scope?: string; description?: string } = {}) =>
  fixture.engram.remember({ type: 'procedure', name, content, ...extra });

describe('procedure memories as Claude Code skills', () => {
  it('writes one SKILL.md per procedure of the project and global, and nothing for other types or other projects', async () => {
    const release = await procedure('release-steps', 'Tag the commit, then run npm publish from CI.', {
      description: 'How to cut a release',
    });
    await procedure('global-review', 'Read the diff twice before approving.', { scope: 'global' });
    await procedure('elsewhere', 'Not for this project.', { scope: 'project:github.com/other/repo' });
    await fixture.engram.remember({ type: 'project', content: 'Not a procedure.' });
    const report = await syncProcedureSkills({ engram: fixture.engram, dir });
    expect(report.added.sort()).toEqual(['engram-global-review', 'engram-release-steps']);
    const text = readFileSync(join(dir, 'engram-release-steps', 'SKILL.md'), 'utf8');
    expect(text).toMatch(
      /^---\nname: engram-release-steps\ndescription: "How to cut a release"\n---\n\nTag the commit/,
    );
    expect(text).toContain(release.id);
    expect(await listProcedureSkills({ dir })).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'engram-release-steps', memoryId: release.id, scope: PROJECT }),
      ]),
    );
    expect(await syncProcedureSkills({ engram: fixture.engram, dir })).toMatchObject({
      added: [],
      updated: [],
      removed: [],
    });
  });

  it('keeps in step: an edited procedure is rewritten, a forgotten or retyped one removed', async () => {
    const steps = await procedure('release-steps', 'Tag, then publish.');
    const other = await procedure('backup-restore', 'Restore from the nightly snapshot.');
    await syncProcedureSkills({ engram: fixture.engram, dir });
    await fixture.engram.update(steps.id, { content: 'Tag, run the changelog script, then publish.' });
    await fixture.engram.forget(other.id);
    const report = await syncProcedureSkills({ engram: fixture.engram, dir });
    expect(report).toMatchObject({ updated: ['engram-release-steps'], removed: ['engram-backup-restore'] });
    expect(readFileSync(join(dir, 'engram-release-steps', 'SKILL.md'), 'utf8')).toContain('changelog script');
    expect(existsSync(join(dir, 'engram-backup-restore'))).toBe(false);
    await fixture.engram.update(steps.id, { type: 'project' });
    expect((await syncProcedureSkills({ engram: fixture.engram, dir })).removed).toEqual(['engram-release-steps']);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("never touches a user's own skill, even one with the name engram wants, and remove takes exactly engram's files", async () => {
    mkdirSync(join(dir, 'engram-release-steps'), { recursive: true });
    writeFileSync(join(dir, 'engram-release-steps', 'SKILL.md'), 'MINE');
    mkdirSync(join(dir, 'my-skill'));
    writeFileSync(join(dir, 'my-skill', 'SKILL.md'), 'ALSO MINE');
    await procedure('release-steps', 'Tag, then publish.');
    const kept = await procedure('deploy', 'Run the deploy script.');
    const report = await syncProcedureSkills({ engram: fixture.engram, dir });
    expect(report.added).toEqual(['engram-deploy']);
    expect(report.skipped).toEqual([expect.objectContaining({ name: 'engram-release-steps' })]);
    expect(readFileSync(join(dir, 'engram-release-steps', 'SKILL.md'), 'utf8')).toBe('MINE');
    // A file the user added inside engram's folder stays, with the folder.
    writeFileSync(join(dir, 'engram-deploy', 'notes.txt'), 'user notes');
    expect(await removeProcedureSkills({ dir })).toMatchObject({ removed: ['engram-deploy'] });
    expect(readFileSync(join(dir, 'engram-deploy', 'notes.txt'), 'utf8')).toBe('user notes');
    expect(existsSync(join(dir, 'engram-deploy', SKILL_MARKER_FILE))).toBe(false);
    expect(readFileSync(join(dir, 'my-skill', 'SKILL.md'), 'utf8')).toBe('ALSO MINE');
    expect(readFileSync(join(dir, 'engram-release-steps', 'SKILL.md'), 'utf8')).toBe('MINE');
    expect(kept.id).toBeTruthy();
  });

  it('hostile names and descriptions stay inside the folder and inside one YAML line; a symlinked folder is never followed', async () => {
    await procedure('weird..name_x.y', 'Do the thing.', {
      description: 'x\' name: injected "quoted" --- # not a comment \\',
    });
    const outside = join(fixture.directory, 'outside');
    mkdirSync(outside);
    writeFileSync(
      join(outside, SKILL_MARKER_FILE),
      JSON.stringify({ engram: 'procedure-skill', memoryId: 'x', scope: PROJECT, sha256: 'y' }),
    );
    mkdirSync(dir, { recursive: true });
    symlinkSync(outside, join(dir, 'engram-linked'));
    const report = await syncProcedureSkills({ engram: fixture.engram, dir });
    expect(report.added.every((name) => /^engram-[a-z0-9-]+$/.test(name))).toBe(true);
    expect(report.removed).toEqual([]);
    expect(existsSync(join(outside, SKILL_MARKER_FILE))).toBe(true);
    const text = readFileSync(join(dir, 'engram-weird-name-x-y', 'SKILL.md'), 'utf8');
    const frontmatter = text.split('---\n')[1]!;
    expect(frontmatter.split('\n').filter(Boolean)).toHaveLength(2);
    expect(frontmatter).toContain('description: "x\' name: injected \\"quoted\\" --- # not a comment \\\\"');
    await expect(syncProcedureSkills({ engram: fixture.engram, dir: '' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(defaultSkillsDirectory({ HOME: '/h' })).toBe('/h/.claude/skills');
    expect(defaultSkillsDirectory({ HOME: '/h', CLAUDE_CONFIG_DIR: '/c' })).toBe('/c/skills');
    expect(renderProcedureSkill({ ...(await procedure('plain', 'First line.\nSecond.')) }).split('\n')[2]).toBe(
      'description: "First line."',
    );
  });

  it('the real Claude Code CLI lists the synced skill with its description for the model', async () => {
    const claude = await makeClaudeHome();
    const server = await startAnthropicMessagesServer({ claudeCode: true });
    try {
      await procedure('release-steps', 'Tag the commit, then publish.', {
        description: 'How to cut a release of the app',
      });
      await syncProcedureSkills({ engram: fixture.engram, dir: join(claude.home, '.claude', 'skills') });
      await run(claudeBinary(), ['-p', ...claudeFullSessionArgs(), 'hello', '--output-format', 'json'], {
        env: claude.env(server.url),
        cwd: claude.home,
        timeout: 60_000,
      });
      const body = JSON.stringify(server.requests.at(-1)!.body);
      expect(body).toContain('engram-release-steps');
      expect(body).toContain('How to cut a release of the app');
    } finally {
      await server.close();
      await claude.close();
    }
  }, 60_000);
});
