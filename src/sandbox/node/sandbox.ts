import { EngramError, errorKind, isEngramError, type EngramErrorCode } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS, type Settings } from '../../kernel/settings.js';
import type { MemoryTool } from '../../memory-tool/memory-tool.js';
import type { ToolDefinition } from '../../contracts/language-model.js';
import { splitCommandLine } from '../sandbox-command-line.js';
import { GIT_SUBCOMMANDS, planCommand, SANDBOX_COMMANDS } from '../sandbox-commands.js';
import { listDirectoryTool, readFileTool, type SandboxLimits } from './sandbox-files.js';
import { sandboxDenied } from '../sandbox-denied.js';
import { checkProjectPath, resolveSandboxRoot, type SandboxRoot } from './sandbox-paths.js';
import { gitRepositoryProblem, refuseBlobRevisions } from './sandbox-git-checks.js';
import { findExecutable, runProcess, sandboxEnvironment } from './sandbox-process.js';
import { searchFilesTool, type SearchInput } from './sandbox-search.js';

export interface SandboxOptions {
  /** The project folder every tool is confined to. */
  root: string;
  /** `sandbox` limits come from here; default DEFAULT_SETTINGS. */
  settings?: Settings;
  /** The only way to write: memories, through the memory tool. Without it the sandbox writes nothing at all. */
  memoryTool?: MemoryTool;
  /** Where PATH and HOME come from for commands; default process.env. Nothing else is passed on. */
  env?: Record<string, string | undefined>;
  /** Milliseconds clock of the search time budget; default Date.now. */
  now?: () => number;
}

/** The answer to one tool call, ready for a `tool_result` block. */
export interface SandboxToolResult {
  content: string;
  isError: boolean;
  /** The EngramError code of a refusal (SANDBOX_DENIED for anything outside the rules). */
  code?: EngramErrorCode;
}

export const SANDBOX_TOOL_NAMES = ['read_file', 'list_directory', 'search_files', 'run_command'] as const;

/** The definition the sandbox gives one of its tools (other agents reuse its schema under their own names). */
export function sandboxToolDefinition(name: (typeof SANDBOX_TOOL_NAMES)[number]): ToolDefinition {
  const definition = TOOL_DEFINITIONS.find((tool) => tool.name === name)!;
  return structuredClone(definition);
}

