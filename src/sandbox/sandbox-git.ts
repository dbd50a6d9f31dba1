import {
  parseArguments,
  refusedOption,
  RUNS,
  WRITES,
  type OptionRule,
  type PathArgument,
} from './sandbox-arguments.js';
import { SECRET_DIRECTORY_NAMES, SECRET_FILE_NAMES, SECRET_NESTED_FILES } from '../privacy/secret-files.js';
import { sandboxDenied } from './sandbox-denied.js';
import { GIT_SAFETY_OPTIONS, hasGpgPlaceholder } from './sandbox-git-programs.js';

/** The git subcommands allowed: they read the repository and write nothing. */
export const GIT_SUBCOMMANDS = ['status', 'log', 'diff', 'show', 'branch', 'rev-parse'] as const;

/** A git command checked against its rule, before the repository is asked anything. */
export interface GitPlan {
  args: string[];
  paths: PathArgument[];
  /** Revisions to look up before running: a blob (a file's content by object id) is refused, its path is unknown. */
  objectChecks: string[];
}

const GIT_RULE: OptionRule = {
  shortValued: 'nSGL',
  patternValued: [
    '-S',
    '-G',
    '--grep',
    '--author',
    '--committer',
    '--format',
    '--pretty',
    '--since',
    '--until',
    '--after',
    '--before',
    '--date',
  ],
  refused: {
    '--output': WRITES,
    '--no-index': 'it compares files outside the repository',
    '--ext-diff': RUNS,
    '--textconv': RUNS,
    '-O': 'it reads an order file',
    '--show-signature': RUNS,
    '--paginate': RUNS,
    '--full-diff': 'it shows the changes of files outside the paths asked for, secret files included',
    '--follow':
      'it follows a file back through renames, past the checks on its older names; run git log on the path without it',
    '--submodule': 'it shows changes inside submodules, where the exclusion of secret files does not reach',
    '--ignore-submodules':
      'submodules are never looked into here (their own config could name programs, and secret files are not excluded there)',
  },
};

// `git branch` only lists: any option outside this list could create, rename or delete a branch.
const BRANCH_OPTIONS = new Set([
  '-a',
  '--all',
  '-r',
  '--remotes',
  '-l',
  '--list',
  '-v',
  '--verbose',
  '--show-current',
  '-i',
  '--ignore-case',
  '--contains',
  '--no-contains',
  '--merged',
  '--no-merged',
  '--points-at',
  '--sort',
  '--format',
  '--column',
  '--no-column',
  '--color',
  '--no-color',
  '--abbrev',
  '--no-abbrev',
  '-q',
  '--quiet',
]);
const BRANCH_VALUED = ['--contains', '--no-contains', '--merged', '--no-merged', '--points-at', '--sort', '--format'];

// `git status -v` prints the staged diff of every file, whatever paths were asked for.
const STATUS_VERBOSE =
  'it shows the diff of every staged file, secret files included, whatever paths are given; use git diff --cached instead';
const STATUS_REFUSED: Readonly<Record<string, string>> = { '-v': STATUS_VERBOSE, '--verbose': STATUS_VERBOSE };

// Subcommands that print file contents (diffs): secret files are cut out of them with exclude pathspecs.
const SHOWS_CONTENT = new Set(['status', 'log', 'diff', 'show']);
// Subcommands that print a blob named by its object id as it is: such ids are looked up first.
const SHOWS_OBJECTS = new Set(['show', 'diff']);

/**
 * Exclude pathspecs for every secret file and folder of SECRET_FILE_NAMES, at any depth and in any
 * case: a diff of the whole repository (`git log -p`, `git show HEAD`) leaves those files out.
 * Git reads a trailing `:(exclude)` word as a pathspec even without `--`.
 */
export const SECRET_PATHSPECS: readonly string[] = [
  ...SECRET_FILE_NAMES.map((entry) => `:(exclude,glob,icase)**/${entry.glob}`),
  ...SECRET_DIRECTORY_NAMES.map((name) => `:(exclude,glob,icase)**/${name}/**`),
  ...SECRET_NESTED_FILES.map((path) => `:(exclude,glob,icase)**/${path}`),
];

