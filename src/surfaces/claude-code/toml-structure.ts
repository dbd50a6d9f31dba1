/**
 * A structural reading of a TOML file, enough for engram to add whole tables at its end and take
 * them away again without a TOML library: it checks that every statement is a table header or a
 * `key = value` whose strings, arrays and inline tables close, refuses a table header given twice,
 * and returns each table's one-line basic-string values (Codex's `trusted_hash`). It is not a full
 * TOML validator (a number's exact form is not checked): it refuses what would make an appended
 * table land inside an unfinished value, or a file Codex cannot read in an obvious way.
 */

export interface TomlStructure {
  /** Table headers (`[a."b"]`, `[[c]]`) as written, their keys normalized (`a.b`). */
  tables: Map<string, Map<string, string>>;
}

export class TomlStructureError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

const BARE = /^[A-Za-z0-9_-]+/;
const BASIC = /^"(?:[^"\\\u0000-\u001f]|\\.)*"/;
const LITERAL = /^'[^'\n]*'/;

/** Reads a dotted key at the start of `text`: its parts and what follows. */
export function readKey(text: string): { parts: string[]; rest: string } | undefined {
  const parts: string[] = [];
  let rest = text.trimStart();
  for (;;) {
    const match = BARE.exec(rest) ?? BASIC.exec(rest) ?? LITERAL.exec(rest);
    if (!match) return undefined;
    const raw = match[0];
    if (raw.startsWith('"')) {
      try {
        parts.push(JSON.parse(raw) as string);
      } catch {
        return undefined;
      }
    } else parts.push(raw.startsWith("'") ? raw.slice(1, -1) : raw);
    rest = rest.slice(raw.length).trimStart();
    if (!rest.startsWith('.')) return { parts, rest };
    rest = rest.slice(1).trimStart();
  }
}

/** The normalized name of a dotted key (`hooks.state."a:b"` → `hooks.state.a:b` with the quoted part kept whole). */
export function keyName(parts: readonly string[]): string {
  return parts.map((part) => (/^[A-Za-z0-9_-]+$/.test(part) ? part : JSON.stringify(part))).join('.');
}

/** Throws TomlStructureError for what is not well-formed in the sense above. */
export function readTomlStructure(text: string): TomlStructure {
  const tables = new Map<string, Map<string, string>>([['', new Map()]]);
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  let current = tables.get('')!;
  let index = 0;
  while (index < lines.length) {
    const number = index + 1;
    const line = lines[index]!;
    const trimmed = line.trim();
    index += 1;
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (trimmed.startsWith('[')) {
      const array = trimmed.startsWith('[[');
      const key = readKey(trimmed.slice(array ? 2 : 1));
      const close = array ? ']]' : ']';
      if (!key || !key.rest.startsWith(close) || !/^\s*(#.*)?$/.test(key.rest.slice(close.length)))
        throw new TomlStructureError(number, `not a table header: ${trimmed.slice(0, 80)}`);
      const name = keyName(key.parts);
      if (!array && tables.has(name)) throw new TomlStructureError(number, `table [${name}] is defined twice`);
      current = tables.get(name) ?? new Map();
      tables.set(name, current);
      continue;
    }
    const key = readKey(line);
    if (!key || !key.rest.startsWith('='))
      throw new TomlStructureError(number, `expected "key = value" or a [table]: ${trimmed.slice(0, 80)}`);
    const name = keyName(key.parts);
    if (current.has(name)) throw new TomlStructureError(number, `key ${name} is given twice in its table`);
    // The value may run over several lines (arrays, multi-line strings): scan until it closes.
    let value = key.rest.slice(1);
    const first = value.trim();
    for (;;) {
      const state = scanValue(value, number);
      if (state === 'complete') break;
      if (index >= lines.length) throw new TomlStructureError(number, `the value of ${name} never closes`);
      value += `\n${lines[index]!}`;
      index += 1;
    }
    const single = BASIC.exec(first);
    let stored = first;
    if (single && /^\s*(#.*)?$/.test(first.slice(single[0].length))) stored = JSON.parse(single[0]) as string;
    current.set(name, stored);
  }
  return { tables };
}

/** Whether a value's text is complete; throws for one that is malformed on its own. */
function scanValue(text: string, line: number): 'complete' | 'open' {
  let depth = 0;
  let index = 0;
  let seen = false;
  const bad = (why: string): never => {
    throw new TomlStructureError(line, why);
  };
  while (index < text.length) {
    const char = text[index]!;
    if (char === '#') {
      const end = text.indexOf('\n', index);
      if (end < 0) break;
      index = end;
      continue;
    }
    if (char === '"' || char === "'") {
      const triple = text.startsWith(char.repeat(3), index);
      if (triple) {
        const end = text.indexOf(char.repeat(3), index + 3);
        if (end < 0) return 'open';
        index = end + 3;
        while (text[index] === char) index += 1; // Up to two quotes may end the content.
      } else {
        let end = index + 1;
        while (end < text.length && text[end] !== char && text[end] !== '\n') {
          if (char === '"' && text[end] === '\\') end += 1;
          end += 1;
        }
        if (text[end] !== char) bad('a string is not closed on its line');
        index = end + 1;
      }
      seen = true;
      continue;
    }
    if (char === '[' || char === '{') depth += 1;
    else if (char === ']' || char === '}') {
      depth -= 1;
      if (depth < 0) bad(`an unmatched "${char}"`);
    } else if (!/[\s,=A-Za-z0-9_:+.\-]/.test(char)) bad(`unexpected ${JSON.stringify(char)} in a value`);
    if (!/\s/.test(char)) seen = true;
    index += 1;
  }
  if (depth > 0) return 'open';
  if (!seen) bad('a key has no value');
  return 'complete';
}
