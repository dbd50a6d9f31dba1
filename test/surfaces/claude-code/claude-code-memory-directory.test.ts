import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claudeCodeConfigDirectory,
  claudeCodeProjectSlug,
  findClaudeCodeMemoryDirectory,
} from '../../../src/surfaces/claude-code/claude-code-memory-directory.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe("Claude Code's auto-memory folder of a project", () => {
  it('slugs the project root as Claude Code does: every character outside [A-Za-z0-9] becomes -', () => {
    expect(claudeCodeProjectSlug('/home/me/projects/app')).toBe('-home-me-projects-app');
    expect(claudeCodeProjectSlug('/tmp/my app_v1.2')).toBe('-tmp-my-app-v1-2');
    expect(claudeCodeProjectSlug(`/${'a'.repeat(300)}`)).toHaveLength(200);
    expect(claudeCodeConfigDirectory({ HOME: '/h' })).toBe('/h/.claude');
    expect(claudeCodeConfigDirectory({ HOME: '/h', CLAUDE_CONFIG_DIR: '/c' })).toBe('/c');
  });

  it('finds the folder when it exists, a long root by its 200-character prefix, and guesses nothing when two match', async () => {
    const home = mkdtempSync(join(tmpdir(), 'engram-cc-memdir-'));
    roots.push(home);
    const env = { HOME: home };
    const short = '/work/app';
    expect(await findClaudeCodeMemoryDirectory({ projectRoot: short, env })).toEqual({
      expected: join(home, '.claude', 'projects', '-work-app', 'memory'),
    });
    mkdirSync(join(home, '.claude', 'projects', '-work-app', 'memory'), { recursive: true });
    expect((await findClaudeCodeMemoryDirectory({ projectRoot: short, env })).directory).toBe(
      join(home, '.claude', 'projects', '-work-app', 'memory'),
    );
    const long = `/${'deep/'.repeat(50)}app`;
    const prefix = long.replace(/[^A-Za-z0-9]/g, '-').slice(0, 200);
    mkdirSync(join(home, '.claude', 'projects', `${prefix}-k3j2h1`, 'memory'), { recursive: true });
    expect((await findClaudeCodeMemoryDirectory({ projectRoot: long, env })).directory).toBe(
      join(home, '.claude', 'projects', `${prefix}-k3j2h1`, 'memory'),
    );
    mkdirSync(join(home, '.claude', 'projects', `${prefix}-zzzz`, 'memory'), { recursive: true });
    expect((await findClaudeCodeMemoryDirectory({ projectRoot: long, env })).directory).toBeUndefined();
  });
});