/**
 * Checks a git command line (the words after `git`): an allowed subcommand, no option that writes,
 * runs programs or widens a diff past its paths, every revision and path checked as a file read
 * (`HEAD:.env`, `:0:.env`, `git log -p .env` are refused), and secret files excluded from diffs.
 */
export function planGit(args: readonly string[]): GitPlan {
  const [subcommand, ...rest] = args;
  if (subcommand === undefined || !(GIT_SUBCOMMANDS as readonly string[]).includes(subcommand)) {
    const shown = JSON.stringify((subcommand ?? '').slice(0, 60));
    throw sandboxDenied(
      `git ${shown} is not allowed; only git ${GIT_SUBCOMMANDS.join(', ')}, which read the repository and change nothing. Options go after the subcommand.`,
    );
  }
  const rule: OptionRule =
    subcommand === 'branch'
      ? { ...GIT_RULE, longValued: BRANCH_VALUED, patternValued: [...(GIT_RULE.patternValued ?? []), ...BRANCH_VALUED] }
      : subcommand === 'status'
        ? { ...GIT_RULE, refused: { ...GIT_RULE.refused, ...STATUS_REFUSED } }
        : GIT_RULE;
  const parsed = parseArguments(`git ${subcommand}`, rest, rule);
  // Whatever option carries it (--format, --pretty, an abbreviation, a separate word), a gpg placeholder runs gpg.program.
  const signatureWord = rest.find(hasGpgPlaceholder);
  if (signatureWord !== undefined) {
    throw sandboxDenied(
      `git ${subcommand}: ${JSON.stringify(signatureWord.slice(0, 80))} asks for signature details (%G?, %GS, %GK, %GG, %GF, %GP, %GT, %(signature)), which runs gpg, and it runs other programs; leave the signature placeholders out.`,
    );
  }
  if (subcommand === 'branch') {
    for (const option of parsed.options) {
      if (!BRANCH_OPTIONS.has(option))
        throw refusedOption('git branch', option, 'git branch may only list branches here');
    }
    // A name after "--" creates a branch just as well as one before it.
    const names = parsed.positionals.length + parsed.afterSeparator.length;
    if (names > 0 && !parsed.options.has('-l') && !parsed.options.has('--list')) {
      throw sandboxDenied(
        'git branch with a name would create a branch; to list branches matching a pattern, add --list.',
      );
    }
  }
  // Revisions and paths are told apart only by git, so every word is checked as a file read.
  const paths: PathArgument[] = [];
  for (const value of [...parsed.paths.map((path) => path.value), ...parsed.positionals, ...parsed.afterSeparator]) {
    paths.push({ value, readsFile: true });
    // `rev:path`, `:0:path`, `HEAD@{1 day ago}:path` and log -L's `range:path` show a file as committed:
    // every text after a colon is checked, so whichever one git reads as the path is.
    for (
      let colon = value.indexOf(':');
      colon !== -1 && colon < value.length - 1;
      colon = value.indexOf(':', colon + 1)
    ) {
      paths.push({ value: value.slice(colon + 1), readsFile: true });
    }
  }
  const objectChecks = SHOWS_OBJECTS.has(subcommand) ? parsed.positionals.filter((word) => !word.includes(':')) : [];
  // -L takes no pathspec (its file is checked above), so there is nothing to exclude from.
  const exclusions = SHOWS_CONTENT.has(subcommand) && !parsed.options.has('-L') ? SECRET_PATHSPECS : [];
  const noPrograms = [
    ...(subcommand === 'diff' || subcommand === 'show' || subcommand === 'log'
      ? ['--no-ext-diff', '--no-textconv']
      : []),
    // A submodule's work tree is checked by a git run inside it, under the submodule's own config.
    ...(subcommand === 'diff' || subcommand === 'status' ? ['--ignore-submodules=all'] : []),
  ];
  return { args: [...GIT_SAFETY_OPTIONS, subcommand, ...noPrograms, ...rest, ...exclusions], paths, objectChecks };
}
