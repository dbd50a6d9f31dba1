import {
  FOLLOWS_LINKS,
  parseArguments,
  refusedOption,
  RUNS,
  WRITES,
  type OptionRule,
  type PathArgument,
} from './sandbox-arguments.js';
import { GIT_SUBCOMMANDS, planGit } from './sandbox-git.js';
import { secretSearchExclusions } from '../privacy/secret-files.js';
import { sandboxDenied } from './sandbox-denied.js';

export { GIT_SUBCOMMANDS } from './sandbox-git.js';
export type { PathArgument } from './sandbox-arguments.js';

/** The read-only commands a sandboxed helper may run. */
export const SANDBOX_COMMANDS = ['ls', 'cat', 'head', 'tail', 'wc', 'grep', 'rg', 'find', 'git'] as const;
export type SandboxCommand = (typeof SANDBOX_COMMANDS)[number];

/** A command checked against its rule: the arguments to pass (safety flags included) and the paths to check. */
export interface CommandPlan {
  command: SandboxCommand;
  args: string[];
  paths: PathArgument[];
  /** git only: revisions to look up before running, refused when they name a blob. */
  objectChecks?: string[];
}

// Options shared by grep and rg that carry the search pattern.
const GREP_PATTERN = ['-e', '--regexp'];
const GREP_FILE = ['-f', '--file'];

const RULES: Record<Exclude<SandboxCommand, 'find' | 'git'>, OptionRule> = {
  ls: {
    shortValued: 'ITw',
    longValued: [
      '--block-size',
      '--format',
      '--hide',
      '--ignore',
      '--indicator-style',
      '--quoting-style',
      '--sort',
      '--time',
      '--time-style',
      '--tabsize',
      '--width',
    ],
    patternValued: ['-I', '--hide', '--ignore', '--time-style', '--format'],
    refused: { '-L': FOLLOWS_LINKS, '--dereference': FOLLOWS_LINKS },
  },
  cat: {},
  head: { shortValued: 'nc', longValued: ['--lines', '--bytes'] },
  tail: {
    shortValued: 'ncs',
    longValued: ['--lines', '--bytes', '--sleep-interval', '--max-unchanged-stats'],
    refused: {
      '-f': 'it waits for more output forever',
      '-F': 'it waits for more output forever',
      '--follow': 'it waits for more output forever',
      '--pid': 'it waits for a process',
    },
  },
  wc: { refused: { '--files0-from': 'it reads file names from another file' } },
  grep: {
    shortValued: 'efmABCdD',
    longValued: [
      '--regexp',
      '--file',
      '--max-count',
      '--after-context',
      '--before-context',
      '--context',
      '--include',
      '--exclude',
      '--exclude-dir',
      '--exclude-from',
      '--label',
      '--binary-files',
      '--devices',
      '--directories',
      '--group-separator',
    ],
    fileValued: [...GREP_FILE, '--exclude-from'],
    patternValued: [...GREP_PATTERN, '--include', '--exclude', '--exclude-dir', '--label', '--group-separator'],
    refused: { '-R': FOLLOWS_LINKS, '--dereference-recursive': FOLLOWS_LINKS },
  },
  rg: {
    shortValued: 'efgtTmABCMjErd',
    longValued: [
      '--regexp',
      '--file',
      '--glob',
      '--iglob',
      '--type',
      '--type-not',
      '--type-add',
      '--max-count',
      '--after-context',
      '--before-context',
      '--context',
      '--max-columns',
      '--threads',
      '--encoding',
      '--replace',
      '--max-depth',
      '--ignore-file',
      '--sort',
      '--sortr',
      '--max-filesize',
      '--context-separator',
      '--field-match-separator',
      '--path-separator',
    ],
    fileValued: [...GREP_FILE, '--ignore-file'],
    patternValued: [
      ...GREP_PATTERN,
      '-g',
      '--glob',
      '--iglob',
      '-r',
      '--replace',
      '--type-add',
      '--context-separator',
      '--field-match-separator',
    ],
    refused: {
      '--pre': RUNS,
      '--pre-glob': RUNS,
      '--hostname-bin': RUNS,
      '-z': 'it runs decompression programs',
      '--search-zip': 'it runs decompression programs',
      '-L': FOLLOWS_LINKS,
      '--follow': FOLLOWS_LINKS,
    },
  },
};

