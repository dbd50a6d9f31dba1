import { parseArgs } from 'node:util';
import { EngramError } from '../../kernel/errors.js';
import type { CliIo } from './cli-io.js';

/** One option of a command, as node:util parseArgs takes it, plus its help text. */
export interface CommandOption {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Shown in help as `--name <valueName>`. */
  valueName?: string;
  description: string;
}

/** Parsed flag values by flag name. */
export type OptionValues = Record<string, string | boolean | string[] | undefined>;

/** The flags every command accepts. */
export interface GlobalOptions {
  json: boolean;
  store?: string;
  project?: string;
}

/** One run of a command: its parsed flags and arguments and the process it runs in. */
export interface CommandInvocation {
  name: string;
  values: OptionValues;
  positionals: string[];
  global: GlobalOptions;
  io: CliIo;
}

/** What a command produced: a JSON document for --json and text for people. */
export interface CommandOutput {
  data: unknown;
  text: string;
  /** Warnings for a person, printed on stderr as "engram: warning: …" without --json (the JSON document carries its own). */
  warnings?: readonly string[];
  /** The command already printed what it had to say (a server announcing its address). */
  printed?: boolean;
}

/** A command of the `engram` binary. */
export interface CommandDefinition {
  name: string;
  summary: string;
  /** Usage line after `engram `, e.g. `recall <query…> [options]`. */
  usage: string;
  options: Record<string, CommandOption>;
  /** Extra help text: examples and notes. */
  details?: string;
  run(invocation: CommandInvocation): Promise<CommandOutput>;
}

/** Flags every command accepts, before or after its name. */
export const GLOBAL_OPTIONS: Record<string, CommandOption> = {
  json: { type: 'boolean', description: 'Print one JSON document on stdout instead of text' },
  store: {
    type: 'string',
    valueName: 'url',
    description: 'Store to use: a SQLite path or sqlite://<path> (setting store.url)',
  },
  project: {
    type: 'string',
    valueName: 'id',
    description: 'Project id to act on instead of the current directory’s (setting project.id)',
  },
  help: { type: 'boolean', short: 'h', description: 'Show help for this command' },
};

/** Global options that take a value, so the dispatcher can skip their values when it looks for the command. */
export const GLOBAL_OPTIONS_WITH_VALUES = new Set(['--store', '--project']);

/**
 * Parses a command's arguments (global flags allowed anywhere); unknown flags are INVALID_INPUT.
 * `leading` are the tokens before the command's name: only global flags go there, so they are read
 * with the global table alone. After the name, a command option that has a global option's name
 * (`install --project`, a boolean) is the command's; the global one stays reachable there with its
 * value attached (`--project=<id>`), and before the name as usual (`engram --project <id> install`).
 */
export function parseCommandArguments(
  definition: Pick<CommandDefinition, 'name' | 'options'>,
  argv: readonly string[],
  leading: readonly string[] = [],
): { values: OptionValues; positionals: string[]; global: GlobalOptions } {
  const before = parseWith(definition.name, GLOBAL_OPTIONS, leading, false);
  const shadowed = Object.keys(definition.options).filter((name) => Object.hasOwn(GLOBAL_OPTIONS, name));
  const attachedGlobals: string[] = [];
  const rest: string[] = [];
  for (const token of argv) {
    const attached = /^--([A-Za-z0-9-]+)=/.exec(token);
    const name = attached?.[1];
    if (
      name !== undefined &&
      shadowed.includes(name) &&
      GLOBAL_OPTIONS[name]!.type === 'string' &&
      definition.options[name]!.type !== 'string'
    )
      attachedGlobals.push(token);
    else rest.push(token);
  }
  const after = parseWith(definition.name, { ...GLOBAL_OPTIONS, ...definition.options }, rest, true);
  const fromAttached = parseWith(definition.name, GLOBAL_OPTIONS, attachedGlobals, false);
  const values: OptionValues = { ...after.values };
  const global: GlobalOptions = { json: before.values.json === true || after.values.json === true };
  for (const name of ['store', 'project'] as const) {
    // A shadowed name's value after the command is the command's option, not the global one.
    const later = shadowed.includes(name) ? undefined : after.values[name];
    const value = fromAttached.values[name] ?? later ?? before.values[name];
    if (typeof value === 'string') global[name] = value;
  }
  if (before.values.help === true) values.help = true;
  return { values, positionals: after.positionals, global };
}

