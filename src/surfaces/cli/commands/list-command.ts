import { integerOption, noPositionals, type CommandDefinition } from '../cli-command.js';
import { TYPE_NAMES, readScopes, typeOption, readOnly, withEngram } from '../cli-engram.js';
import { formatMemoryTable } from '../memory-view.js';
import { MAX_LIMIT } from '../../../contracts/store-checks/store-input.js';

const DEFAULT_LIMIT = 100;

/** `engram list`: list memories, newest first. */
export const listCommand: CommandDefinition = {
  name: 'list',
  summary: 'List memories, newest first',
  usage: 'list [options]',
  options: {
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to read (default: the current project and global)',
    },
    type: { type: 'string', multiple: true, valueName: TYPE_NAMES, description: 'Only these types (comma list)' },
    stale: { type: 'boolean', description: 'Only memories not updated for recall.staleDays (default 30) days' },
    archived: { type: 'boolean', description: 'Only archived memories' },
    invalid: { type: 'boolean', description: 'Only invalidated (superseded) memories' },
    limit: { type: 'string', valueName: 'n', description: `How many at most (default ${DEFAULT_LIMIT})` },
    offset: { type: 'string', valueName: 'n', description: 'Skip this many first' },
  },
  async run(invocation) {
    const { values, io } = invocation;
    noPositionals(invocation);
    const limit = integerOption(values, 'limit', { min: 0, max: MAX_LIMIT }) ?? DEFAULT_LIMIT;
    const offset = integerOption(values, 'offset', { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? 0;
    const types = typeOption(values);
    return withEngram(readOnly(invocation), async (opened) => {
      const filter = {
        scopes: readScopes(values, opened),
        ...(types && { types }),
        archived: values.archived === true ? ('only' as const) : ('exclude' as const),
        invalid: values.invalid === true ? ('only' as const) : ('exclude' as const),
        stale: values.stale === true,
      };
      const total = await opened.engram.count(filter);
      const memories = await opened.engram.list({ ...filter, limit, offset });
      const data = { scopes: filter.scopes, total, offset, limit, memories };
      if (memories.length === 0) {
        return {
          data,
          text:
            total === 0
              ? `No memories in ${filter.scopes.join(', ')}.`
              : `No memories past offset ${offset} (${total} in all).`,
        };
      }
      let text = formatMemoryTable(memories, io, opened.loaded.settings.recall);
      if (offset > 0 || memories.length < total) {
        text += `\n\nShowing ${offset + 1}-${offset + memories.length} of ${total}; use --limit and --offset for more.`;
      }
      return { data, text };
    });
  },
};
