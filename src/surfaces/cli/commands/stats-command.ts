import { noPositionals, type CommandDefinition } from '../cli-command.js';
import { readScopes, readOnly, withEngram } from '../cli-engram.js';
import { formatFields } from '../table-format.js';

/** `engram stats`: count memories by state, type and scope. */
export const statsCommand: CommandDefinition = {
  name: 'stats',
  summary: 'Count memories by state, type and scope',
  usage: 'stats [options]',
  options: {
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to count (default: the current project and global)',
    },
    all: { type: 'boolean', description: 'Count every scope in the store' },
  },
  async run(invocation) {
    const { values } = invocation;
    noPositionals(invocation);
    return withEngram(readOnly(invocation), async (opened) => {
      const scopes = values.all === true ? undefined : readScopes(values, opened);
      const stats = await opened.engram.stats(scopes ?? 'all');
      const info = opened.engram.storage.info();
      const fields: Array<[string, string]> = [
        ['store', `${info.backend} ${info.location} (schema ${info.schemaVersion})`],
        ['project', `${opened.loaded.project.scope} (from ${opened.loaded.project.source})`],
        ['scopes', scopes === undefined ? 'all' : scopes.join(', ')],
        ['total', String(stats.total)],
        ['active', String(stats.active)],
        ['archived', String(stats.archived)],
        ['invalid', String(stats.invalid)],
        ['history entries', String(stats.historyEntries)],
        ...Object.entries(stats.byType).map(([type, count]): [string, string] => [`type ${type}`, String(count)]),
        ...Object.entries(stats.byScope).map(([scope, count]): [string, string] => [`scope ${scope}`, String(count)]),
      ];
      return {
        data: { store: info, project: opened.loaded.project, scopes: scopes ?? 'all', ...stats },
        text: formatFields(fields),
      };
    });
  },
};
