import { EngramError } from '../kernel/errors.js';
import type { MemorySource } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { Engram } from '../engram.js';
import { MemoryTool } from '../memory-tool/memory-tool.js';
import { readFolder } from '../memory-tool/memory-tool-folders.js';
import type { Settings } from '../kernel/settings.js';
import type { ToolDefinition } from '../contracts/language-model.js';
import type { AgentTool, ManifestLine } from './agent-extraction.js';

/** A sandbox's tools over a project folder, as the agent-mode helper uses them. */
export interface ProjectTools {
  readonly tools: readonly ToolDefinition[];
  runSandboxTool(name: string, input: unknown): Promise<{ content: string; isError: boolean }>;
}

/** Opens the sandbox over a project folder (`openSandbox` of engram/node): injected so extraction stays free of I/O. */
export type SandboxOpener = (options: {
  root: string;
  settings: Settings;
  memoryTool: MemoryTool;
}) => Promise<ProjectTools>;

/** Recorded in history for memories the agent-mode helper writes. */
export const AGENT_EXTRACTION_ACTOR = 'extraction-agent';

/**
 * The agent-mode helper's tools: the memory tool over the job's scopes (its project at the root,
 * global and the user's scope in folders) and the sandbox's read, list, search and read-only shell
 * tools over the project folder. The sandbox is the only way to run anything, and it writes
 * nothing but memories. Without a project folder the helper gets the memory tool alone.
 */
export async function createAgentTools(input: {
  engram: Engram;
  scopes: { project: Scope; user?: Scope };
  source: MemorySource;
  projectRoot?: string;
  /** Required with `projectRoot`. */
  openSandbox?: SandboxOpener;
}): Promise<AgentTool[]> {
  // Extraction promises `source { sessionId, turnId }` on every memory it writes: the tool passes it to each write.
  const memoryTool = new MemoryTool({
    engram: input.engram,
    ...memoryToolScopes(input.scopes),
    actor: AGENT_EXTRACTION_ACTOR,
    source: input.source,
  });
  if (input.projectRoot === undefined) {
    return [{ definition: memoryTool.definition(), run: (toolInput) => memoryTool.run(toolInput) }];
  }
  if (input.openSandbox === undefined) {
    throw new EngramError(
      'CONFIG_INVALID',
      'The agent-mode helper was given a project folder but no sandbox to open it with: pass openSandbox (engram/node), or use createExtractor.',
    );
  }
  const sandbox = await input.openSandbox({ root: input.projectRoot, settings: input.engram.settings, memoryTool });
  return sandbox.tools.map((definition) => ({
    definition,
    run: (toolInput) => sandbox.runSandboxTool(definition.name, toolInput),
  }));
}

/**
 * The manifest of existing memories the helper is given (at most `max`, most recently updated
 * first), each at the path the memory tool of `createAgentTools` serves it under: the tool's own
 * folder layout and file names (a name two memories share gets `-2`), so the helper can open it.
 */
export async function agentManifest(input: {
  engram: Engram;
  scopes: { project: Scope; user?: Scope };
  max: number;
}): Promise<ManifestLine[]> {
  const { layout } = new MemoryTool({ engram: input.engram, ...memoryToolScopes(input.scopes) });
  const folders = await Promise.all([layout.root, ...layout.folders].map((folder) => readFolder(input.engram, folder)));
  const files = folders.flatMap((contents) =>
    contents.files.map((file) => ({ memory: file.memory, path: `${contents.folder.path}/${file.fileName}` })),
  );
  files.sort((a, b) =>
    a.memory.updatedAt < b.memory.updatedAt ? 1 : a.memory.updatedAt > b.memory.updatedAt ? -1 : 0,
  );
  return files
    .slice(0, input.max)
    .map(({ memory, path }) => ({ path, type: memory.type, description: memory.description }));
}

/** What the helper's memory tool shows: the project at the root, global and the user's scope in folders. */
function memoryToolScopes(scopes: { project: Scope; user?: Scope }): { scopes: Scope[]; defaultScope: Scope } {
  return {
    scopes: [...new Set([scopes.project, 'global', ...(scopes.user ? [scopes.user] : [])])],
    defaultScope: scopes.project,
  };
}
