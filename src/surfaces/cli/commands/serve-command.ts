import { noPositionals, stringOption, type CommandDefinition } from '../cli-command.js';
import { globalSettingFlags } from '../cli-engram.js';

/** `engram serve`: run the HTTP service: JSON REST API and MCP at /mcp. */
export const serveCommand: CommandDefinition = {
  name: 'serve',
  summary: 'Run the HTTP service: JSON REST API and MCP at /mcp',
  usage: 'serve [--host <host>] [--port <port>] [--token <token>] [options]',
  options: {
    host: {
      type: 'string',
      valueName: 'host',
      description: 'Address to bind (setting server.host, default 127.0.0.1); beyond loopback a token is required',
    },
    port: {
      type: 'string',
      valueName: 'port',
      description: 'Port (setting server.port, default 7437; 0 picks a free one)',
    },
    token: {
      type: 'string',
      valueName: 'token',
      description: 'Bearer token required on every request (setting server.token; prefer ENGRAM_TOKEN)',
    },
  },
  details: 'Runs until SIGINT or SIGTERM, then finishes in-flight requests and exits.',
  async run(invocation) {
    const { values, global, io } = invocation;
    noPositionals(invocation);
    const { runServeCommand } = await import('../../http/http-service.js');
    await runServeCommand({
      cwd: io.cwd,
      env: io.env,
      flags: globalSettingFlags(global, {
        'server.host': stringOption(values, 'host'),
        'server.port': stringOption(values, 'port'),
        'server.token': stringOption(values, 'token'),
      }),
      format: global.json ? 'json' : 'text',
      stdout: io.stdout,
      stderr: io.stderr,
    });
    return { data: null, text: '', printed: true };
  },
};
