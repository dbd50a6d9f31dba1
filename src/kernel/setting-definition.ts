/**
 * What one setting is: its type, default, range or allowed values, environment variable and meaning,
 * and the builders the table's rows are written with (`integer(8, 'Memories recalled…', { minimum: 1 })`).
 * The table of rows is in settings.ts.
 */

interface SettingDefinitionBase {
  /** Dotted path, e.g. `recall.topK`. */
  readonly path: string;
  /** One line: what the setting means. */
  readonly description: string;
  /** The environment variable that sets it, when one does. */
  readonly env?: string;
  /** A credential: `engram config` masks it. */
  readonly secret?: boolean;
}

/** Bounds of a number setting; every number setting is finite and at least `minimum` (0 unless stated). */
export interface SettingRange {
  readonly minimum: number;
  readonly maximum?: number;
  /** Whole numbers only (counts, milliseconds, bytes). */
  readonly integer: boolean;
}

export interface NumberSettingDefinition extends SettingDefinitionBase, SettingRange {
  readonly type: 'number';
  readonly default: number;
}

/** A list of numbers (comma-separated in environment variables and flags), each within the range. */
export interface NumberListSettingDefinition extends SettingDefinitionBase, SettingRange {
  readonly type: 'number[]';
  readonly default: readonly number[];
}

export interface StringSettingDefinition<Value extends string = string> extends SettingDefinitionBase {
  readonly type: 'string';
  readonly default: Value;
  /** The values allowed, when only some are. */
  readonly values?: readonly Value[];
}

export interface BooleanSettingDefinition extends SettingDefinitionBase {
  readonly type: 'boolean';
  readonly default: boolean;
}

/** One setting: its dotted path, type, default, range or allowed values, environment variable and meaning. */
export type SettingDefinition =
  NumberSettingDefinition | NumberListSettingDefinition | StringSettingDefinition | BooleanSettingDefinition;

/** A row of the table: a definition before its path is known (the path is where the row sits). */
export type SettingRow<Definition extends SettingDefinition> = Omit<Definition, 'path'>;

interface RowOptions {
  env?: string;
}

interface RangeOptions extends RowOptions {
  minimum?: number;
  maximum?: number;
}

function rangeOf(options: RangeOptions, integer: boolean): SettingRange {
  return { minimum: options.minimum ?? 0, ...(options.maximum !== undefined && { maximum: options.maximum }), integer };
}

function envOf(options: RowOptions): { env?: string } {
  return options.env === undefined ? {} : { env: options.env };
}

/** A whole number (a count, milliseconds, bytes). */
export function integer(
  fallback: number,
  description: string,
  options: RangeOptions = {},
): SettingRow<NumberSettingDefinition> {
  return { type: 'number', default: fallback, description, ...rangeOf(options, true), ...envOf(options) };
}

/** A number that may have a fraction (a share, a weight, days). */
export function number(
  fallback: number,
  description: string,
  options: RangeOptions = {},
): SettingRow<NumberSettingDefinition> {
  return { type: 'number', default: fallback, description, ...rangeOf(options, false), ...envOf(options) };
}

export function numbers(
  fallback: readonly number[],
  description: string,
  options: RangeOptions = {},
): SettingRow<NumberListSettingDefinition> {
  return {
    type: 'number[]',
    default: Object.freeze([...fallback]),
    description,
    ...rangeOf(options, false),
    ...envOf(options),
  };
}

export function text(
  fallback: string,
  description: string,
  options: RowOptions & { secret?: true } = {},
): SettingRow<StringSettingDefinition> {
  return { type: 'string', default: fallback, description, ...envOf(options), ...(options.secret && { secret: true }) };
}

export function choice<const Value extends string>(
  fallback: NoInfer<Value>,
  description: string,
  options: RowOptions & { values: readonly Value[] },
): SettingRow<StringSettingDefinition<Value>> {
  return { type: 'string', default: fallback, description, values: options.values, ...envOf(options) };
}

export function flag(
  fallback: boolean,
  description: string,
  options: RowOptions = {},
): SettingRow<BooleanSettingDefinition> {
  return { type: 'boolean', default: fallback, description, ...envOf(options) };
}

/** Groups of rows, keyed by group then key: what each subject file holds (`recall.topK` is the row `topK` of `recall`). */
export type SettingGroups = Record<string, Record<string, SettingRow<SettingDefinition>>>;
