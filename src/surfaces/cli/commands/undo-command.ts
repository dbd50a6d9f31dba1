import { EngramError } from '../../../core/errors.js';
import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { readScopes, withEngram } from '../cli-engram.js';

/** `engram undo`: revert one change by its change id (see "engram show <id>"). */
export const undoCommand: CommandDefinition = {
  name: 'undo',
  summary: 'Revert one change by its change id (see "engram show <id>")',
  usage: 'undo <change-id> [options]',
  options: {
    scope: { type: 'string', multiple: true, valueName: 'a,b', description: 'Scopes the memory may be in (default: the current project and global)' },
  },
  async run(invocation) {
    const changeId = singlePositional(invocation, 'change-id');
    return withEngram(invocation, async (opened) => {
      const scopes = readScopes(invocation.values, opened);
      const change = await opened.engram.store.getChange(changeId);
      const scope = change?.after?.scope ?? change?.before?.scope;
      if (!change || scope === undefined || !scopes.includes(scope)) {
        throw new EngramError(
          'NOT_FOUND',
          `No change with id ${JSON.stringify(changeId.slice(0, 140))} in ${scopes.join(', ')}; "engram show <memory>" lists a memory's changes.`,
        );
      }
      const undone = await opened.engram.undo(change.id);
      return {
        data: { change: undone },
        text: `Undid ${change.id} (${change.action} of ${change.memoryId}) with change ${undone.id} (${undone.action}).`,
      };
    });
  },
};
