import { warningNotes } from '../../../recall/warning-notes.js';
import { EngramError } from '../../../kernel/errors.js';
import { assertMemoryType } from '../../../memory/memory.js';
import { numberOption, stringOption, type CommandDefinition } from '../cli-command.js';
import { TYPE_NAMES, readStdin, withEngram, writeScope } from '../cli-engram.js';
import { oneLine } from '../table-format.js';

// Room for a trailing newline and surrounding whitespace that are trimmed before the size check.
const STDIN_SLACK_BYTES = 4096;

/** `engram remember`: store one memory. */
export const rememberCommand: CommandDefinition = {
  name: 'remember',
  summary: 'Store one memory',
  usage: 'remember <text…> [options]   |   … | engram remember --stdin [options]',
  options: {
    stdin: { type: 'boolean', description: 'Read the content from stdin' },
    type: { type: 'string', valueName: TYPE_NAMES, description: 'Memory type (default project)' },
    name: { type: 'string', valueName: 'slug', description: 'Short kebab-case name (default: from the content)' },
    description: { type: 'string', valueName: 'text', description: 'One-line description (default: the first line)' },
    importance: { type: 'string', valueName: '0..1', description: 'Importance from 0 to 1 (default 0.5)' },
    scope: { type: 'string', valueName: 'scope', description: 'Scope to write to (default: the current project)' },
    'no-dedupe': {
      type: 'boolean',
      description: 'Always add a new memory, even when one in the scope says nearly the same',
    },
  },
  details:
    'Example: engram remember --type feedback "Integration tests use the real database, no mocks."\n' +
    'A memory that nearly repeats one in the same scope updates that one instead (its newest wording, the higher importance); --no-dedupe adds it anyway.',
  async run(invocation) {
    const { values, positionals, io } = invocation;
    if (values.stdin === true && positionals.length > 0) {
      throw new EngramError('INVALID_INPUT', 'Give the text as arguments or with --stdin, not both.');
    }
    if (values.stdin !== true && positionals.length === 0) {
      throw new EngramError(
        'INVALID_INPUT',
        'Nothing to remember: engram remember <text…>, or pipe it in with --stdin.',
      );
    }
    const type = stringOption(values, 'type');
    const importance = numberOption(values, 'importance');
    const name = stringOption(values, 'name');
    const description = stringOption(values, 'description');
    if (type !== undefined) assertMemoryType(type);
    return withEngram(invocation, async (opened) => {
      const scope = writeScope(values, opened);
      const raw =
        values.stdin === true
          ? await readStdin(io, opened.loaded.settings.memory.maxContentBytes + STDIN_SLACK_BYTES)
          : positionals.join(' ');
      const content = raw.replace(/\s+$/, '');
      const result = await opened.engram.save(
        {
          scope,
          content,
          ...(type !== undefined && { type: assertMemoryType(type) }),
          ...(name !== undefined && { name }),
          ...(description !== undefined && { description }),
          ...(importance !== undefined && { importance }),
          source: { origin: 'cli' },
        },
        { dedupe: values['no-dedupe'] !== true },
      );
      const { memory } = result;
      const warnings = warningNotes(result.warnings, { embedderConfigured: opened.engram.embedder !== undefined });
      if (result.action === 'merged') {
        const undo = result.changeId
          ? `; "engram undo ${result.changeId}" reverts the update`
          : '; it already said this, nothing changed';
        return {
          data: result,
          warnings,
          text: `Updated existing memory ${memory.id} (${memory.name}, similarity ${result.similarity!.toFixed(2)}) instead of adding a near-duplicate${undo}.`,
        };
      }
      return {
        data: result,
        warnings,
        text: `Remembered ${memory.id} (${memory.type}, ${memory.scope}): ${memory.name} — ${oneLine(memory.description)}`,
      };
    });
  },
};
