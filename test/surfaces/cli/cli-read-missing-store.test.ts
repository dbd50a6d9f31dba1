import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSuiteWorkspace } from '../../support/cli-harness.js';

const workspace = useSuiteWorkspace();

describe('a read with a mistyped --store', () => {
  it('is NOT_FOUND (exit 1) and creates no file, for every read command and URL spelling', async () => {
    const real = join(workspace.root, 'real.db');
    await workspace.json(['remember', 'The staging host is stage-2.', '--store', real]);
    const typos = [
      join(workspace.root, 'rael.db'),
      `sqlite://${join(workspace.root, 'missing', 'deep.db')}`,
      'relative-typo.db',
    ];
    const reads = [
      ['list'],
      ['recall', 'staging host'],
      ['inject', 'staging host'],
      ['stats'],
      ['export'],
      ['show', 'mem_x'],
    ];
    for (const store of typos) {
      for (const command of reads) {
        const run = await workspace.run([...command, '--store', store, '--json']);
        expect(run.code, `${command[0]} ${store}`).toBe(1);
        expect(run.json().error.code).toBe('NOT_FOUND');
        expect(run.stderr).toMatch(/No store at .*: a read does not create one/);
      }
    }
    expect(existsSync(join(workspace.root, 'rael.db'))).toBe(false);
    expect(existsSync(join(workspace.root, 'missing'))).toBe(false);
    expect(existsSync(join(workspace.cwd, 'relative-typo.db'))).toBe(false);
    // The real store still reads, and a write still creates a new store where it is told to.
    expect((await workspace.json(['list', '--store', real])).total).toBe(1);
    const fresh = join(workspace.root, 'fresh.db');
    await workspace.json(['remember', 'A first memory makes the store.', '--store', fresh]);
    expect((await workspace.json(['stats', '--store', fresh])).total).toBe(1);
  });
});
