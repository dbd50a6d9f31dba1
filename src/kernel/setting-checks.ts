import { EngramError } from './errors.js';
import type { SettingDefinition, SettingRange } from './setting-definition.js';
import { findSettingDefinition, type SettingPath, type SettingValue } from './settings.js';

/**
 * `value` as a value of the setting `definition`, as the config loader reads each layer: text
 * (environment variables, flags) converted to the setting's type, then checked against its range
 * or allowed values. CONFIG_INVALID naming `where` (e.g. `environment variable ENGRAM_TOP_K`) when
 * it does not fit.
 */
export function readSettingValue(definition: SettingDefinition, value: unknown, where: string): unknown {
  return read(definition, value, where, true);
}

/**
 * `value` checked as the value of the setting at `path`, without converting text: for options that
 * reach an adapter without passing the config loader (`new OpenAiCompatibleEmbedder({ batchSize })`),
 * so they meet the same bounds. CONFIG_INVALID naming the setting when it does not fit.
 */
export function checkSetting<Path extends SettingPath>(path: Path, value: unknown): SettingValue<Path> {
  const definition = findSettingDefinition(path);
  if (!definition) throw new EngramError('CONFIG_INVALID', `Unknown setting "${path}".`);
  return read(definition, value, path, false) as SettingValue<Path>;
}

function read(definition: SettingDefinition, value: unknown, where: string, convertText: boolean): unknown {
  const fromText = convertText && typeof value === 'string';
  switch (definition.type) {
    case 'number': {
      const number = fromText && value.trim() !== '' ? Number(value) : value;
      if (!isNonNegativeNumber(number)) throw invalid(where, `${JSON.stringify(value)} is not a non-negative number.`);
      return checkRange(definition, number, where);
    }
    case 'number[]': {
      const list = fromText ? value.split(',').map((part) => Number(part.trim())) : value;
      if (!Array.isArray(list) || !list.every(isNonNegativeNumber))
        throw invalid(where, 'expected a list of non-negative numbers.');
      return list.map((item: number) => checkRange(definition, item, where));
    }
    case 'string':
      if (typeof value !== 'string') throw invalid(where, 'expected a string.');
      if (definition.values && !definition.values.includes(value)) {
        throw invalid(where, `${JSON.stringify(value.slice(0, 40))} is unknown; use ${wordList(definition.values)}.`);
      }
      return value;
    case 'boolean':
      if (value === true || (convertText && (value === 'true' || value === '1'))) return true;
      if (value === false || (convertText && (value === 'false' || value === '0'))) return false;
      throw invalid(where, `${JSON.stringify(value)} is not true or false.`);
  }
}

function isNonNegativeNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function checkRange(range: SettingRange, value: number, where: string): number {
  if (
    value < range.minimum ||
    (range.maximum !== undefined && value > range.maximum) ||
    (range.integer && !Number.isInteger(value))
  ) {
    const bounds =
      range.maximum === undefined ? `at least ${range.minimum}` : `from ${range.minimum} to ${range.maximum}`;
    throw invalid(where, `${value} must be ${range.integer ? 'a whole number' : 'a number'} ${bounds}.`);
  }
  return value;
}

/** `a, b or c`. */
function wordList(values: readonly string[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

function invalid(where: string, problem: string): EngramError {
  return new EngramError('CONFIG_INVALID', `Invalid ${where}: ${problem}`);
}
