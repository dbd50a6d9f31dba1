import { singlePositional, type CommandDefinition } from '../cli-command.js';
import { findMemory, readScopes, readOnly, withEngram } from '../cli-engram.js';
import { formatMemoryDetail } from '../memory-view.js';

/** `engram show`: show one memory and its history. */
export const showCommand: CommandDefinition = {
  name: 'show',
  summary: 'Show one memory and its history',
  usage: 'show <id> [options]',
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
    return withEngram(readOnly(invocation), async (opened) => {
      const scopes = readScopes(invocation.values, opened);
      const memory = await findMemory(opened, id, scopes);
      const history = await opened.engram.history(memory.id, scopes);
      const chain = await opened.engram.supersedeChain(memory.id, scopes);
      const links = [...chain.replaces, ...chain.replacedBy].map(
        (link) =>
          `${link.from} → ${link.to} (${link.why}${link.by ? ` by ${link.by}` : ''}${link.at ? ` at ${link.at}` : ''})`,
      );
      const text = formatMemoryDetail(memory, history, invocation.io);
      return {
        data: { memory, history, chain },
        text:
          links.length === 0
            ? text
            : `${text}

Superseded:
${links.map((line) => `  ${line}`).join('\n')}`,
      };
    });
  },
};