function parseWith(
  command: string,
  options: Record<string, CommandOption>,
  argv: readonly string[],
  allowPositionals: boolean,
): { values: OptionValues; positionals: string[] } {
  const config: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, option] of Object.entries(options)) {
    config[name] = {
      type: option.type,
      ...(option.short && { short: option.short }),
      ...(option.multiple && { multiple: true }),
    };
  }
  try {
    return parseArgs({
      args: allowPositionals ? separatePositionals(argv, config) : [...argv],
      options: config,
      allowPositionals,
      strict: true,
    }) as { values: OptionValues; positionals: string[] };
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional argument.*$/s, '.');
    throw new EngramError('INVALID_INPUT', `${message} Run "engram ${command} --help" for its options.`, {
      cause: error,
    });
  }
}

const LONG_FLAG = /^--[A-Za-z0-9][A-Za-z0-9-]*(=[\s\S]*)?$/;
const SHORT_FLAGS = /^-[A-Za-z]+$/;

/**
 * Moves every argument that cannot be a flag ("- fix the bug", "-(", "*") behind a "--", so a
 * query or text that starts with a dash is taken as text instead of failing as an unknown flag.
 */
function separatePositionals(
  argv: readonly string[],
  config: Record<string, { type: 'string' | 'boolean'; short?: string }>,
): string[] {
  const takesValue = new Set<string>();
  for (const [name, option] of Object.entries(config)) {
    if (option.type !== 'string') continue;
    takesValue.add(`--${name}`);
    if (option.short) takesValue.add(`-${option.short}`);
  }
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const token = argv[index]!;
    if (token === '--') {
      positionals.push(...argv.slice(index + 1));
      break;
    }
    if (LONG_FLAG.test(token) || SHORT_FLAGS.test(token)) {
      flags.push(token);
      if (takesValue.has(token) && index + 1 < argv.length) flags.push(argv[(index += 1)]!);
    } else {
      positionals.push(token);
    }
  }
  return [...flags, '--', ...positionals];
}

/** A string flag's value (the last one when repeated), or undefined. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  if (Array.isArray(value)) return value.at(-1);
  return typeof value === 'string' ? value : undefined;
}

/** Every value of a string flag that may be repeated. */
export function stringOptions(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value;
  return typeof value === 'string' ? [value] : [];
}

/** A number flag: undefined when absent, INVALID_INPUT when not a finite number. */
export function numberOption(values: OptionValues, name: string): number | undefined {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  const value = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isFinite(value))
    throw new EngramError('INVALID_INPUT', `Invalid --${name} ${JSON.stringify(raw.slice(0, 40))}: expected a number.`);
  return value;
}

/** A whole-number flag within bounds. */
export function integerOption(
  values: OptionValues,
  name: string,
  bounds: { min: number; max: number },
): number | undefined {
  const value = numberOption(values, name);
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid --${name} ${value}: a whole number from ${bounds.min} to ${bounds.max}.`,
    );
  }
  return value;
}

/** Exactly one positional argument (an id), or INVALID_INPUT naming what is expected. */
export function singlePositional(invocation: Pick<CommandInvocation, 'name' | 'positionals'>, what: string): string {
  const { positionals, name } = invocation;
  if (positionals.length !== 1) {
    throw new EngramError(
      'INVALID_INPUT',
      positionals.length === 0
        ? `Missing ${what}: engram ${name} <${what}>.`
        : `engram ${name} takes one ${what}, got ${positionals.length} arguments.`,
    );
  }
  return positionals[0]!;
}

/** Refuses positional arguments for a command that takes none. */
export function noPositionals(invocation: Pick<CommandInvocation, 'name' | 'positionals'>): void {
  if (invocation.positionals.length > 0) {
    throw new EngramError(
      'INVALID_INPUT',
      `engram ${invocation.name} takes no arguments (got ${JSON.stringify(invocation.positionals[0]!.slice(0, 40))}).`,
    );
  }
}

/** Setting overrides that global flags carry, keyed by dotted setting path. */
export function globalSettingFlags(
  global: GlobalOptions,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { 'store.url': global.store, 'project.id': global.project, ...extra };
}
