import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { readScopes, withEngram } from '../cli-engram.js';

/** `engram undo`: revert one change by its change id (see "engram show <id>"). */
export const undoCommand: CommandDefinition = {
  name: 'undo',
  summary: 'Revert one change by its change id (see "engram show <id>")',
  usage: 'undo <change-id> [options]',
  options: {
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes the memory may be in (default: the current project and global)',
    },
  },
  async run(invocation) {
    const changeId = singlePositional(invocation, 'change-id');
    return withEngram(invocation, async (opened) => {
      const undone = await opened.engram.undo(changeId, { scopes: readScopes(invocation.values, opened) });
      return {
        data: { change: undone },
        text: `Undid ${changeId} (change of ${undone.memoryId}) with change ${undone.id} (${undone.action}).`,
      };
    });
  },
};
