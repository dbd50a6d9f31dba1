import { spawn } from 'node:child_process';
import { noPositionals, stringOption, type CommandDefinition } from '../cli-command.js';
import { globalSettingFlags } from '../cli-engram.js';
import type { CliIo } from '../cli-io.js';
import { loadSettings } from '../../../node/load-settings.js';

/** `engram ui`: open the web viewer in the default browser, starting the service when none answers. */
export const uiCommand: CommandDefinition = {
  name: 'ui',
  summary: 'Open the web viewer (memories, search, injection preview, history) in the browser',
  usage: 'ui [--host <host>] [--port <port>]',
  options: {
    host: { type: 'string', valueName: 'host', description: 'Address of the service (setting server.host)' },
    port: { type: 'string', valueName: 'port', description: 'Port of the service (setting server.port)' },
  },
  details: [
    'Opens http://<host>:<port>/ when an engram service answers there; otherwise starts one (like "engram serve")',
    'and opens the page once it listens. The browser is $BROWSER when set ("none" only prints the URL), else',
    'xdg-open (Linux), open (macOS) or start (Windows); without one, the URL is printed. The token, when the',
    'service has one, is never put in the URL: the page asks for it.',
  ].join('\n'),
  async run(invocation) {
    const { values, global, io } = invocation;
    noPositionals(invocation);
    const flags = globalSettingFlags(global, {
      'server.host': stringOption(values, 'host'),
      'server.port': stringOption(values, 'port'),
    });
    const { settings, project } = loadSettings({ cwd: io.cwd, env: io.env, flags });
    const { host, port } = settings.server;
    if (port !== 0) {
      const url = `http://${browserHost(host)}:${port}/`;
      if (await answersAsEngram(url)) {
        const serviceProject = await serviceProjectOf(url, settings.server.token || undefined);
        if (serviceProject === undefined || serviceProject === project.scope) {
          if (serviceProject === undefined)
            io.stderr.write(
              `engram: the service at ${url} did not say which project it was started in (it wants its token); the viewer's header shows the project it shows.\n`,
            );
          openInBrowser(url, io);
          return { data: { url, started: false, project: project.scope, serviceProject }, text: '', printed: true };
        }
        // Started in another project: say so, and open the viewer on this one (it can show any project the store holds).
        io.stderr.write(
          `engram: the service at ${url} was started in ${serviceProject}, not in this project (${project.scope}); the viewer opens on ${project.scope} and its header picks any project the store holds. Stop that service and run "engram ui" here to serve this project.\n`,
        );
        const opened = `${url}?project=${encodeURIComponent(project.scope)}`;
        openInBrowser(opened, io);
        return {
          data: { url: opened, started: false, project: project.scope, serviceProject },
          text: '',
          printed: true,
        };
      }
    }
    const { runServeCommand } = await import('../../http/http-service.js');
    await runServeCommand({
      cwd: io.cwd,
      env: io.env,
      flags,
      format: global.json ? 'json' : 'text',
      stdout: io.stdout,
      stderr: io.stderr,
      onListening: (server) => openInBrowser(`http://${browserHost(host)}:${server.port}/`, io),
    });
    return { data: null, text: '', printed: true };
  },
};

/** Where a browser on this machine reaches a service bound to `host` (any-address binds answer on loopback). */
function browserHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '[::]') return '127.0.0.1';
  if (host.includes(':') && !host.startsWith('[')) return `[${host}]`;
  return host;
}

async function answersAsEngram(url: string): Promise<boolean> {
  try {
    const response = await fetch(new URL('/health', url), { signal: AbortSignal.timeout(1_000) });
    // A service with a token answers 401 with its own error shape: still engram, the page asks for the token.
    const body = (await response.json()) as { status?: unknown; error?: { code?: unknown } };
    return body.status === 'ok' || body.error?.code === 'UNAUTHORIZED';
  } catch {
    return false;
  }
}

/** The project the service at `url` was started in (GET /v1/info), or undefined when it will not say. */
async function serviceProjectOf(url: string, token: string | undefined): Promise<string | undefined> {
  try {
    const response = await fetch(new URL('/v1/info', url), {
      signal: AbortSignal.timeout(2_000),
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { readScopes?: unknown; defaultScope?: unknown };
    const scopes = Array.isArray(body.readScopes) ? body.readScopes : [];
    const found = scopes.find((scope): scope is string => typeof scope === 'string' && scope.startsWith('project:'));
    return found ?? (typeof body.defaultScope === 'string' ? body.defaultScope : undefined);
  } catch {
    return undefined;
  }
}

/** Opens the URL with $BROWSER or the platform's opener; prints it either way, and says so when nothing opened it. */
function openInBrowser(url: string, io: Pick<CliIo, 'env' | 'stdout' | 'stderr'>): void {
  io.stdout.write(`engram viewer: ${url}\n`);
  const chosen = io.env.BROWSER;
  if (chosen === 'none') return;
  const [command, ...args] =
    chosen !== undefined && chosen !== ''
      ? [chosen, url]
      : process.platform === 'darwin'
        ? ['open', url]
        : process.platform === 'win32'
          ? ['cmd', '/c', 'start', '""', url]
          : ['xdg-open', url];
  try {
    const child = spawn(command!, args, { stdio: 'ignore', detached: true });
    child.once('error', () =>
      io.stderr.write(`engram: no browser could be started (${command}); open ${url} yourself.\n`),
    );
    child.unref();
  } catch {
    io.stderr.write(`engram: no browser could be started (${command}); open ${url} yourself.\n`);
  }
}
