import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A git host on loopback: git's own smart HTTP server (`git http-backend`, as CGI) serving the bare
 * repositories under `root`, so a client that clones with `--depth 1` (Claude Code's marketplace
 * add does) works as it would against GitHub.
 */
export interface GitHttpServer {
  /** `http://127.0.0.1:<port>`; a repository is `${url}/<name>.git`. */
  url: string;
  close(): Promise<void>;
}

export async function startGitHttpServer(
  root: string,
  options: { receivePack?: boolean } = {},
): Promise<GitHttpServer> {
  const server = createServer((request, response) => serve(root, request, response, options.receivePack === true));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function serve(root: string, request: IncomingMessage, response: ServerResponse, receivePack: boolean): void {
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  const header = (name: string): string => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(', ') : (value ?? '');
  };
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      // The repositories belong to whoever runs the tests; a CI user may differ from their owner.
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'safe.directory',
      GIT_CONFIG_VALUE_0: '*',
      REQUEST_METHOD: request.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: header('content-type'),
      ...(request.headers['content-length'] !== undefined && { CONTENT_LENGTH: header('content-length') }),
      HTTP_CONTENT_ENCODING: header('content-encoding'),
      GIT_PROTOCOL: header('git-protocol'),
      REMOTE_ADDR: '127.0.0.1',
      // git http-backend takes pushes only from an authenticated user; a push test names one.
      ...(receivePack && { REMOTE_USER: 'engram-test' }),
    },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  request.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let started = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (started) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    started = true;
    let status = 200;
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 200;
      else response.setHeader(name, value);
    }
    response.writeHead(status);
    response.write(head.subarray(end + 4));
  });
  child.on('close', () => {
    if (!started) response.writeHead(502);
    response.end();
  });
  child.on('error', () => {
    if (!response.headersSent) response.writeHead(500);
    response.end();
  });
}
