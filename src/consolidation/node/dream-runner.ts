import { homedir } from 'node:os';
import type { Engram } from '../../engram.js';
import type { Scope } from '../../memory/scope.js';
import { MemoryTool, type MemoryToolResult } from '../../memory-tool/memory-tool.js';
import { openSandbox } from '../../sandbox/node/sandbox.js';
import { loadInstructions } from '../../instructions/node/instruction-files.js';
import type { AgentTool } from '../../extraction/agent-extraction.js';
import { runDream } from '../run-dream.js';
import type { DreamOptions } from '../dream-inputs.js';
import type { DreamReport } from '../dream-report.js';
import type { InstructionText } from '../offline-plan.js';
import { gatherSessionFiles } from './dream-gather.js';
import { engramHome } from '../../node/load-settings.js';

export interface DreamRunnerOptions {
  engram: Engram;
  /** The project folder: its instruction files are read for contradictions, its files are what the helper may read. */
  projectRoot?: string;
  home?: string;
  /** ENGRAM_HOME: the project's engram sessions (notes and transcripts) are the gather phase's material. */
  engramHome?: string;
  /** Claude Code's folder (`~/.claude`, CLAUDE_CONFIG_DIR): its transcripts of the project are read too. */
  claudeHome?: string;
  now?: () => Date;
  onWarning?: (warning: string) => void;
}

/**
 * The memory tool of the dream helper: `view` only. The helper proposes a plan; writes happen only
 * after the plan is checked, as one change set, never through the tool.
 */
class ViewOnlyMemoryTool extends MemoryTool {
  override async run(input: unknown): Promise<MemoryToolResult> {
    const command = input !== null && typeof input === 'object' ? (input as { command?: unknown }).command : undefined;
    if (command !== 'view')
      return {
        content: 'Error: the consolidation helper may only view memories; propose changes in the plan.',
        isError: true,
      };
    return super.run(input);
  }
}

/**
 * Runs a dream over an Engram with what the file system gives it: the instruction files (read,
 * never written) and, when a model is configured, the helper's sandboxed read-only tools over the
 * project folder.
 */
export async function runDreamWithFiles(options: DreamRunnerOptions, dream: DreamOptions): Promise<DreamReport> {
  const { engram } = options;
  const warn = options.onWarning ?? (() => undefined);
  const instructions = await readInstructionTexts(options, warn);
  const openTools =
    engram.model && options.projectRoot !== undefined
      ? async (scope: Scope): Promise<readonly AgentTool[]> => {
          const memoryTool = new ViewOnlyMemoryTool({ engram, scopes: [scope], defaultScope: scope, actor: 'dream' });
          const sandbox = await openSandbox({ root: options.projectRoot!, settings: engram.settings, memoryTool });
          return sandbox.tools.map((definition) => ({
            definition,
            run: (input) => sandbox.runSandboxTool(definition.name, input),
          }));
        }
      : undefined;
  return runDream(
    {
      store: engram.store,
      settings: engram.settings,
      now: options.now ?? (() => new Date()),
      ...(engram.model && { model: engram.model }),
      ...(engram.embedder && { embedder: engram.embedder }),
      ...(openTools && { openTools }),
      ...(options.projectRoot !== undefined &&
        (options.engramHome !== undefined || options.claudeHome !== undefined) && {
          gather: ({ since, maxSessions }) =>
            gatherSessionFiles({
              projectRoot: options.projectRoot!,
              ...(options.engramHome !== undefined && { engramHome: options.engramHome }),
              ...(options.claudeHome !== undefined && { claudeHome: options.claudeHome }),
              since,
              maxSessions,
              onWarning: warn,
            }),
        }),
      instructions,
      onWarning: warn,
    },
    dream,
  );
}

async function readInstructionTexts(
  options: DreamRunnerOptions,
  warn: (warning: string) => void,
): Promise<InstructionText[]> {
  if (options.projectRoot === undefined) return [];
  try {
    const set = await loadInstructions({
      cwd: options.projectRoot,
      projectRoot: options.projectRoot,
      home: options.home ?? homedir(),
      settings: options.engram.settings,
    });
    return set.files.map((file) => ({ path: file.path, text: file.content }));
  } catch (error) {
    warn(`instructions-unreadable: ${(error as Error).message}`);
    return [];
  }
}

/** Where the gather phase finds sessions: ENGRAM_HOME's and Claude Code's (CLAUDE_CONFIG_DIR, else ~/.claude). */
export function dreamSessionHomes(env: Record<string, string | undefined>): {
  engramHome: string;
  claudeHome?: string;
} {
  const claude = env.CLAUDE_CONFIG_DIR || (env.HOME ? `${env.HOME}/.claude` : undefined);
  return { engramHome: engramHome(env), ...(claude && { claudeHome: claude }) };
}