// find primaries that delete, write files or run programs; and the ones whose argument is a file
// (-newerXY with Y = t takes a time, not a file, and is not matched).
const FIND_REFUSED: Readonly<Record<string, string>> = {
  '-exec': RUNS,
  '-execdir': RUNS,
  '-ok': RUNS,
  '-okdir': RUNS,
  '-delete': 'it deletes files',
  '-fprint': WRITES,
  '-fprint0': WRITES,
  '-fprintf': WRITES,
  '-fls': WRITES,
  '-files0-from': 'it reads start points from another file',
  '-L': FOLLOWS_LINKS,
  '-follow': FOLLOWS_LINKS,
  '-D': 'debug options are not available',
};
const FIND_FILE_PRIMARY = /^-(newer|anewer|cnewer|samefile|newer[aBcm][aBcm])$/;

/**
 * Checks a command (already split into words) against the allow-list and its rule: the command
 * must be listed, options that write, delete, run programs or follow links are refused, and every
 * argument naming a file is returned for the path check. Throws SANDBOX_DENIED.
 */
export function planCommand(words: readonly string[]): CommandPlan {
  const [name, ...args] = words;
  if (name === undefined || !(SANDBOX_COMMANDS as readonly string[]).includes(name)) {
    const shown = JSON.stringify((name ?? '').slice(0, 60));
    throw sandboxDenied(
      `The command ${shown} is not allowed; read-only commands only: ${SANDBOX_COMMANDS.join(', ')} (git ${GIT_SUBCOMMANDS.join('|')}). Nothing here can write files except memories, through the memory tool.`,
    );
  }
  const command = name as SandboxCommand;
  if (command === 'find') return planFind(args);
  if (command === 'git') return { command, ...planGit(args) };
  const rule = RULES[command];
  const parsed = parseArguments(command, args, rule);
  const paths = [...parsed.paths];
  let files = [...parsed.positionals, ...parsed.afterSeparator];
  let extra: string[] = [];
  if (command === 'grep' || command === 'rg') {
    const hasPattern = [...GREP_PATTERN, ...GREP_FILE].some((option) => parsed.options.has(option));
    // The first word after the options is the pattern, unless -e or -f gave it.
    if (!hasPattern) files = [...parsed.positionals.slice(1), ...parsed.afterSeparator];
    // Always, not only when a recursive option is seen: getopt takes abbreviations (`--rec`) and
    // grep reads folders under other options too. Secret files named outright are refused by the
    // path check; the list's safe exceptions (.env.example) are skipped by these globs as well.
    extra = searchExclusions(command);
  }
  for (const file of files) paths.push({ value: file, readsFile: true });
  // The exclusions go last (before any "--"): when --include and --exclude disagree, the last one wins.
  const separator = parsed.separatorIndex;
  const ordered =
    separator === -1 ? [...args, ...extra] : [...args.slice(0, separator), ...extra, ...args.slice(separator)];
  return { command, args: ordered, paths };
}

function planFind(args: readonly string[]): CommandPlan {
  const paths: PathArgument[] = [];
  let index = 0;
  // Leading options (-H, -P, -O3) come before the start points; "--" ends them.
  while (index < args.length && /^-(H|P|O\d*|L|D)$/.test(args[index]!)) {
    const option = args[index]!;
    const reason = FIND_REFUSED[option];
    if (reason !== undefined) throw refusedOption('find', option, reason);
    index += 1;
  }
  if (args[index] === '--') index += 1;
  // Start points run until the expression begins (a word starting with "-" or "!").
  while (index < args.length && !args[index]!.startsWith('-') && args[index] !== '!') {
    paths.push({ value: args[index]!, readsFile: false });
    index += 1;
  }
  for (; index < args.length; index += 1) {
    const word = args[index]!;
    const reason = FIND_REFUSED[word];
    if (reason !== undefined) throw refusedOption('find', word, reason);
    if (FIND_FILE_PRIMARY.test(word)) {
      const value = args[index + 1];
      if (value === undefined) throw sandboxDenied(`find ${word} needs a file argument.`);
      paths.push({ value, readsFile: false });
      index += 1;
    }
  }
  return { command: 'find', args: [...args], paths };
}

/** grep and rg options that leave secret files and folders (SECRET_FILE_NAMES) and `.git` out of a search. */
function searchExclusions(command: 'grep' | 'rg'): string[] {
  const { files, directories } = secretSearchExclusions();
  if (command === 'grep')
    return [...files.map((glob) => `--exclude=${glob}`), ...directories.map((name) => `--exclude-dir=${name}`)];
  // rg skips a folder whose name matches an excluding glob, at any depth.
  return [...files, ...directories].map((glob) => `--glob=!${glob}`);
}
