import { globalSettingFlags, noPositionals, type CommandDefinition } from '../cli-command.js';
import { packageVersion } from '../../../kernel/node/package-version.js';

/** `engram mcp`: serve the memory tools over stdio (for MCP clients that spawn engram). */
export const mcpCommand: CommandDefinition = {
  name: 'mcp',
  summary: 'Serve the memory tools over stdio (for MCP clients that spawn engram)',
  usage: 'mcp [options]',
  options: {},
  details:
    'stdout carries the MCP protocol; diagnostics go to stderr. Reads and writes the current project and global.',
  async run(invocation) {
    const { global, io } = invocation;
    noPositionals(invocation);
    const { runStdioMcpServer } = await import('../../mcp/stdio-mcp-server.js');
    await runStdioMcpServer({ cwd: io.cwd, env: io.env, flags: globalSettingFlags(global), version: packageVersion() });
    // stdout belongs to the protocol: nothing else may be printed there.
    return { data: null, text: '', printed: true };
  },
};
