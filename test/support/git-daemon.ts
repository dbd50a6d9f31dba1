import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection, createServer, type AddressInfo } from 'node:net';

/** git's own daemon (the git:// protocol) on loopback, serving and taking pushes to the repositories under `root`. */
export interface GitDaemon {
  /** `git://127.0.0.1:<port>`; a repository is `${url}/<name>.git`. */
  url: string;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

export async function startGitDaemon(root: string): Promise<GitDaemon> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--export-all',
      '--enable=receive-pack',
      '--listen=127.0.0.1',
      `--port=${port}`,
      `--base-path=${root}`,
      root,
    ],
    {
      stdio: 'ignore',
      env: { ...process.env, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: '*' },
    },
  );
  for (let attempt = 0; attempt < 200 && !(await accepting(port)); attempt += 1)
    await new Promise((resolve) => setTimeout(resolve, 25));
  return {
    url: `git://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
