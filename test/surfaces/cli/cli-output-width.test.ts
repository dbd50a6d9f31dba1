import { describe, expect, it } from 'vitest';
import { outputColumns } from '../../../src/surfaces/cli/cli-io.js';
import { useSuiteWorkspace } from '../../support/cli-harness.js';

const workspace = useSuiteWorkspace();

describe('table width', () => {
  it('is the terminal width on a terminal, COLUMNS when set, and unbounded when piped', () => {
    expect(outputColumns({ isTerminal: true, terminalColumns: 100, env: {} })).toBe(100);
    expect(outputColumns({ isTerminal: true, terminalColumns: 12, env: {} })).toBe(40);
    expect(outputColumns({ isTerminal: true, terminalColumns: undefined, env: {} })).toBe(120);
    expect(outputColumns({ isTerminal: false, terminalColumns: undefined, env: {} })).toBe(Number.POSITIVE_INFINITY);
    expect(outputColumns({ isTerminal: false, terminalColumns: undefined, env: { COLUMNS: '200' } })).toBe(200);
    for (const bad of ['', 'wide', '-5', '0', '1e400'])
      expect(outputColumns({ isTerminal: false, terminalColumns: undefined, env: { COLUMNS: bad } }), bad).toBe(
        Number.POSITIVE_INFINITY,
      );
  });

  it('piped tables keep whole values: list and recall are not cut at any width', async () => {
    const long = `The release checklist lives in docs/release.md and ${'covers every step of the staged rollout '.repeat(6)}end.`;
    const description = `Release checklist: ${'staged rollout, '.repeat(7)}sign-off`;
    await workspace.json([
      'remember',
      long,
      '--name',
      'release-checklist-with-a-rather-long-descriptive-name',
      '--description',
      description,
    ]);
    for (const args of [['list'], ['recall', 'release checklist staged rollout']]) {
      const piped = await workspace.run(args, { env: { COLUMNS: '' } });
      expect(piped.code, args.join(' ')).toBe(0);
      expect(piped.stdout, args.join(' ')).toContain('release-checklist-with-a-rather-long-descriptive-name');
      if (args[0] === 'list') expect(piped.stdout).toContain(description);
      expect(Math.max(...piped.stdout.split('\n').map((line) => line.length)), args.join(' ')).toBeGreaterThan(120);
    }
    // COLUMNS still narrows a piped table on purpose.
    const narrow = await workspace.run(['list'], { env: { COLUMNS: '60' } });
    expect(narrow.code).toBe(0);
    expect(narrow.stdout).not.toContain(description);
    expect(narrow.stdout).toContain('…');
  });
});