const TOOL_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: 'read_file',
    description:
      'Read a text file of the project, lines numbered. Paths are relative to the project root; nothing outside it can be read.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'A file path relative to the project root, e.g. src/index.ts.' },
        offset: { type: 'integer', minimum: 1, description: 'First line to show (1-based); default 1.' },
        limit: { type: 'integer', minimum: 1, description: 'How many lines to show; default all that fit.' },
      },
      required: ['path'],
      additionalProperties: false,
    },
  },
  {
    name: 'list_directory',
    description: 'List a folder of the project: sub-folders end in "/", symbolic links in "@", files show their size.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'A folder relative to the project root; default the root (".").' },
      },
      additionalProperties: false,
    },
  },
  {
    name: 'search_files',
    description:
      'Search the text of the files under a project folder (plain text by default, or a JavaScript regular expression); answers path:line: text.',
    inputSchema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'The text (or regular expression) to find.' },
        path: { type: 'string', description: 'Folder or file to search; default the project root.' },
        regex: { type: 'boolean', description: 'Treat pattern as a regular expression; default false.' },
        ignore_case: { type: 'boolean', description: 'Match regardless of case; default false.' },
        glob: { type: 'string', description: 'Only files matching this glob, e.g. "*.ts" or "docs/**/*.md".' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
  },
  {
    name: 'run_command',
    description:
      `Run one read-only command in the project root, without a shell: ${SANDBOX_COMMANDS.filter((command) => command !== 'git').join(', ')}, ` +
      `and git ${GIT_SUBCOMMANDS.join('/')}. No pipes, redirections, ";", "&", "$" or backticks; paths must stay inside the project; ` +
      'find may not -exec or -delete. Nothing can write files: memories are written with the memory tool.',
    inputSchema: {
      type: 'object',
      properties: {
        command: {
          type: 'string',
          description: 'The command line, e.g. "git log -5 --oneline" or "grep -rn TODO src".',
        },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
];

/** Opens a sandbox over a project folder (resolving its real path once). */
export async function openSandbox(options: SandboxOptions): Promise<Sandbox> {
  return new Sandbox(await resolveSandboxRoot(options.root), options);
}

/**
 * The tools a forked helper gets (agent-mode extraction, consolidation), enforced in code: read,
 * list and search files under the project root, run commands from a read-only allow-list, and
 * write only memories through the memory tool. Every refusal is SANDBOX_DENIED and changes nothing.
 */
export class Sandbox {
  readonly root: SandboxRoot;
  readonly #limits: SandboxLimits;
  readonly #memoryTool: MemoryTool | undefined;
  readonly #env: Record<string, string | undefined>;
  readonly #now: () => number;
  readonly #executables = new Map<string, string | undefined>();

  /** Use `openSandbox`, which resolves the root first. */
  constructor(root: SandboxRoot, options: Omit<SandboxOptions, 'root'> = {}) {
    this.root = root;
    this.#limits = (options.settings ?? DEFAULT_SETTINGS).sandbox;
    this.#memoryTool = options.memoryTool;
    this.#env = options.env ?? process.env;
    this.#now = options.now ?? Date.now;
  }

  /** The tool definitions to give the model: the file tools, the command tool and, when configured, the memory tool. */
  get tools(): ToolDefinition[] {
    return [...TOOL_DEFINITIONS, ...(this.#memoryTool ? [this.#memoryTool.definition()] : [])];
  }

  /** Runs one tool call; refusals and bad input come back as `isError` results, store failures are thrown. */
  async runSandboxTool(name: string, input: unknown): Promise<SandboxToolResult> {
    try {
      const fields = (input !== null && typeof input === 'object' && !Array.isArray(input) ? input : {}) as Record<
        string,
        unknown
      >;
      switch (name) {
        case 'read_file':
          return { content: await this.readFile(fields as { path: unknown }), isError: false };
        case 'list_directory':
          return { content: await this.listDirectory(fields), isError: false };
        case 'search_files':
          return { content: await this.searchFiles(fields as unknown as SearchInput), isError: false };
        case 'run_command':
          return await this.runCommand(fields.command);
        case 'memory':
          if (this.#memoryTool) return await this.#memoryTool.run(input);
      }
      throw sandboxDenied(
        `There is no tool ${JSON.stringify(String(name).slice(0, 60))} here; the tools are ${this.tools.map((tool) => tool.name).join(', ')}. ` +
          'No tool writes files: memories are written with the memory tool, and nothing else can be.',
      );
    } catch (error) {
      if (isEngramError(error) && ['bad-input', 'not-found', 'conflict'].includes(errorKind(error))) {
        return { content: `${error.code}: ${error.message}`, isError: true, code: error.code };
      }
      throw error;
    }
  }

  /** Reads a project file, lines numbered; SANDBOX_DENIED outside the project or for files that hold secrets. */
  readFile(input: { path: unknown; offset?: unknown; limit?: unknown }): Promise<string> {
    return readFileTool(this.root, this.#limits, input);
  }

  /** Lists a project folder. */
  listDirectory(input: { path?: unknown }): Promise<string> {
    return listDirectoryTool(this.root, this.#limits, input);
  }

  /** Searches the text of project files (bounded; regular expressions under a time budget). */
  searchFiles(input: SearchInput): Promise<string> {
    return searchFilesTool(this.root, this.#limits, input, this.#now);
  }

  /**
   * Runs one allow-listed read-only command with execFile in the project root. Shell syntax,
   * commands off the list, options that write, delete, run programs or follow links, and paths
   * leaving the project are refused with SANDBOX_DENIED before anything runs.
   */
  async runCommand(commandLine: unknown): Promise<SandboxToolResult> {
    const plan = planCommand(splitCommandLine(commandLine, this.#limits.maxCommandLength));
    for (const path of plan.paths) {
      await checkProjectPath(this.root, path.value, {
        maxLength: this.#limits.maxPathLength,
        label: 'argument',
        refuseSecrets: path.readsFile,
      });
    }
    const executable = await this.#executable(plan.command);
    const run = {
      cwd: this.root.real,
      env: sandboxEnvironment(this.#env, this.root),
      timeoutMs: this.#limits.timeoutMs,
    };
    if (plan.command === 'git') {
      const problem = await gitRepositoryProblem(executable, this.root.real, run);
      if (problem !== undefined) throw sandboxDenied(problem);
      await refuseBlobRevisions(executable, plan.objectChecks ?? [], run);
    }
    const result = await runProcess(executable, plan.args, { ...run, maxOutputBytes: this.#limits.outputMaxBytes });
    const noMatch = (plan.command === 'grep' || plan.command === 'rg') && result.exitCode === 1;
    const parts = [result.stdout.replace(/\n$/, '')];
    if (result.stderr.trim() !== '') parts.push(`[stderr]\n${result.stderr.replace(/\n$/, '')}`);
    if (result.truncated)
      parts.push(
        `[Output cut at ${this.#limits.outputMaxBytes} bytes (sandbox.outputMaxBytes); the command was stopped. Narrow it down.]`,
      );
    if (result.timedOut) parts.push(`[Stopped after ${this.#limits.timeoutMs} ms (sandbox.timeoutMs).]`);
    else if (noMatch) parts.push('[No matches.]');
    else if (result.exitCode !== 0 && !result.truncated) parts.push(`[Exit code ${result.exitCode ?? 'none'}.]`);
    const content = parts.filter((part) => part !== '').join('\n') || '[No output.]';
    return { content, isError: result.timedOut || (result.exitCode !== 0 && !noMatch && !result.truncated) };
  }

  async #executable(command: string): Promise<string> {
    if (!this.#executables.has(command))
      this.#executables.set(command, await findExecutable(command, this.#env.PATH, this.root));
    const found = this.#executables.get(command);
    if (found === undefined)
      throw new EngramError(
        'NOT_FOUND',
        `${command} is not installed on this machine (not found on PATH outside the project).`,
      );
    return found;
  }
}
