import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSuiteWorkspace } from '../../support/cli-harness.js';

// Issue 17 item 3 from the CLI: `engram forget --purge` erases a memory with its history, and the
// store files (engram.db, -wal, -shm) hold no copy afterwards, read byte for byte.

const workspace = useSuiteWorkspace();

/** Occurrences of `needle` in the raw bytes of every file of ENGRAM_HOME. */
function rawCopies(needle: string): number {
  let count = 0;
  const pattern = Buffer.from(needle, 'utf8');
  for (const name of readdirSync(workspace.home, { recursive: true, withFileTypes: true })) {
    if (!name.isFile()) continue;
    const bytes = readFileSync(join(name.parentPath, name.name));
    for (let at = bytes.indexOf(pattern); at !== -1; at = bytes.indexOf(pattern, at + 1)) count += 1;
  }
  return count;
}

describe('engram forget --purge', () => {
  it('needs --yes without a terminal, refuses --hard with it, and leaves no copy in the store files', async () => {
    const { memory } = await workspace.json(['remember', 'Private: my landlord is Zqxvortex Holdings.']);
    await workspace.json(['remember', 'The CI runs on GitHub Actions.']);
    await workspace.json(['forget', memory.id, '--hard', '--yes']);
    expect(rawCopies('Zqxvortex')).toBeGreaterThan(0);

    const unconfirmed = await workspace.run(['forget', memory.id, '--purge']);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toMatch(/--yes/);
    const both = await workspace.run(['forget', memory.id, '--purge', '--hard', '--yes']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--hard or --purge/);

    const purged = await workspace.json(['forget', memory.id, '--purge', '--yes']);
    expect(purged).toMatchObject({ id: memory.id, action: 'purge', memoryRemoved: false, copiesCleared: true });
    expect(rawCopies('Zqxvortex')).toBe(0);
    expect(rawCopies('zqxvortex')).toBe(0);

    const again = await workspace.run(['forget', memory.id, '--purge', '--yes']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/NOT_FOUND|No memory/);
    const text = await workspace.run(['forget', (await workspace.json(['list'])).memories[0].id, '--purge', '--yes']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^Purged mem_\S+: removed 1 history entry and 0 jobs; no copy is left in the places it looked \(memory, history, full-text-index, vectors, jobs, freed-space, write-ahead-log\)\.$/m,
    );
    expect((await workspace.json(['list'])).memories).toEqual([]);
  });
});
