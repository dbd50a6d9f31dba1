import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGRAM_BINARY, useSuiteWorkspace } from '../../support/cli-harness.js';

const workspace = useSuiteWorkspace();

async function remember(text: string, ...flags: string[]): Promise<any> {
  const { memory } = await workspace.json(['remember', text, ...flags]);
  return memory;
}

describe('engram remember, recall, list, show', () => {
  it('remembers into the current project and recalls with a natural-language question', async () => {
    const memory = await remember(
      'Integration tests use the real database, no mocks.',
      '--type',
      'feedback',
      '--importance',
      '0.9',
    );
    expect(memory).toMatchObject({ type: 'feedback', importance: 0.9, scope: `project:${workspace.cwd}` });
    await remember('Deploys happen on Tuesdays after the standup.', '--scope', 'global', '--name', 'deploy-day');

    const recalled = await workspace.json(['recall', 'how', 'should', 'I', 'write', 'the', 'tests?']);
    expect(recalled.scopes).toEqual([`project:${workspace.cwd}`, 'global']);
    expect(recalled.memories.map((entry: any) => entry.memory.id)).toEqual([memory.id]);
    expect(recalled.memories[0].parts).toMatchObject({ relevance: 1, importanceWeight: 1.4 });

    const global = await workspace.json(['recall', 'when', 'are', 'deploys']);
    expect(global.memories.map((entry: any) => entry.memory.name)).toEqual(['deploy-day']);

    const human = await workspace.run(['recall', 'tests', '--explain']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/SCORE\s+RELEVANCE\s+RECENCY\s+IMPORTANCE\s+ID/);
    expect(human.stdout).toContain(memory.id);
    expect(human.stdout).not.toContain('\u001b[');
  });

  it('recall honours --scope, --type, --top-k and --min-score', async () => {
    await remember('The staging database runs PostgreSQL 15.', '--type', 'project');
    await remember('Production database backups run nightly.', '--type', 'reference', '--importance', '0.1');
    expect((await workspace.json(['recall', 'database', '--scope', 'global'])).memories).toEqual([]);
    const typed = await workspace.json(['recall', 'database', '--type', 'reference']);
    expect(typed.memories.map((entry: any) => entry.memory.type)).toEqual(['reference']);
    expect((await workspace.json(['recall', 'database', '--top-k', '1'])).memories).toHaveLength(1);
    const strict = await workspace.json(['recall', 'database', '--min-score', '0.99']);
    expect(strict.memories).toEqual([]);
    expect((await workspace.run(['recall', 'database', '--top-k', '0'])).code).toBe(2);
    expect((await workspace.run(['recall', 'database', '--min-score', 'lots'])).code).toBe(2);
  });

  it('treats full-text syntax in queries as plain words (exit 0)', async () => {
    for (const query of [
      '"foo AND (',
      'NEAR(',
      '*',
      '"unbalanced',
      'database OR',
      '- ^ : {col}',
      'AND',
      "'; DROP TABLE memories; --",
    ]) {
      const result = await workspace.run(['recall', query, '--json']);
      expect(result.code, query).toBe(0);
      expect(Array.isArray(result.json().memories), query).toBe(true);
    }
    const hit = await workspace.json(['recall', '"database AND (']);
    expect(hit.memories.length).toBeGreaterThan(0);
  });

  it('lists with filters, limit and offset, as a table or JSON', async () => {
    const listed = await workspace.json(['list']);
    expect(listed.total).toBe(4);
    expect(listed.memories.map((memory: any) => memory.scope).sort()).toContain('global');
    expect(
      (await workspace.json(['list', '--type', 'feedback,reference'])).memories
        .map((memory: any) => memory.type)
        .sort(),
    ).toEqual(['feedback', 'reference']);
    const page = await workspace.json(['list', '--limit', '2', '--offset', '1']);
    expect(page.memories).toHaveLength(2);
    expect(page.memories[0].id).toBe(listed.memories[1].id);
    expect((await workspace.json(['list', '--scope', 'global'])).total).toBe(1);
    expect((await workspace.json(['list', '--stale'])).total).toBe(0);
    expect((await workspace.json(['list', '--archived'])).total).toBe(0);
    expect((await workspace.json(['list', '--invalid'])).total).toBe(0);

    // Fitted to COLUMNS when it is set (piped without it, nothing is cut: cli-output-width.test.ts).
    const table = await workspace.run(['list'], { env: { COLUMNS: '120' } });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+SCOPE\s+NAME\s+DESCRIPTION\s+AGE\s+STATE$/);
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(120);
  });

  it('shows a memory with its history, and hides memories of other scopes unless asked', async () => {
    const memory = await remember('The user prefers tabs over spaces.', '--type', 'user', '--scope', 'user:alice');
    expect((await workspace.run(['show', memory.id])).code).toBe(1);
    const shown = await workspace.json(['show', memory.id, '--scope', 'user:alice']);
    expect(shown.memory.content).toBe('The user prefers tabs over spaces.');
    expect(shown.history).toHaveLength(1);
    expect(shown.history[0]).toMatchObject({ action: 'create', actor: 'cli' });
    const text = await workspace.run(['show', memory.id, '--scope', 'user:alice']);
    expect(text.stdout).toMatch(/History\nCHANGE\s+ACTION\s+ACTOR\s+TIME\nchg_\S+\s+create\s+cli\s+\d{4}-/);
    const missing = await workspace.run(['show', 'mem_doesnotexist']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^engram: No memory with id "mem_doesnotexist"/);
  });
});

