import { sandboxDenied } from './sandbox-denied.js';

/** An argument that names a file or folder: it must stay inside the project. */
export interface PathArgument {
  value: string;
  /** Also refuse files that usually hold secrets (arguments the command reads as files). */
  readsFile: boolean;
}

/** How one command's options are read: which take values, which values are files or patterns, which are refused. */
export interface OptionRule {
  /** Short option letters taking a value, attached (`-n5`) or as the next argument. */
  shortValued?: string;
  /** Long options taking a value (`--file=x` or `--file x`). */
  longValued?: readonly string[];
  /** Options whose value is a file the command reads. */
  fileValued?: readonly string[];
  /** Options whose value is a pattern or text, never a path. */
  patternValued?: readonly string[];
  /** Refused options (`-x` or `--long`), with the reason. */
  refused?: Readonly<Record<string, string>>;
}

/** The arguments of one command, sorted by what they are. */
export interface ParsedArguments {
  options: Set<string>;
  positionals: string[];
  /** Positionals given after `--`, and where that `--` was (-1 without one). */
  afterSeparator: string[];
  separatorIndex: number;
  /** Option values that name files. */
  paths: PathArgument[];
}

export const FOLLOWS_LINKS = 'it follows symbolic links, which may lead outside the project';
export const WRITES = 'it writes files';
export const RUNS = 'it runs other programs';

/** Sorts a command's arguments into options, option values, positionals and what follows `--`, refusing the refused options. */
export function parseArguments(command: string, args: readonly string[], rule: OptionRule): ParsedArguments {
  const parsed: ParsedArguments = {
    options: new Set(),
    positionals: [],
    afterSeparator: [],
    separatorIndex: -1,
    paths: [],
  };
  const refused = rule.refused ?? {};
  const value = (option: string, given: string): void => {
    if ((rule.patternValued ?? []).includes(option)) return;
    parsed.paths.push({ value: given, readsFile: (rule.fileValued ?? []).includes(option) });
  };
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index]!;
    if (word === '--') {
      parsed.separatorIndex = index;
      parsed.afterSeparator.push(...args.slice(index + 1));
      break;
    }
    if (word.startsWith('--')) {
      const equals = word.indexOf('=');
      const option = canonicalLongOption(command, equals === -1 ? word : word.slice(0, equals), rule);
      parsed.options.add(option);
      if (equals !== -1) value(option, word.slice(equals + 1));
      else if ((rule.longValued ?? []).includes(option)) {
        const next = args[index + 1];
        if (next === undefined) throw sandboxDenied(`${command} ${option} needs a value.`);
        value(option, next);
        index += 1;
      }
    } else if (word.startsWith('-') && word.length > 1) {
      for (let position = 1; position < word.length; position += 1) {
        const option = `-${word[position]}`;
        if (refused[option] !== undefined) throw refusedOption(command, option, refused[option]!);
        parsed.options.add(option);
        if ((rule.shortValued ?? '').includes(word[position]!)) {
          const attached = word.slice(position + 1);
          const next = args[index + 1];
          if (attached === '' && next === undefined) throw sandboxDenied(`${command} ${option} needs a value.`);
          value(option, attached === '' ? next! : attached);
          if (attached === '') index += 1;
          break;
        }
      }
    } else {
      parsed.positionals.push(word);
    }
  }
  return parsed;
}

/**
 * The long option an abbreviation stands for: getopt and git accept any unambiguous prefix
 * (`--fol` is `--follow`), so a prefix of a refused option is refused, and a prefix of one
 * known option is read as that option.
 */
function canonicalLongOption(command: string, option: string, rule: OptionRule): string {
  const refused = rule.refused ?? {};
  if (refused[option] !== undefined) throw refusedOption(command, option, refused[option]!);
  const known = [...(rule.longValued ?? []), ...(rule.fileValued ?? []), ...(rule.patternValued ?? [])].filter((name) =>
    name.startsWith('--'),
  );
  if (known.includes(option) || option.length < 3) return option;
  const refusedName = Object.keys(refused).find((name) => name.startsWith('--') && name.startsWith(option));
  if (refusedName !== undefined)
    throw refusedOption(command, option, `it abbreviates ${refusedName}, and ${refused[refusedName]!}`);
  const matches = [...new Set(known.filter((name) => name.startsWith(option)))];
  return matches.length === 1 ? matches[0]! : option;
}

/** SANDBOX_DENIED for one option, with the reason. */
export function refusedOption(command: string, option: string, reason: string) {
  return sandboxDenied(`${command} ${option} is not allowed: ${reason}.`);
}
