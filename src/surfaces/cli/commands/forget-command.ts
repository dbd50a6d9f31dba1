import { createInterface } from 'node:readline/promises';
import { EngramError } from '../../../kernel/errors.js';
import { describePurgeResidue } from '../../../memory/memory-purge.js';
import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { findMemory, readScopes, withEngram } from '../cli-engram.js';
import type { CliIo } from '../cli-io.js';
import { oneLine } from '../table-format.js';

/** `engram forget`: archive a memory (delete it with --hard; erase it with its history with --purge). */
export const forgetCommand: CommandDefinition = {
  name: 'forget',
  summary: 'Archive a memory (or delete it with --hard)',
  usage: 'forget <id> [--hard | --purge] [--yes] [options]',
  options: {
    hard: {
      type: 'boolean',
      description: 'Delete for good instead of archiving (history keeps the last state; undo brings it back)',
    },
    purge: {
      type: 'boolean',
      description: 'Delete with its history and leave no copy in the store files (for a secret); cannot be undone',
    },
    yes: {
      type: 'boolean',
      short: 'y',
      description: 'Do not ask for confirmation (needed with --hard or --purge when stdin is not a terminal)',
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
    const purge = values.purge === true;
    if (hard && purge) throw new EngramError('INVALID_INPUT', 'Pass --hard or --purge, not both.');
    if ((hard || purge) && values.yes !== true && !io.interactive) {
      throw new EngramError(
        'CONFIRMATION_REQUIRED',
        `forget ${purge ? '--purge erases the memory and its history' : '--hard deletes the memory'}; without a terminal to confirm, pass --yes.`,
      );
    }
    if (purge) return purgeMemory(invocation, id);
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

/** `forget --purge`: works on a deleted memory too, since its history still holds the content. */
async function purgeMemory(invocation: Parameters<CommandDefinition['run']>[0], id: string) {
  const { values, io } = invocation;
  return withEngram(invocation, async (opened) => {
    const scopes = readScopes(values, opened);
    const memory = await opened.engram.find(id, scopes);
    const label = memory ? `${memory.id} "${oneLine(memory.name)}"` : `${id} (deleted; its history remains)`;
    if (values.yes !== true && !(await confirm(io, `Erase ${label} with its history, for good (no undo)? [y/N] `))) {
      return { data: { id, action: 'none' }, text: 'Nothing purged.' };
    }
    const report = await opened.engram.purge(id, { scopes });
    const residue = describePurgeResidue(report);
    return {
      data: { id, action: 'purge', ...report },
      text: `Purged ${id}: removed ${report.historyEntriesRemoved} history entr${report.historyEntriesRemoved === 1 ? 'y' : 'ies'} and ${report.jobsRemoved} job${report.jobsRemoved === 1 ? '' : 's'}; ${residue}.`,
    };
  });
}

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
