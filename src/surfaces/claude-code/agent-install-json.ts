import { EngramError } from '../../kernel/errors.js';

/**
 * The JSON side of an agent install (agent-installs.ts): a config file read as one object, the arrays and
 * keys install adds made where missing, and on uninstall exactly those taken out again, with the objects
 * install made that are empty again.
 */

/** A JSON file's object (empty for no file), or CONFIG_INVALID naming the file: nothing is written then. */
export function parseJsonObject(file: string, text: string | undefined): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new EngramError(
      'CONFIG_INVALID',
      `${file} is not valid JSON (${(error as Error).message}); fix it by hand, then run the install again. Nothing was changed.`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new EngramError('CONFIG_INVALID', `${file} is not a JSON object; fix it by hand. Nothing was changed.`);
  return value as Record<string, unknown>;
}

/** The array at `path`, made (with its objects) when missing; `createdFrom`: the depth from which install made it. */
export function arrayAt(
  root: Record<string, unknown>,
  path: readonly string[],
  file: string,
): { array: unknown[]; createdFrom: number } {
  let object = root;
  let createdFrom = -1;
  for (const [depth, key] of path.entries()) {
    const last = depth === path.length - 1;
    let next = object[key];
    if (next === undefined) {
      if (createdFrom < 0) createdFrom = depth;
      next = last ? [] : {};
      object[key] = next;
    }
    const ok = last ? Array.isArray(next) : next !== null && typeof next === 'object' && !Array.isArray(next);
    if (!ok)
      throw new EngramError(
        'CONFIG_INVALID',
        `${file}: "${path.slice(0, depth + 1).join('.')}" is not ${last ? 'an array' : 'an object'}; fix it by hand. Nothing was changed.`,
      );
    if (last) return { array: next as unknown[], createdFrom: createdFrom < 0 ? path.length : createdFrom };
    object = next as Record<string, unknown>;
  }
  throw new Error('empty path');
}

export function removeItems(
  root: Record<string, unknown>,
  entry: { path: string[]; items: unknown[]; createdFrom: number; marker?: string },
): void {
  const { path, items, createdFrom, marker } = entry;
  const chain: Array<Record<string, unknown>> = [root];
  for (const key of path.slice(0, -1)) {
    const next = chain.at(-1)![key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) return;
    chain.push(next as Record<string, unknown>);
  }
  const last = path.at(-1)!;
  const array = chain.at(-1)![last];
  if (!Array.isArray(array)) return;
  const added = new Set(items.map((item) => JSON.stringify(item)));
  for (let at = array.length - 1; at >= 0; at -= 1) {
    const text = JSON.stringify(array[at]);
    if (added.has(text) || (marker !== undefined && text.includes(marker))) array.splice(at, 1);
  }
  // What install made and is empty again goes; what the user had stays, empty or not.
  for (let depth = path.length - 1; depth >= createdFrom && depth >= 0; depth -= 1) {
    const holder = chain[depth]!;
    const value = holder[path[depth]!];
    const empty = Array.isArray(value) ? value.length === 0 : Object.keys(value as object).length === 0;
    if (!empty) break;
    delete holder[path[depth]!];
  }
}

/** The object at `path`, made when missing (CONFIG_INVALID when something else is there). */
export function objectAt(
  root: Record<string, unknown>,
  path: readonly string[],
  file: string,
): Record<string, unknown> {
  let object = root;
  for (const [depth, key] of path.entries()) {
    const next = object[key] ?? {};
    if (next === null || typeof next !== 'object' || Array.isArray(next))
      throw new EngramError(
        'CONFIG_INVALID',
        `${file}: "${path.slice(0, depth + 1).join('.')}" is not an object; fix it by hand. Nothing was changed.`,
      );
    object[key] = next;
    object = next as Record<string, unknown>;
  }
  return object;
}

/** Takes out a key install set, with the objects install made that are empty again; says why when it stays. */
export function removeKey(
  root: Record<string, unknown>,
  entry: { path: string[]; key: string; value: unknown; createdFrom: number },
): string | undefined {
  const chain: Array<Record<string, unknown>> = [root];
  for (const key of entry.path) {
    const next = chain.at(-1)![key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) return undefined;
    chain.push(next as Record<string, unknown>);
  }
  const holder = chain.at(-1)!;
  if (!Object.hasOwn(holder, entry.key)) return undefined;
  const name = [...entry.path, entry.key].join('.');
  if (JSON.stringify(holder[entry.key]) !== JSON.stringify(entry.value))
    return `"${name}" was changed since install: left as it is; remove it by hand if unwanted`;
  delete holder[entry.key];
  for (let depth = entry.path.length - 1; depth >= entry.createdFrom && depth >= 0; depth -= 1) {
    const parent = chain[depth]!;
    if (Object.keys(parent[entry.path[depth]!] as object).length > 0) break;
    delete parent[entry.path[depth]!];
  }
  return undefined;
}

export function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}

/** The depth from which `path` is missing in `root` (its length when all of it is there). */
export function missingFrom(root: Record<string, unknown>, path: readonly string[]): number {
  let value: unknown = root;
  for (const [depth, key] of path.entries()) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return depth;
    value = (value as Record<string, unknown>)[key];
  }
  return path.length;
}
