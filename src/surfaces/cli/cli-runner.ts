import { parseArgs } from 'node:util';
import { EngramError } from '../../kernel/errors.js';
import {
  GLOBAL_OPTIONS_WITH_VALUES,
  parseCommandArguments,
  type CommandDefinition,
  type CommandOutput,
} from './cli-command.js';
import { EXIT_OK, reportError } from './cli-errors.js';
import type { CliIo } from './cli-io.js';
import { packageVersion } from '../../kernel/node/package-version.js';

// Each command is imported only when it runs, so `engram recall` loads the store and nothing else.
const COMMANDS: Record<string, () => Promise<CommandDefinition>> = {
  remember: async () => (await import('./commands/remember-command.js')).rememberCommand,
  recall: async () => (await import('./commands/recall-command.js')).recallCommand,
  inject: async () => (await import('./commands/inject-command.js')).injectCommand,
  list: async () => (await import('./commands/list-command.js')).listCommand,
  show: async () => (await import('./commands/show-command.js')).showCommand,
  edit: async () => (await import('./commands/edit-command.js')).editCommand,
  forget: async () => (await import('./commands/forget-command.js')).forgetCommand,
  restore: async () => (await import('./commands/restore-command.js')).restoreCommand,
  undo: async () => (await import('./commands/undo-command.js')).undoCommand,
  stats: async () => (await import('./commands/stats-command.js')).statsCommand,
  dedupe: async () => (await import('./commands/dedupe-command.js')).dedupeCommand,
  age: async () => (await import('./commands/age-command.js')).ageCommand,
  export: async () => (await import('./commands/export-command.js')).exportCommand,
  import: async () => (await import('./commands/import-command.js')).importCommand,
  config: async () => (await import('./commands/config-command.js')).configCommand,
  serve: async () => (await import('./commands/serve-command.js')).serveCommand,
  mcp: async () => (await import('./commands/mcp-command.js')).mcpCommand,
  reindex: async () => (await import('./commands/reindex-command.js')).reindexCommand,
  eval: async () => (await import('./commands/eval-command.js')).evalCommand,
  extract: async () => (await import('./commands/extract-command.js')).extractCommand,
  queue: async () => (await import('./commands/queue-command.js')).queueCommand,
  migrate: async () => (await import('./commands/migrate-command.js')).migrateCommand,
  instructions: async () => (await import('./commands/instructions-command.js')).instructionsCommand,
  chat: async () => (await import('./commands/chat-command.js')).chatCommand,
  ui: async () => (await import('./commands/ui-command.js')).uiCommand,
  dream: async () => (await import('./commands/dream-command.js')).dreamCommand,
  skills: async () => (await import('./commands/skills-command.js')).skillsCommand,
  install: async () => (await import('./commands/install-command.js')).installCommand,
  uninstall: async () => (await import('./commands/install-command.js')).uninstallCommand,
  status: async () => (await import('./commands/status-command.js')).statusCommand,
  sync: async () => (await import('./commands/sync-command.js')).syncCommand,
};

/** Runs the `engram` binary on argv (without node and script) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const commandIndex = findCommandIndex(argv);
  let json = argv.slice(0, commandIndex === -1 ? argv.length : commandIndex).includes('--json');
  try {
    if (commandIndex === -1) return await runWithoutCommand(argv, io);
    const name = argv[commandIndex]!;
    const leading = argv.slice(0, commandIndex);
    const rest = argv.slice(commandIndex + 1);
    json = json || rest.includes('--json');
    if (name === 'help') return await runHelp(rest, io);
    const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!load) {
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown command ${JSON.stringify(name.slice(0, 40))}. Run "engram help" for the list of commands.`,
      );
    }
    const definition = await load();
    const { values, positionals, global } = parseCommandArguments(definition, rest, leading);
    json = global.json;
    if (values.help === true) {
      print(io, json, await commandHelp(definition));
      return EXIT_OK;
    }
    const output = await definition.run({ name: definition.name, values, positionals, global, io });
    print(io, json, output);
    return EXIT_OK;
  } catch (error) {
    return reportError(error, io, json);
  }
}

/** Index of the command name in argv: the first token that is neither a flag nor a global flag's value. */
function findCommandIndex(argv: readonly string[]): number {
  for (let index = 0; index < argv.length; index += 1) {
    const token = argv[index]!;
    if (token === '--') return index + 1 < argv.length ? index + 1 : -1;
    if (GLOBAL_OPTIONS_WITH_VALUES.has(token)) {
      index += 1;
      continue;
    }
    if (!token.startsWith('-') || token === '-') return index;
  }
  return -1;
}

async function runWithoutCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      version: { type: 'boolean', short: 'v' },
      help: { type: 'boolean', short: 'h' },
      json: { type: 'boolean' },
      store: { type: 'string' },
      project: { type: 'string' },
    },
    strict: true,
  });
  if (values.version === true) {
    const version = packageVersion();
    print(io, values.json === true, { data: { version }, text: version });
    return EXIT_OK;
  }
  return runHelp(values.json === true ? ['--json'] : [], io);
}

async function runHelp(argv: readonly string[], io: CliIo): Promise<number> {
  const json = argv.includes('--json');
  const topics = argv.filter((token) => !token.startsWith('-'));
  const { formatGeneralHelp } = await import('./cli-help.js');
  if (topics.length > 0) {
    const load = Object.hasOwn(COMMANDS, topics[0]!) ? COMMANDS[topics[0]!] : undefined;
    if (!load)
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown command ${JSON.stringify(topics[0]!.slice(0, 40))}. Run "engram help" for the list of commands.`,
      );
    print(io, json, await commandHelp(await load()));
    return EXIT_OK;
  }
  const definitions = await Promise.all(Object.values(COMMANDS).map((load) => load()));
  print(io, json, {
    data: {
      commands: definitions.map((definition) => ({
        name: definition.name,
        summary: definition.summary,
        usage: `engram ${definition.usage}`,
      })),
    },
    text: formatGeneralHelp(definitions),
  });
  return EXIT_OK;
}

async function commandHelp(definition: CommandDefinition): Promise<CommandOutput> {
  const { formatCommandHelp } = await import('./cli-help.js');
  return {
    data: { command: definition.name, usage: `engram ${definition.usage}`, options: definition.options },
    text: formatCommandHelp(definition),
  };
}

/** Prints a command's output: its JSON document with --json, else its text. */
export function print(io: Pick<CliIo, 'stdout' | 'stderr'>, json: boolean, output: CommandOutput): void {
  if (output.printed === true) return;
  if (!json) for (const warning of output.warnings ?? []) io.stderr.write(`engram: warning: ${warning}\n`);
  if (json) {
    io.stdout.write(`${JSON.stringify(output.data, null, 2)}\n`);
    return;
  }
  if (output.text === '') return;
  io.stdout.write(output.text.endsWith('\n') ? output.text : `${output.text}\n`);
}