describe('engram edit, forget, restore, undo, stats', () => {
  it('edits fields with flags and records the change', async () => {
    const memory = await remember('Use pnpm, not npm.');
    const edited = await workspace.json([
      'edit',
      memory.id,
      '--importance',
      '0.8',
      '--name',
      'package-manager',
      '--type',
      'feedback',
    ]);
    expect(edited.changed.sort()).toEqual(['importance', 'name', 'type']);
    expect(edited.memory).toMatchObject({
      importance: 0.8,
      name: 'package-manager',
      type: 'feedback',
      content: 'Use pnpm, not npm.',
    });
    const same = await workspace.json(['edit', memory.id, '--importance', '0.8']);
    expect(same.changed).toEqual([]);
    expect((await workspace.run(['edit', memory.id, '--importance', '7'])).code).toBe(2);
    expect((await workspace.json(['show', memory.id])).memory.importance).toBe(0.8);
  });

  it('edits in $EDITOR: applies changed fields, reports no changes, refuses invalid edits', async () => {
    const memory = await remember('Deploy with make release.');
    const script = join(workspace.root, 'editor.mjs');
    writeFileSync(
      script,
      `import { readFileSync, statSync, writeFileSync } from 'node:fs';
const file = process.argv[2];
if ((statSync(file).mode & 0o077) !== 0) { console.error('temp file is readable by others'); process.exit(9); }
const text = readFileSync(file, 'utf8');
const mode = process.env.EDIT_MODE;
if (mode === 'rewrite') writeFileSync(file, text.replaceAll('make release', 'make ship').replace('importance: 0.5', 'importance: 0.7'));
if (mode === 'invalid') writeFileSync(file, text.replace('importance: 0.5', 'importance: 7'));
if (mode === 'broken') writeFileSync(file, '---\\nname: [unclosed\\n');
if (mode === 'fail') process.exit(1);
`,
    );
    const editor = { EDITOR: `node ${script}` };
    const untouched = await workspace.run(['edit', memory.id], { env: { ...editor, EDIT_MODE: 'none' } });
    expect(untouched.code).toBe(0);
    expect(untouched.stdout).toMatch(/No changes/);

    for (const mode of ['invalid', 'broken', 'fail']) {
      const refused = await workspace.run(['edit', memory.id], { env: { ...editor, EDIT_MODE: mode } });
      expect(refused.code, mode).toBe(2);
      expect(refused.stderr, mode).toMatch(/^engram: /);
    }
    expect((await workspace.json(['show', memory.id])).history).toHaveLength(1);

    const rewritten = await workspace.json(['edit', memory.id], 0, { env: { ...editor, EDIT_MODE: 'rewrite' } });
    expect(rewritten.changed.sort()).toEqual(['content', 'description', 'importance']);
    expect(rewritten.memory).toMatchObject({ content: 'Deploy with make ship.', importance: 0.7 });
    expect((await workspace.run(['edit', memory.id], { env: { EDITOR: '', VISUAL: '' } })).code).toBe(2);
  });

  it('edit refuses to apply over a change made while the editor was open (compare-and-set in the update) and keeps that change', async () => {
    const memory = await remember('Releases go out on Tuesdays.');
    const script = join(workspace.root, 'racing-editor.mjs');
    writeFileSync(
      script,
      `import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
const file = process.argv[2];
// Someone else changes the memory while this editor is open.
execFileSync(process.execPath, [process.env.ENGRAM_MAIN, 'edit', process.env.RACE_ID, '--importance', '0.9'], { stdio: 'ignore' });
writeFileSync(file, readFileSync(file, 'utf8').replace('Tuesdays', 'Thursdays'));
`,
    );
    const raced = await workspace.run(['edit', memory.id], {
      env: { EDITOR: `node ${script}`, ENGRAM_MAIN: ENGRAM_BINARY, RACE_ID: memory.id },
    });
    expect(raced.code).not.toBe(0);
    expect(raced.stderr).toMatch(/changed while it was being edited; nothing was applied/);
    const shown = await workspace.json(['show', memory.id]);
    expect(shown.memory).toMatchObject({ content: 'Releases go out on Tuesdays.', importance: 0.9 });
    expect(shown.history).toHaveLength(2);
  });

  it('forget archives, restore brings back, --hard needs --yes without a terminal, undo reverts', async () => {
    const memory = await remember('The CI runs on GitHub Actions.');
    const archived = await workspace.json(['forget', memory.id]);
    expect(archived.memory.archived).toBe(true);
    expect((await workspace.json(['recall', 'CI', 'GitHub', 'Actions'])).memories).toEqual([]);
    expect((await workspace.json(['list', '--archived'])).memories.map((entry: any) => entry.id)).toContain(memory.id);
    expect((await workspace.json(['restore', memory.id])).memory.archived).toBe(false);
    expect((await workspace.run(['restore', memory.id])).code).toBe(2);

    const refused = await workspace.run(['forget', memory.id, '--hard']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--yes/);
    expect((await workspace.json(['show', memory.id])).memory.id).toBe(memory.id);

    const deleted = await workspace.json(['forget', memory.id, '--hard', '--yes']);
    expect(deleted.action).toBe('delete');
    expect((await workspace.run(['show', memory.id])).code).toBe(1);
    const undone = await workspace.json(['undo', deleted.changeId]);
    expect(undone.change.action).toBe('create');
    const back = await workspace.json(['show', memory.id]);
    expect(back.memory.content).toBe('The CI runs on GitHub Actions.');
    expect(back.history.map((entry: any) => entry.action)).toEqual([
      'create',
      'archive',
      'restore',
      'delete',
      'create',
    ]);
    expect((await workspace.run(['undo', back.history[1].id])).code).toBe(2);
    expect((await workspace.run(['undo', 'chg_nosuchchange'])).code).toBe(1);
  });

  it('counts memories by state, type and scope', async () => {
    const stats = await workspace.json(['stats']);
    expect(stats.total).toBeGreaterThanOrEqual(6);
    expect(stats.byScope).not.toHaveProperty('user:alice');
    expect((await workspace.json(['stats', '--all'])).byScope).toHaveProperty('user:alice', 1);
    expect((await workspace.run(['stats'])).stdout).toMatch(/^store\s+sqlite /m);
  });
});

