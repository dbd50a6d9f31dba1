import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, ENGRAM_BINARY, type Workspace } from '../../support/cli-harness.js';
import { startViewerFixture, type ViewerFixture } from '../../support/viewer-support.js';

// `engram ui` opens the viewer with $BROWSER (the opener the CLI documents): here a script that
// writes the arguments it was given to a file, so the test sees exactly what a browser would get.

const TOKEN = 'viewer-token-that-must-never-be-in-a-url-0123456789';
let workspace: Workspace | undefined;
let fixture: ViewerFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
  workspace?.cleanup();
  workspace = undefined;
});

function fakeBrowser(root: string): { command: string; opened: () => string | undefined } {
  const command = join(root, 'fake-browser.sh');
  const record = join(root, 'opened.txt');
  writeFileSync(command, `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\n`);
  chmodSync(command, 0o755);
  return { command, opened: () => (existsSync(record) ? readFileSync(record, 'utf8').trim() : undefined) };
}

describe('engram ui', () => {
  it('opens the running service at its root, never with the token in the URL', async () => {
    workspace = createWorkspace();
    fixture = await startViewerFixture({ token: TOKEN });
    const browser = fakeBrowser(workspace.root);
    const port = String(fixture.server.port);
    // The service's project (the fixture's): the viewer opens at the root, with nothing to say.
    const run = await workspace.run(
      ['--project=github.com/acme/app', 'ui', '--host', '127.0.0.1', '--port', port, '--json'],
      { env: { BROWSER: browser.command, ENGRAM_TOKEN: TOKEN } },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/started in/);
    const url = `http://127.0.0.1:${port}/`;
    expect(run.stdout).toContain(`engram viewer: ${url}`);
    await expect.poll(browser.opened).toBe(url);
    expect(`${run.stdout}${run.stderr}${browser.opened()}`).not.toContain(TOKEN);
    // That URL is the viewer: the page loads without the token and asks for it.
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module"');
  });

  it('in another project than the service was started in, says so and opens the viewer on this project', async () => {
    workspace = createWorkspace();
    fixture = await startViewerFixture({ token: TOKEN });
    const browser = fakeBrowser(workspace.root);
    const port = String(fixture.server.port);
    for (const [flags, project] of [
      [[], undefined],
      [['--project=acme-billing'], 'project:acme-billing'],
    ] as const) {
      const run = await workspace.run([...flags, 'ui', '--host', '127.0.0.1', '--port', port, '--json'], {
        env: { BROWSER: browser.command, ENGRAM_TOKEN: TOKEN },
      });
      expect(run.code, run.stderr).toBe(0);
      const said =
        /was started in project:github\.com\/acme\/app, not in this project \((project:[^)]+)\); the viewer opens on \1/.exec(
          run.stderr,
        );
      expect(said, run.stderr).not.toBeNull();
      if (project) expect(said![1]).toBe(project);
      const data = { project: said![1]! };
      await expect.poll(browser.opened).toBe(`http://127.0.0.1:${port}/?project=${encodeURIComponent(data.project)}`);
    }
  });

  it('says so when it cannot tell which project the service was started in (no token to ask with)', async () => {
    workspace = createWorkspace();
    fixture = await startViewerFixture({ token: TOKEN });
    const browser = fakeBrowser(workspace.root);
    const port = String(fixture.server.port);
    const run = await workspace.run(['ui', '--host', '127.0.0.1', '--port', port], {
      env: { BROWSER: browser.command },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/did not say which project it was started in/);
    await expect.poll(browser.opened).toBe(`http://127.0.0.1:${port}/`);
  });

  it('says so when no browser can be started, and prints the URL', async () => {
    workspace = createWorkspace();
    fixture = await startViewerFixture();
    const port = String(fixture.server.port);
    const run = await workspace.run(['ui', '--host', '127.0.0.1', '--port', port], {
      env: { BROWSER: join(workspace.root, 'no-such-browser') },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`engram viewer: http://127.0.0.1:${port}/`);
    expect(run.stderr).toMatch(/no browser could be started/);
  });

  it('starts a service when none answers and opens it once it listens', async () => {
    workspace = createWorkspace();
    const browser = fakeBrowser(workspace.root);
    const child = spawn(process.execPath, [ENGRAM_BINARY, 'ui', '--host', '127.0.0.1', '--port', '0'], {
      cwd: workspace.cwd,
      env: { PATH: process.env.PATH, HOME: workspace.home, ENGRAM_HOME: workspace.home, BROWSER: browser.command },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    try {
      await expect
        .poll(() => /engram viewer: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout)?.[1], { timeout: 20_000 })
        .toBeDefined();
      const url = /engram viewer: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout)![1]!;
      await expect.poll(browser.opened).toBe(url);
      expect((await fetch(url)).status).toBe(200);
      expect(((await (await fetch(new URL('/health', url))).json()) as { status: string }).status).toBe('ok');
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
