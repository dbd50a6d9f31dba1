import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatInstructions, type InstructionSet } from '../../instructions/instruction-format.js';
import { latestSession } from '../../session/node/session-listing.js';
import { projectSlug } from '../../session/node/session-paths.js';
import { EngramError } from '../../kernel/errors.js';
import type { SystemBlock } from '../../contracts/language-model.js';
import { resolveSandboxRoot } from '../../sandbox/node/sandbox-paths.js';
import { FileReadCache } from '../../session/file-read-cache.js';
import { openSession, resumeSession, type OpenedSession } from '../../node/session-open.js';
import type { Session } from '../../session/session.js';
import { WorkingMemory, todoWriteTool } from '../../session/working-memory.js';
import type { ChatAgentOptions } from './chat-agent-types.js';
import { createChatTools } from './chat-tools.js';

/** Rules of the chat agent itself: first in the system prompt, before the instruction files. */
export const CHAT_SYSTEM_PROMPT = [
  'You are engram chat, a coding assistant working in the project folder of the user, with long-term memory.',
  'Tools: read_file, list_files and search_files read the project; write_file writes a file after the user confirms; todo_write keeps a todo list for multi-step work; read_persisted_output pages through a tool result too large to show whole.',
  'Paths are relative to the project root. Memories recalled for a message arrive before it in a <memory_context> block: use them when they help, and say so when one looks outdated.',
  'Be concise.',
].join('\n');

/** Opens the chat's session: a new one, the project's latest (`--continue`) or a named one (`--resume`). */
export async function openChatSession(
  options: ChatAgentOptions,
  projectRoot: string,
  system: SystemBlock[],
): Promise<OpenedSession> {
  const settings = options.engram.settings;
  const root = await resolveSandboxRoot(projectRoot);
  const fileReadCache = new FileReadCache({
    maxEntries: settings.session.fileCacheEntries,
    maxBytes: settings.session.fileCacheBytes,
  });
  let sessionId: string | undefined;
  if (options.resume && 'latest' in options.resume) {
    const latest = await latestSession(join(options.engramHome, 'projects', projectSlug(projectRoot)));
    if (!latest)
      throw new EngramError(
        'NOT_FOUND',
        `There is no earlier chat in ${projectRoot} to continue; start one with "engram chat".`,
      );
    sessionId = latest.sessionId;
  } else if (options.resume) {
    sessionId = options.resume.sessionId;
  }
  // The session is made after its tools, and the todo tool reports to it: bound once it exists.
  let session: Session | undefined;
  const workingMemory = new WorkingMemory({ settings, ...(options.now && { now: options.now }) });
  const tools = [
    ...createChatTools({ root, settings, fileReadCache, confirm: options.confirm }),
    todoWriteTool(workingMemory, (todos) => session?.setTodos(todos)),
  ];
  const common = {
    model: options.model,
    settings,
    home: options.engramHome,
    cwd: projectRoot,
    system,
    tools,
    fileReadCache,
    gitBranch: gitBranch(projectRoot),
    ...(options.now && { now: options.now }),
  };
  const opened = sessionId === undefined ? openSession(common) : await resumeSession({ ...common, sessionId });
  session = opened.session;
  if (session.todos.length > 0) workingMemory.setTodos(session.todos);
  return opened;
}

/** The stable system prompt: the chat's rules, the instruction files that always apply, the memory index (the memory turn's static part; cached). */
export function systemPrompt(index: string, instructions: InstructionSet): SystemBlock[] {
  const blocks: SystemBlock[] = [{ text: CHAT_SYSTEM_PROMPT }];
  const standing = formatInstructions(instructions.files.filter((file) => file.paths === undefined));
  if (standing !== '') blocks.push({ text: standing });
  if (index !== '') blocks.push({ text: index });
  blocks.at(-1)!.cache = true;
  return blocks;
}

/** The git branch of a project ('' outside git or on a detached head); read once at open (a few bytes). */
function gitBranch(projectRoot: string): string {
  try {
    const match = /^ref: refs\/heads\/(.+)$/m.exec(readFileSync(join(projectRoot, '.git', 'HEAD'), 'utf8'));
    return match ? match[1]!.trim() : '';
  } catch {
    return '';
  }
}
