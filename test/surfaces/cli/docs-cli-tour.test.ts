import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useSuiteWorkspace } from '../../support/cli-harness.js';
import { shellWords } from '../../support/markdown-examples.js';

// docs/cli.md's list of every command must run as written: a user copies these lines. Each
// `engram …` line of its first code block that needs no model, server or editor runs here, in
// order, in a fresh workspace, with <id> and <change-id> filled in, and must exit 0.
const PAGE = readFileSync(fileURLToPath(new URL('../../../docs/cli.md', import.meta.url)), 'utf8');
// Lines that start a long-running service, need a model or an embedder, a file that is not there, or ask.
const NOT_RUN = /^engram (?:(?:serve|mcp|chat|extract|migrate|eval|reindex)\b|edit <id>$)/;

/** The list's `engram` lines, comments removed. */
function tourLines(): string[] {
  const start = PAGE.indexOf('## Every command at a glance');
  const fence = PAGE.indexOf('```sh', start);
  const end = PAGE.indexOf('```', fence + 5);
  return PAGE.slice(fence + 5, end)
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('engram '));
}

const workspace = useSuiteWorkspace();

describe("docs/cli.md's list of every command", () => {
  it('runs line by line as written (ids filled in from the first memory)', async () => {
    const lines = tourLines();
    expect(lines.length).toBeGreaterThan(20);
    let id = '';
    const ran: string[] = [];
    for (const line of lines) {
      if (NOT_RUN.test(line)) continue;
      // The change to undo is the latest of a memory still there (after `forget --hard` the tour's is gone).
      let change = '';
      if (line.includes('<change-id>')) {
        const shown = await workspace.run(['show', id, '--json']);
        if (shown.code === 0) change = shown.json().history.at(-1).id;
      }
      const args = shellWords(line)
        .slice(1)
        .map((word) => (word === '<id>' ? id : word === '<change-id>' ? change : word));
      if (args.includes('')) continue;
      const result = await workspace.run(args, { env: { VISUAL: '', EDITOR: '' } });
      expect(result.code, `${line}\n${result.stderr}`).toBe(0);
      ran.push(line);
      if (args[0] === 'remember' && id === '') {
        const listed = await workspace.json(['list']);
        id = listed.memories[0].id;
      }
    }
    expect(ran).toEqual(expect.arrayContaining([expect.stringMatching(/^engram list --type feedback --archived/)]));
    expect(ran.length).toBeGreaterThan(15);
    expect(existsSync(join(workspace.cwd, 'memories.jsonl'))).toBe(true);
  });
});
