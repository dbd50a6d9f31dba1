/**
 * The text rules of CLAUDE.md-style instruction files (FORMATS §3.1), with no I/O: the `paths:`
 * frontmatter of a rule, `@path` imports outside code, and the block-level HTML comments that
 * never reach the model. Glob matching lives in instruction-globs.ts.
 */
import { MAX_PATH_LENGTH } from './instruction-globs.js';

/** A rule file split into its `paths:` globs and the text that follows the frontmatter. */
export interface RuleFrontmatter {
  /** The globs of `paths:` (or `globs:`), as written; undefined when the rule applies everywhere. */
  paths?: string[];
  body: string;
  /** What was wrong with the frontmatter (the rule still loads). */
  warnings: string[];
}

/** One `@path` import found in a file's text. */
export interface InstructionImport {
  /** The path as written after `@` (escaped spaces unescaped, trailing punctuation dropped). */
  path: string;
  /** 1-based line of the import. */
  line: number;
}

const FRONTMATTER_OPEN = /^---[ \t]*$/;
const FRONTMATTER_CLOSE = /^(?:---|\.\.\.)[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const COMMENT_START = /^ {0,3}<!--/;
// `@` at the start of a line or after white space, so e-mail addresses and `a@b` never count.
const IMPORT = /(^|\s)@((?:[^\s\\]|\\ )+)/g;
const IMPORT_FIRST_CHARACTER = /^[A-Za-z0-9_.~/-]/;
const TRAILING_PUNCTUATION = /[.,;:!?)\]}>'"`]+$/;

/** Normalizes file text as loaded: no byte-order mark, `\n` line ends. */
export function normalizeInstructionText(text: string): string {
  return (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).replace(/\r\n?/g, '\n');
}

/**
 * Reads a rule's frontmatter leniently: `paths:` as a block list, a flow list or one string
 * (comma-separated patterns allowed, commas inside braces kept); `globs:` is read the same way
 * when `paths:` is absent, as Claude Code accepts it. Unquoted `**` is fine here, unlike in YAML.
 */
export function parseRuleFrontmatter(text: string): RuleFrontmatter {
  const lines = text.split('\n');
  if (lines.length < 2 || !FRONTMATTER_OPEN.test(lines[0]!)) return { body: text, warnings: [] };
  const close = lines.findIndex((line, index) => index > 0 && FRONTMATTER_CLOSE.test(line));
  if (close === -1) return { body: text, warnings: ['frontmatter has no closing "---" line; read as text'] };
  const header = lines.slice(1, close);
  const body = lines.slice(close + 1).join('\n');
  const found = readListKey(header, 'paths') ?? readListKey(header, 'globs');
  if (found === undefined) return { body, warnings: [] };
  const paths = found.filter((pattern) => pattern !== '');
  if (paths.length === 0) return { body, warnings: ['paths: holds no pattern; the rule applies everywhere'] };
  return { paths, body, warnings: [] };
}

/** The values of a top-level `key:` in frontmatter lines, or undefined when the key is absent. */
function readListKey(header: readonly string[], key: string): string[] | undefined {
  const start = header.findIndex((line) => line.startsWith(`${key}:`));
  if (start === -1) return undefined;
  const inline = stripYamlComment(header[start]!.slice(key.length + 1)).trim();
  if (inline !== '') {
    if (inline.startsWith('[')) {
      const inner = inline.endsWith(']') ? inline.slice(1, -1) : inline.slice(1);
      return splitOutsideBraces(inner)
        .map(unquote)
        .flatMap((item) => splitOutsideBraces(item));
    }
    return splitOutsideBraces(unquote(inline));
  }
  const items: string[] = [];
  for (const line of header.slice(start + 1)) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const item = /^\s*-\s?(.*)$/.exec(line);
    if (!item) break;
    items.push(...splitOutsideBraces(unquote(stripYamlComment(item[1]!).trim())));
  }
  return items;
}

/** Drops a YAML comment (` #` outside quotes) from a value. */
function stripYamlComment(value: string): string {
  let quote = '';
  for (let index = 0; index < value.length; index += 1) {
    const character = value[index]!;
    if (quote !== '') {
      if (character === quote) quote = '';
    } else if (character === '"' || character === "'") {
      quote = character;
    } else if (character === '#' && (index === 0 || /\s/.test(value[index - 1]!))) {
      return value.slice(0, index);
    }
  }
  return value;
}

function unquote(value: string): string {
  const trimmed = value.trim();
  if (trimmed.length >= 2 && (trimmed[0] === '"' || trimmed[0] === "'") && trimmed.at(-1) === trimmed[0])
    return trimmed.slice(1, -1);
  return trimmed;
}

