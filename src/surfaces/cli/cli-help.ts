import { GLOBAL_OPTIONS, type CommandDefinition, type CommandOption } from './cli-command.js';

/** The help text of one command: usage, summary, its options and the global ones. */
export function formatCommandHelp(definition: CommandDefinition): string {
  const lines = [`Usage: engram ${definition.usage}`, '', definition.summary];
  if (Object.keys(definition.options).length > 0) lines.push('', 'Options:', ...formatOptions(definition.options));
  lines.push('', 'Global options:', ...formatOptions(GLOBAL_OPTIONS));
  if (definition.details) lines.push('', definition.details);
  return lines.join('\n');
}

/** The help text of the binary: every command with its summary. */
export function formatGeneralHelp(commands: ReadonlyArray<Pick<CommandDefinition, 'name' | 'summary'>>): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  return [
    'engram: layered long-term memory for LLM agents',
    '',
    'Usage: engram <command> [arguments] [options]',
    '',
    'Commands:',
    ...commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    `  ${'help'.padEnd(width)}  Show help for a command (or engram <command> --help)`,
    '',
    'Global options:',
    ...formatOptions(GLOBAL_OPTIONS),
    `  ${'--version'.padEnd(24)}  Print the version`,
    '',
    'Without --scope, writes go to the current directory’s project and reads see that project and global',
    '(export: the project only). The project is .engram.json’s id, else the git remote, else the path.',
    'Exit codes: 0 ok, 1 not found, 2 bad input, 3 store error.',
  ].join('\n');
}

function formatOptions(options: Record<string, CommandOption>): string[] {
  const entries = Object.entries(options).map(([name, option]) => {
    const flag = `${option.short ? `-${option.short}, ` : ''}--${name}${option.type === 'string' ? ` <${option.valueName ?? 'value'}>` : ''}`;
    return [flag, option.description] as const;
  });
  const width = Math.max(24, ...entries.map(([flag]) => flag.length));
  return entries.map(([flag, description]) => `  ${flag.padEnd(width)}  ${description}`);
}
