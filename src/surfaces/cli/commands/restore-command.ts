import { EngramError } from '../../../kernel/errors.js';
import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { findMemory, readScopes, withEngram } from '../cli-engram.js';

/** `engram restore`: bring an archived memory back into recall. */
export const restoreCommand: CommandDefinition = {
  name: 'restore',
  summary: 'Bring an archived memory back into recall',
  usage: 'restore <id> [options]',
  options: {
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to look in (default: the current project and global)',
    },
  },
  async run(invocation) {
    const id = singlePositional(invocation, 'id');
    return withEngram(invocation, async (opened) => {
      const scopes = readScopes(invocation.values, opened);
      const found = await findMemory(opened, id, scopes);
      if (!found.archived) throw new EngramError('CONFLICT', `Memory ${found.id} is not archived; nothing to restore.`);
      const memory = await opened.engram.restore(found.id, { scopes });
      return { data: { memory }, text: `Restored ${memory.id} (${memory.name}).` };
    });
  },
};