/** Splits on commas that are not inside `{…}` or quotes, trimming each part. */
function splitOutsideBraces(value: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let current = '';
  for (const character of value) {
    if (quote !== '') {
      if (character === quote) quote = '';
    } else if (character === '"' || character === "'") {
      quote = character;
    } else if (character === '{') {
      depth += 1;
    } else if (character === '}') {
      depth = Math.max(0, depth - 1);
    } else if (character === ',' && depth === 0) {
      parts.push(current);
      current = '';
      continue;
    }
    current += character;
  }
  parts.push(current);
  return parts.map((part) => unquote(part)).filter((part) => part !== '');
}

/** Whether each line lies inside a fenced code block (the fence lines themselves count as inside). */
function fencedLines(lines: readonly string[]): boolean[] {
  const inside: boolean[] = [];
  let fence: string | undefined;
  for (const line of lines) {
    const match = FENCE.exec(line);
    if (fence !== undefined) {
      inside.push(true);
      // A closing fence: the same character, at least as long, nothing else on the line.
      if (
        match &&
        match[1]![0] === fence[0] &&
        match[1]!.length >= fence.length &&
        line.slice(match[0].length).trim() === ''
      )
        fence = undefined;
    } else if (match) {
      fence = match[1]!;
      inside.push(true);
    } else {
      inside.push(false);
    }
  }
  return inside;
}

/**
 * Removes block-level HTML comments (a line that starts with `<!--`, up to the `-->`), outside
 * code fences; inline comments and an unclosed `<!--` stay, so a typo never hides text.
 */
export function stripBlockHtmlComments(text: string): string {
  const lines = text.split('\n');
  const fenced = fencedLines(lines);
  const kept: string[] = [];
  // Once a search for `-->` ran off the end, no later comment can close either: never search again.
  let unclosedFrom = lines.length;
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!;
    if (fenced[index] || index >= unclosedFrom || !COMMENT_START.test(line)) {
      kept.push(line);
      continue;
    }
    const start = line.indexOf('<!--');
    let end = -1;
    let endLine = index;
    for (; endLine < lines.length; endLine += 1) {
      end = lines[endLine]!.indexOf('-->', endLine === index ? start + 4 : 0);
      if (end !== -1) break;
    }
    if (end === -1) {
      unclosedFrom = index;
      kept.push(line);
      continue;
    }
    const rest = lines[endLine]!.slice(end + 3);
    if (rest.trim() !== '') kept.push(rest);
    index = endLine;
  }
  return kept.join('\n');
}

/**
 * The `@path` imports of a file's text, in order, each once: outside fenced code blocks and
 * inline code spans, at a line start or after white space (`a@b.c` is an address, not an import).
 */
export function findImports(text: string): InstructionImport[] {
  const lines = text.split('\n');
  const fenced = fencedLines(lines);
  const seen = new Set<string>();
  const imports: InstructionImport[] = [];
  for (const [index, line] of lines.entries()) {
    if (fenced[index] || !line.includes('@')) continue;
    for (const match of withoutCodeSpans(line).matchAll(IMPORT)) {
      const raw = match[2]!.replace(/\\ /g, ' ').replace(TRAILING_PUNCTUATION, '');
      if (raw === '' || raw.length > MAX_PATH_LENGTH || !IMPORT_FIRST_CHARACTER.test(raw) || raw.includes('\0'))
        continue;
      if (seen.has(raw)) continue;
      seen.add(raw);
      imports.push({ path: raw, line: index + 1 });
    }
  }
  return imports;
}

/** The line with every inline code span (a backtick run closed by the next run of the same length) blanked out. */
function withoutCodeSpans(line: string): string {
  const runs: Array<{ start: number; end: number }> = [];
  for (const match of line.matchAll(/`+/g)) runs.push({ start: match.index, end: match.index + match[0].length });
  if (runs.length < 2) return line;
  // Run indices by length, each with a cursor that only moves forward: linear however the runs fall.
  const byLength = new Map<number, { indices: number[]; cursor: number }>();
  for (const [index, run] of runs.entries()) {
    const length = run.end - run.start;
    const entry = byLength.get(length) ?? { indices: [], cursor: 0 };
    entry.indices.push(index);
    byLength.set(length, entry);
  }
  let result = '';
  let copied = 0;
  for (let index = 0; index < runs.length;) {
    const run = runs[index]!;
    const entry = byLength.get(run.end - run.start)!;
    while (entry.cursor < entry.indices.length && entry.indices[entry.cursor]! <= index) entry.cursor += 1;
    if (entry.cursor === entry.indices.length) {
      index += 1;
      continue;
    }
    const closing = entry.indices[entry.cursor]!;
    result += line.slice(copied, run.start) + ' '.repeat(runs[closing]!.end - run.start);
    copied = runs[closing]!.end;
    index = closing + 1;
  }
  return result + line.slice(copied);
}