describe('hostile and malformed input', () => {
  it('refuses unknown scope forms, importance 7 and bad types with exit 2, writing nothing', async () => {
    const before = (await workspace.json(['stats', '--all'])).total;
    const cases: string[][] = [
      ['remember', 'x', '--scope', 'team:x'],
      ['remember', 'x', '--scope', 'project:'],
      ['remember', 'x', '--scope', 'global,user:bob'],
      ['remember', 'x', '--importance', '7'],
      ['remember', 'x', '--importance', 'high'],
      ['remember', 'x', '--type', 'opinion'],
      ['remember', 'x', '--name', '../../etc/passwd'],
      ['remember', 'control \u0001 character'],
      ['remember', 'bell \u0007 escape \u001b[31m red'],
      ['remember'],
      ['remember', '--stdin', 'and', 'text'],
      ['list', '--scope', 'team:x'],
      ['recall', 'x', '--scope', 'project:'],
      ['list', '--limit', '-1'],
    ];
    for (const args of cases) {
      const result = await workspace.run([...args, '--json']);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.json().error.code, args.join(' ')).toMatch(/^INVALID_/);
      expect(result.stderr, args.join(' ')).toMatch(/^engram: /);
      expect(result.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
    }
    expect((await workspace.json(['stats', '--all'])).total).toBe(before);
  });

  it('refuses 10 MB of content on stdin (exit 2) and accepts a normal memory on stdin', async () => {
    const huge = await workspace.run(['remember', '--stdin', '--json'], { input: Buffer.alloc(10 * 1024 * 1024, 'a') });
    expect(huge.code).toBe(2);
    expect(huge.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    const justOver = await workspace.run(['remember', '--stdin'], { input: 'b'.repeat(64 * 1024 + 1) });
    expect(justOver.code).toBe(2);
    const nul = await workspace.run(['remember', '--stdin'], { input: 'null \u0000 byte' });
    expect(nul.code).toBe(2);
    const piped = await workspace.json(['remember', '--stdin', '--type', 'procedure'], 0, {
      input: '# Release\n\n1. Tag\n2. Push\n',
    });
    expect(piped.memory).toMatchObject({
      content: '# Release\n\n1. Tag\n2. Push',
      description: 'Release',
      type: 'procedure',
    });
  });

  it('rejects unknown commands and flags with exit 2 and no stack trace', async () => {
    for (const args of [
      ['frobnicate'],
      ['list', '--frobnicate'],
      ['recall'],
      ['show'],
      ['show', 'a', 'b'],
      ['export', '--format', 'xml'],
    ]) {
      const result = await workspace.run(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(/^engram: .+\n$/);
    }
    const json = await workspace.run(['list', '--frobnicate', '--json']);
    expect(json.json()).toEqual({ error: { code: 'INVALID_INPUT', message: expect.stringContaining('--frobnicate') } });
  });
});
