import { EngramError } from '../../../kernel/errors.js';
import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { scopeOption, withEngram } from '../cli-engram.js';
import { isChangeSetId } from '../../../consolidation/change-sets.js';
import { changeSetUndoJson } from '../../../consolidation/engram-change-sets.js';

/**
 * `engram undo`: revert one change by its change id (see "engram show <id>"), or a whole change set.
 * An id names one change in the whole store, so without --scope the change's own scopes are used
 * (a dream the service ran over every project makes one set across them); --scope confines it.
 */
export const undoCommand: CommandDefinition = {
  name: 'undo',
  summary: 'Revert one change by its change id (see "engram show <id>"), or a whole change set (cs_…, engram dream)',
  usage: 'undo <change-id | change-set-id> [options]',
  options: {
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Only undo it if it is in these scopes (default: wherever the change is; an id names one change)',
    },
  },
  async run(invocation) {
    const changeId = singlePositional(invocation, 'change-id');
    const named = scopeOption(invocation.values);
    return withEngram(invocation, async (opened) => {
      const { engram } = opened;
      if (isChangeSetId(changeId)) {
        const record = await engram.changeSets.find(changeId);
        if (!record) throw new EngramError('NOT_FOUND', `No change set ${changeId} in this store.`);
        const result = await engram.changeSets.undo(changeId, { scopes: named ?? record.scopes, actor: 'cli' });
        return {
          // The shape of POST /v1/undo (changeSetUndoJson), and the scopes the set spans.
          data: { ...changeSetUndoJson(result), scopes: record.scopes },
          text: `Undid change set ${changeId} (${record.scopes.join(', ')}): ${result.undone.length} memor${result.undone.length === 1 ? 'y' : 'ies'} back as they were.`,
        };
      }
      const change = await engram.findChange(changeId);
      const scope = change?.after?.scope ?? change?.before?.scope;
      if (!change || scope === undefined)
        throw new EngramError(
          'NOT_FOUND',
          `No change ${JSON.stringify(String(changeId).slice(0, 140))} in this store.`,
        );
      const undone = await engram.undo(changeId, { scopes: named ?? [scope] });
      return {
        data: { change: undone },
        text: `Undid ${changeId} (change of ${undone.memoryId} in ${scope}) with change ${undone.id} (${undone.action}).`,
      };
    });
  },
};
