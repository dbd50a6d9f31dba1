import { DEFAULT_SETTINGS } from '../../../kernel/settings.js';
import { EngramError } from '../../../kernel/errors.js';
import { integerOption, type CommandDefinition } from '../cli-command.js';
import { TYPE_NAMES, readScopes, recallFlags, readOnly, withEngram } from '../cli-engram.js';

/** `engram inject`: print exactly the memory text a model would receive for a message. */
export const injectCommand: CommandDefinition = {
  name: 'inject',
  summary: 'Print the memory context a model would receive for a message',
  usage: 'inject <message…> [options]',
  options: {
    'max-tokens': {
      type: 'string',
      valueName: 'n',
      description: 'Token budget of the <memory_context> block (setting injection.maxTokens, default 3000)',
    },
    'top-k': {
      type: 'string',
      valueName: 'n',
      description: `How many memories recall offers at most (setting recall.topK, default ${DEFAULT_SETTINGS.recall.topK})`,
    },
    'min-score': {
      type: 'string',
      valueName: '0..1',
      description: `Lowest score recalled (setting recall.minScore, default ${DEFAULT_SETTINGS.recall.minScore})`,
    },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to read (default: the current project and global)',
    },
    type: { type: 'string', multiple: true, valueName: TYPE_NAMES, description: 'Only these types (comma list)' },
    'dry-run': { type: 'boolean', description: 'Do not count the injected memories as hits' },
  },
  details: [
    'Prints the static part (instructions and the MEMORY.md index, for the start of the system prompt), a blank line,',
    'then the <memory_context> block (for its end). --json gives both apart, with token counts and the memories left',
    'out for budget. Injected memories count as hits (hit count, last accessed) unless --dry-run.',
  ].join('\n'),
  async run(invocation) {
    const { values, positionals } = invocation;
    const query = positionals.join(' ');
    if (query.trim() === '') throw new EngramError('INVALID_INPUT', 'Nothing to inject for: engram inject <message…>.');
    const maxTokens = integerOption(values, 'max-tokens', { min: 0, max: 1_000_000 });
    const flags = recallFlags(values);
    return withEngram(readOnly(invocation), async (opened) => {
      const context = await opened.engram.buildMemoryContext(query, {
        scopes: readScopes(values, opened),
        ...(maxTokens !== undefined && { maxTokens }),
        ...flags,
        recordAccess: values['dry-run'] !== true,
      });
      const summary = (entry: (typeof context.included)[number]) => ({
        id: entry.memory.id,
        name: entry.memory.name,
        type: entry.memory.type,
        scope: entry.memory.scope,
        score: entry.score,
        source: entry.source,
        tokens: entry.tokens,
      });
      const data = {
        query: context.query,
        scopes: context.scopes,
        staticPart: context.staticPart,
        block: context.block,
        tokens: context.tokens,
        included: context.included.map(summary),
        omitted: context.omitted.map(summary),
        warnings: context.warnings,
      };
      const text = [context.staticPart, context.block].filter((part) => part !== '').join('\n');
      return { data, text };
    });
  },
};
