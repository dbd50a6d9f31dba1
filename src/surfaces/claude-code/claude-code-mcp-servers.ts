import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { claudeCodePaths } from './claude-code-install.js';

/**
 * engram's MCP server added to Claude Code another way than the plugin (`claude mcp add … engram
 * mcp`, or an `.mcp.json` entry): with the plugin enabled too, Claude Code starts both and lists
 * every memory tool twice. Install and `engram status` find them here and say how to remove them;
 * engram never edits Claude Code's own state file (`~/.claude.json`), which running sessions rewrite.
 */
export interface OtherEngramMcpServer {
  /** The server's name in Claude Code. */
  name: string;
  /** `local` (this project, in ~/.claude.json), `user` (every project, in ~/.claude.json) or `project` (.mcp.json). */
  scope: 'local' | 'user' | 'project';
  file: string;
  /** What it runs: the command line, or the URL of `engram serve`'s MCP endpoint. */
  runs: string;
  /** The command that removes it. */
  remove: string;
}

type ServerEntry = { type?: unknown; command?: unknown; args?: unknown; url?: unknown };

/**
 * The MCP servers outside the plugin that run engram for this project: a stdio server whose command
 * line runs engram with `mcp`, or an HTTP server at `engram serve`'s `/mcp` on loopback.
 * Unreadable files count as none (status reports Claude Code's own settings problems elsewhere).
 */
export function otherEngramMcpServers(
  env: Record<string, string | undefined>,
  projectRoot: string,
  options: { cwd?: string; servePort?: number } = {},
): OtherEngramMcpServer[] {
  const paths = claudeCodePaths(env, projectRoot);
  // Claude Code keeps its state (MCP servers of the user and local scopes) in .claude.json: in
  // CLAUDE_CONFIG_DIR when that is set, else in the home folder.
  const stateFile =
    env.CLAUDE_CONFIG_DIR && env.CLAUDE_CONFIG_DIR !== ''
      ? join(paths.configDir, '.claude.json')
      : join(resolve(paths.configDir, '..'), '.claude.json');
  const found: OtherEngramMcpServer[] = [];
  const add = (servers: unknown, scope: OtherEngramMcpServer['scope'], file: string): void => {
    if (servers === null || typeof servers !== 'object' || Array.isArray(servers)) return;
    for (const [name, entry] of Object.entries(servers as Record<string, ServerEntry>)) {
      const runs = engramRun(entry, options.servePort ?? 7437);
      if (runs) found.push({ name, scope, file, runs, remove: `claude mcp remove ${shellWord(name)} -s ${scope}` });
    }
  };
  const state = readJson(stateFile);
  add(state?.mcpServers, 'user', stateFile);
  const projects = state?.projects as Record<string, { mcpServers?: unknown }> | undefined;
  for (const folder of new Set([projectRoot, options.cwd].filter((path): path is string => path !== undefined)))
    add(projects?.[folder]?.mcpServers, 'local', stateFile);
  const projectFile = join(projectRoot, '.mcp.json');
  add(readJson(projectFile)?.mcpServers, 'project', projectFile);
  return found;
}

/** What to tell a user who has both: the plugin's server stays, the other goes. */
export function duplicateServerWarning(other: OtherEngramMcpServer): string {
  return (
    `Claude Code also starts engram's MCP server as "${other.name}" (${other.scope} scope, ${other.file}: ${other.runs}), ` +
    `and the engram plugin brings the same server, so every memory tool would be listed twice. ` +
    `Remove the other one: ${other.remove}`
  );
}

/** What an MCP server entry runs, when it is engram's server; else undefined. */
function engramRun(entry: ServerEntry, servePort: number): string | undefined {
  if (entry === null || typeof entry !== 'object') return undefined;
  if (typeof entry.url === 'string') {
    try {
      const url = new URL(entry.url);
      const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
      return loopback && url.pathname.replace(/\/$/, '') === '/mcp' && Number(url.port) === servePort
        ? entry.url
        : undefined;
    } catch {
      return undefined;
    }
  }
  if (typeof entry.command !== 'string') return undefined;
  const words = [
    entry.command,
    ...(Array.isArray(entry.args) ? entry.args.filter((arg) => typeof arg === 'string') : []),
  ];
  const runsEngram = words.some((word) => /(^|[\\/])engram(\.m?js)?$/.test(word) || inEngramPackage(word));
  return runsEngram && words.includes('mcp') ? words.join(' ') : undefined;
}

/** Whether a path is a file of the engram package (its binary run by path, from a checkout of any name). */
function inEngramPackage(word: string): boolean {
  if (!isAbsolute(word) || !existsSync(word)) return false;
  for (let folder = dirname(word), depth = 0; depth < 8; folder = dirname(folder), depth += 1) {
    const manifest = readJson(join(folder, 'package.json'));
    if (manifest) return manifest.name === 'engram';
    if (dirname(folder) === folder) break;
  }
  return false;
}

function readJson(file: string): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const value: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function shellWord(word: string): string {
  return /^[A-Za-z0-9._-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
