/** The slash commands of `engram chat`, and how a typed line is read as one. */

export type ChatCommandName = 'memory' | 'compact' | 'notes' | 'resume' | 'forget' | 'help' | 'exit';

export interface ChatCommandHelp {
  name: ChatCommandName;
  usage: string;
  summary: string;
}

export const CHAT_COMMANDS: readonly ChatCommandHelp[] = [
  {
    name: 'memory',
    usage: '/memory',
    summary: 'instruction files loaded, memories recalled this session, memories stored by extraction',
  },
  {
    name: 'compact',
    usage: '/compact [instructions]',
    summary: 'compact the conversation now (from the session notes when they have content, else a summary)',
  },
  { name: 'notes', usage: '/notes', summary: 'show the session notes (kept up to date in the background)' },
  { name: 'resume', usage: '/resume [id]', summary: "list this project's sessions, or switch to one" },
  {
    name: 'forget',
    usage: '/forget <id|text>',
    summary: 'archive a memory by id, or the one memory that clearly matches the text',
  },
  { name: 'help', usage: '/help', summary: 'this list' },
  { name: 'exit', usage: '/exit', summary: 'save the transcript and quit (Ctrl-C twice, or Ctrl-D, too)' },
];

/** A typed line read as a command: a known one with its argument, or an unknown name. */
export type ParsedChatLine =
  | { kind: 'command'; name: ChatCommandName; argument: string }
  | { kind: 'unknown-command'; name: string }
  | { kind: 'message'; text: string }
  | { kind: 'empty' };

const COMMAND = /^\/([A-Za-z][A-Za-z0-9_-]*)(?:\s+([\s\S]*))?$/;

/**
 * Reads one typed line: `/name [argument]` is a command (a line like `/etc/hosts?` that does not
 * look like one is a message), blank lines are nothing, anything else is a message to the model.
 */
export function parseChatLine(line: string): ParsedChatLine {
  const text = line.trim();
  if (text === '') return { kind: 'empty' };
  const match = COMMAND.exec(text);
  if (!match) return { kind: 'message', text };
  const name = match[1]!.toLowerCase();
  const known = CHAT_COMMANDS.find((command) => command.name === name);
  if (!known) return { kind: 'unknown-command', name: match[1]!.slice(0, 40) };
  return { kind: 'command', name: known.name, argument: (match[2] ?? '').trim() };
}

/** The text /help prints. */
export function chatHelpText(): string {
  const width = Math.max(...CHAT_COMMANDS.map((command) => command.usage.length));
  return [
    'Commands:',
    ...CHAT_COMMANDS.map((command) => `  ${command.usage.padEnd(width)}  ${command.summary}`),
    'Anything else is sent to the model; end a line with \\ to go on on the next line (one message).',
    'Ctrl-C stops a running answer; press it again at the prompt to quit.',
  ].join('\n');
}
