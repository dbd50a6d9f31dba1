import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { readScopes, withEngram } from '../cli-engram.js';
import { isChangeSetId, undoChangeSet } from '../../../consolidation/change-sets.js';

/** `engram undo`: revert one change by its change id (see "engram show <id>"). */
export const undoCommand: CommandDefinition = {
  name: 'undo',
  summary: 'Revert one change by its change id (see "engram show <id>"), or a whole change set (cs_…, engram dream)',
  usage: 'undo <change-id | change-set-id> [options]',
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
      if (isChangeSetId(changeId)) {
        const result = await undoChangeSet(opened.engram.store, {
          id: changeId,
          scopes: readScopes(invocation.values, opened),
          actor: 'cli',
          now: () => new Date(),
          ...(opened.engram.embedder && { embedder: opened.engram.embedder }),
        });
        return {
          data: { changeSet: result.changeSetId, undone: result.undone, vectors: result.vectors },
          text: `Undid change set ${changeId}: ${result.undone.length} memor${result.undone.length === 1 ? 'y' : 'ies'} back as they were.`,
        };
      }
      const undone = await opened.engram.undo(changeId, { scopes: readScopes(invocation.values, opened) });
      return {
        data: { change: undone },
        text: `Undid ${changeId} (change of ${undone.memoryId}) with change ${undone.id} (${undone.action}).`,
      };
    });
  },
};
