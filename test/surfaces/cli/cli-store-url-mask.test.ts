import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactStoreUrl } from '../../../src/adapters/postgres/postgres-connection-url.js';
import { createWorkspace, runEngram, type Workspace } from '../../support/cli-harness.js';

// Issue 17, item 6: a store URL is shown (config, serve's startup line, migrate, stats) but never with its password.
let workspace: Workspace;
beforeAll(() => {
  workspace = createWorkspace();
});
afterAll(() => workspace.cleanup());

const PASSWORDS = ['Pg-S3cret!x', 'p@ss:w0rd', 'only%2Fencoded'];

describe('the Postgres password in a store URL', () => {
  it('is masked by the one function every surface uses, whatever it holds; paths pass unchanged', () => {
    for (const password of PASSWORDS) {
      const url = `postgres://app:${encodeURIComponent(password)}@db.internal:5432/engram?schema=prod`;
      const shown = redactStoreUrl(url);
      expect(shown).not.toContain(encodeURIComponent(password));
      expect(shown).toContain('***');
      expect(shown).toContain('db.internal:5432/engram');
    }
    expect(redactStoreUrl('postgresql://app@db/engram?password=Hunter2x')).not.toContain('Hunter2x');
    expect(redactStoreUrl('/home/ada/.engram/engram.db')).toBe('/home/ada/.engram/engram.db');
  });

  it('is not printed by engram config, in text or JSON, from the environment or a flag', async () => {
    for (const password of PASSWORDS) {
      const url = `postgres://app:${encodeURIComponent(password)}@db.internal:5432/engram`;
      for (const run of [
        { args: ['config', '--json'], env: { ENGRAM_STORE: url } },
        { args: ['config'], env: { ENGRAM_STORE: url } },
        { args: ['config', '--json', '--store', url], env: {} },
      ]) {
        const result = await runEngram(run.args, { cwd: workspace.cwd, home: workspace.home, env: run.env });
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout + result.stderr).not.toContain(encodeURIComponent(password));
        // The text table may cut long values on a pipe; the JSON holds the whole (masked) URL.
        if (run.args.includes('--json')) expect(result.stdout).toContain('db.internal:5432/engram');
      }
    }
  });
});
