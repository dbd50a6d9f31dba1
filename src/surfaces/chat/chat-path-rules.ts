import {
  activeInstructions,
  formatInstructions,
  type InstructionFile,
  type InstructionSet,
} from '../../instructions/instruction-format.js';
import type { Session } from '../../session/session.js';

/**
 * The path-scoped rules of one chat (SPEC §4: a rule with `paths:` applies while a matching file is
 * worked on): which apply now, and which of those the context already holds, so each is injected
 * once as turn context and again only after a compaction dropped it.
 */
export class ChatPathRules {
  readonly #instructions: InstructionSet;
  /** Files worked on this session (edited, read, named): what the rules' globs match. */
  readonly #workingPaths = new Set<string>();
  /** Path-scoped rules whose text is in the context now (in a meta message), by file path. */
  readonly #injected = new Set<string>();

  constructor(instructions: InstructionSet) {
    this.#instructions = instructions;
  }

  /**
   * The rules that apply now (a file they match was read, edited or named this session) and are not
   * in the context: never injected, or dropped since by a compaction. '' when there are none.
   */
  newlyActive(session: Session, text: string): string {
    for (const path of [...session.filesEdited, ...recentReadPaths(session), ...mentionedPaths(text)])
      this.#workingPaths.add(path);
    const fresh: InstructionFile[] = [];
    for (const file of activeInstructions(this.#instructions, [...this.#workingPaths])) {
      if (file.paths === undefined || this.#injected.has(file.path)) continue;
      this.#injected.add(file.path);
      fresh.push(file);
    }
    return fresh.length === 0 ? '' : formatInstructions(fresh);
  }

  /** Paths of the instruction files that apply now (standing ones and path-scoped ones that match). */
  activePaths(): Set<string> {
    return new Set(activeInstructions(this.#instructions, [...this.#workingPaths]).map((file) => file.path));
  }

  /** The context lost the rules' text (a compaction, another session): each is injected again when it applies. */
  contextDropped(): void {
    this.#injected.clear();
  }
}

/** Files the session read lately (from its tool calls), for path-scoped rules. */
function recentReadPaths(session: Session): string[] {
  const paths: string[] = [];
  for (const message of session.messages.slice(-20)) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const block of message.content) {
      const path = block.type === 'tool_use' ? block.input.path : undefined;
      if (typeof path === 'string' && path.length < 1_000) paths.push(path);
    }
  }
  return paths;
}

/** Words of a message that look like project paths (`src/a.ts`), so a rule for them applies from the first turn. */
function mentionedPaths(text: string): string[] {
  return [...text.slice(0, 10_000).matchAll(/(?:^|\s)([\w.-]+(?:\/[\w.-]+)*\.\w{1,8})(?=$|[\s,;:!?)])/g)]
    .map((match) => match[1]!)
    .slice(0, 50);
}
