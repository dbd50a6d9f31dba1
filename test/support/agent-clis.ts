import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The coding agents' CLIs the tests run, installed by scripts/install-agent-clis.sh at the versions
 * pinned in agent-clis.json (test/support/agent-clis.md has what each does headless). A test asks
 * for one and skips, saying why, when it is not installed; with CI=true a missing CLI fails the run
 * (CI installs them), as the Postgres tests do.
 */

export type AgentCliName = 'codex' | 'gemini' | 'opencode' | 'copilot' | 'qwen';

interface PinnedCli {
  package: string;
  version: string;
  /** Inside the prefix; `{platform}`/`{arch}` as OpenCode's platform packages name them. */
  bin: string;
  /** A Node script (run with this Node), else a native binary. */
  node?: boolean;
}

const PINNED = JSON.parse(readFileSync(new URL('./agent-clis.json', import.meta.url), 'utf8')) as Record<
  AgentCliName,
  PinnedCli
>;

/** A located CLI: the command and leading arguments that run it. */
export interface AgentCli {
  name: AgentCliName;
  version: string;
  command: string;
  args: string[];
}

/** Where the CLIs are installed: `ENGRAM_AGENTS_DIR`, else ~/.cache/engram-agents. */
export function agentClisDirectory(): string {
  return process.env.ENGRAM_AGENTS_DIR ?? join(homedir(), '.cache', 'engram-agents');
}

/** The pinned CLI, or why it cannot be run (throws with CI=true, where it must be there). */
export function findAgentCli(name: AgentCliName): { cli: AgentCli } | { missing: string } {
  const pinned = PINNED[name];
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const bin = pinned.bin.replace('{platform}', platform).replace('{arch}', process.arch);
  const path = join(agentClisDirectory(), `${name}@${pinned.version}`, bin);
  if (existsSync(path))
    return {
      cli: {
        name,
        version: pinned.version,
        command: pinned.node ? process.execPath : path,
        args: pinned.node ? [path] : [],
      },
    };
  const missing = `${pinned.package}@${pinned.version} is not installed at ${path}: run scripts/install-agent-clis.sh ${name}`;
  if (process.env.CI === 'true') throw new Error(`CI needs the agent CLIs: ${missing}`);
  return { missing };
}

/** The pinned CLI, or undefined after saying on the console why `label`'s tests are skipped. */
export function agentCliOrSkip(name: AgentCliName, label: string = name): AgentCli | undefined {
  const found = findAgentCli(name);
  if ('cli' in found) return found.cli;
  console.log(`${label}: skipped: ${found.missing}`);
  return undefined;
}
