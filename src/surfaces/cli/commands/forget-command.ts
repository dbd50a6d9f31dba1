import { createInterface } from 'node:readline/promises';
import { EngramError } from '../../../kernel/errors.js';
import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { findMemory, readScopes, withEngram } from '../cli-engram.js';
import type { CliIo } from '../cli-io.js';
import { oneLine } from '../table-format.js';

/** `engram forget`: archive a memory (or delete it with --hard). */
export const forgetCommand: CommandDefinition = {
  name: 'forget',
  summary: 'Archive a memory (or delete it with --hard)',
  usage: 'forget <id> [--hard [--yes]] [options]',
  options: {
    hard: {
      type: 'boolean',
      description: 'Delete for good instead of archiving (history keeps the last state; undo brings it back)',
    },
    yes: {
      type: 'boolean',
      short: 'y',
      description: 'Do not ask for confirmation (needed with --hard when stdin is not a terminal)',
    },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to look in (default: the current project and global)',
    },
  },
  async run(invocation) {
    const { values, io } = invocation;
    const id = singlePositional(invocation, 'id');
    const hard = values.hard === true;
    if (hard && values.yes !== true && !io.interactive) {
      throw new EngramError(
        'CONFIRMATION_REQUIRED',
        'forget --hard deletes the memory; without a terminal to confirm, pass --yes.',
      );
    }
    return withEngram(invocation, async (opened) => {
      const scopes = readScopes(values, opened);
      const memory = await findMemory(opened, id, scopes);
      if (!hard) {
        if (memory.archived)
          return { data: { memory, action: 'none' }, text: `Memory ${memory.id} was already archived.` };
        const archived = await opened.engram.forget(memory.id, { scopes });
        return {
          data: { memory: archived, action: 'archive' },
          text: `Archived ${memory.id} (${memory.name}); "engram restore ${memory.id}" brings it back.`,
        };
      }
      if (
        values.yes !== true &&
        !(await confirm(io, `Delete ${memory.id} "${oneLine(memory.name)}" for good? [y/N] `))
      ) {
        return { data: { memory, action: 'none' }, text: 'Nothing deleted.' };
      }
      await opened.engram.forget(memory.id, { hard: true, scopes });
      const history = await opened.engram.history(memory.id, scopes);
      const change = history.at(-1)?.id ?? '';
      return {
        data: { id: memory.id, action: 'delete', changeId: change },
        text: `Deleted ${memory.id}; "engram undo ${change}" brings it back.`,
      };
    });
  },
};

/** Asks a yes/no question on the terminal; only "y" or "yes" is a yes. */
async function confirm(io: Pick<CliIo, 'stdin' | 'stderr'>, question: string): Promise<boolean> {
  const prompt = createInterface({ input: io.stdin, output: io.stderr });
  try {
    const answer = await prompt.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}
