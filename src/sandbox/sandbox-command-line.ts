import { sandboxDenied } from './sandbox-denied.js';

// What a shell would interpret: command separators, pipes, background jobs, substitutions,
// redirections, subshells and line breaks. No shell runs here, so each is refused outright
// rather than passed on as a literal a model would not expect.
const SHELL_SYNTAX: ReadonlyArray<[RegExp, string]> = [
  [/\$\(|`/, 'command substitution ($(…) or backticks)'],
  [/\$/, 'variable expansion ($)'],
  [/[<>]/, 'redirection (< or >)'],
  [/\|/, 'pipes (|)'],
  [/&/, 'background jobs and && (&)'],
  [/;/, 'command separators (;)'],
  [/[()]/, 'subshells (parentheses)'],
  [/[\r\n]/, 'line breaks'],
  [/\u0000/, 'NUL characters'],
];

/**
 * Splits a command line into arguments the way a shell would for simple commands: spaces
 * separate, single or double quotes group (with no escapes inside). Anything a shell would
 * interpret (pipes, `;`, `&`, `$`, backticks, `<`, `>`, parentheses, line breaks) is refused.
 */
export function splitCommandLine(line: unknown, maxLength: number): string[] {
  if (typeof line !== 'string' || line.trim().length === 0)
    throw sandboxDenied('The command must be a non-empty string, such as "git log -5 --oneline".');
  if (line.length > maxLength)
    throw sandboxDenied(`The command is ${line.length} characters long; commands are at most ${maxLength}.`);
  for (const [pattern, what] of SHELL_SYNTAX) {
    if (pattern.test(line)) {
      throw sandboxDenied(
        `Shell syntax is refused: the command contains ${what}. Commands run without a shell; run one read-only command at a time, without pipes or redirections.`,
      );
    }
  }
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (const character of line) {
    if (quote) {
      if (character === quote) quote = undefined;
      else word += character;
    } else if (character === '"' || character === "'") {
      quote = character;
      word ??= '';
    } else if (/\s/.test(character)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + character;
    }
  }
  if (quote) throw sandboxDenied(`The command has an unclosed ${quote === '"' ? 'double' : 'single'} quote.`);
  if (word !== undefined) words.push(word);
  return words;
}
