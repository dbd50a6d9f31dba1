import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The documentation's code blocks as the tests see them. Every fenced block names its language;
// one that is not run by the documentation tests says why in an HTML comment on the line before its
// fence (invisible on GitHub):
//   <!-- not run: needs a Postgres server -->
//   <!-- not run here (packed-quickstart): test/packed-quickstart.test.ts runs this block … -->
//   <!-- run by test/surfaces/cli/docs-cli-tour.test.ts: each line in order, … -->

export const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A page of user documentation: README.md and every Markdown file of docs/. */
export interface DocumentationPage {
  /** Path from the package root, e.g. `docs/recall.md`. */
  path: string;
  text: string;
}

/** Why a block is not run by the documentation tests, as its note says. */
export interface BlockNote {
  /** `not run`: nowhere; `elsewhere`: by the file or script the reason names. */
  kind: 'not run' | 'elsewhere';
  reason: string;
  /** The name a script finds the block by (`not run here (name): …`). */
  id?: string;
  /** `run by <path>: …`: the test that runs it. */
  runBy?: string;
}

export interface CodeBlock {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's info string, first word (`ts`, `sh`, …); '' when it names none. */
  language: string;
  code: string;
  note?: BlockNote;
}

export function documentationPages(root: string = PACKAGE_ROOT): DocumentationPage[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs].map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}

const FENCE = /^```(\S*)/;
const NOTE = /^<!--\s*(?:(not run(?: here)?)(?:\s*\(([\w-]+)\))?|run by ([^\s:]+))\s*:\s*(.*?)\s*-->$/;

/** Every fenced block of a page, with the note before it. */
export function codeBlocks(page: DocumentationPage): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = page.text.split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    const open = FENCE.exec(lines[index]!);
    if (!open) continue;
    const start = index;
    const body: string[] = [];
    for (index += 1; index < lines.length && !/^```\s*$/.test(lines[index]!); index += 1) body.push(lines[index]!);
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before -= 1;
    const note = before >= 0 ? parseNote(lines[before]!.trim()) : undefined;
    blocks.push({
      page: page.path,
      line: start + 1,
      language: open[1]!,
      code: `${body.join('\n')}\n`,
      ...(note && { note }),
    });
  }
  return blocks;
}

function parseNote(line: string): BlockNote | undefined {
  const match = NOTE.exec(line);
  if (!match) return undefined;
  const [, notRun, id, runBy, reason] = match;
  if (runBy) return { kind: 'elsewhere', reason: reason!, runBy };
  return {
    kind: notRun === 'not run here' ? 'elsewhere' : 'not run',
    reason: reason!,
    ...(id && { id }),
  };
}

/** The text of every inline code span outside fenced blocks (a span may wrap a line), with its first line. */
export function inlineCodeSpans(page: DocumentationPage): Array<{ line: number; text: string }> {
  let inFence = false;
  // Fenced lines are blanked, not removed, so offsets still give line numbers.
  const prose = page.text
    .split('\n')
    .map((line) => {
      if (FENCE.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
  return [...prose.matchAll(/`([^`]+)`/g)].map((match) => ({
    line: prose.slice(0, match.index).split('\n').length,
    text: match[1]!.replace(/\s*\n\s*/g, ' '),
  }));
}

/** Splits one shell line into words: quotes kept together, no expansion; a `#` comment ends it. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(#.*$)|(\S+)/g)) {
    if (match[3] !== undefined) break;
    words.push(match[1] ?? match[2] ?? match[4]!);
  }
  return words;
}

const SHELL_OPERATORS = new Set(['&&', '||', '|', ';']);

/**
 * The argument lists of every `engram …` command in shell text: at the start of a line or after an
 * operator, behind environment assignments, `npx [--no-install]` or a `--` that hands a command line
 * to another program (`claude mcp add … -- engram mcp`).
 */
export function engramInvocations(text: string): string[][] {
  const found: string[][] = [];
  for (const raw of text.replace(/\\\n/g, ' ').split('\n')) {
    const words = shellWords(raw.trim());
    let commandStart = true;
    for (let index = 0; index < words.length; index += 1) {
      const word = words[index]!;
      if (SHELL_OPERATORS.has(word)) {
        commandStart = true;
        continue;
      }
      if (commandStart && /^[A-Z_][A-Z0-9_]*=/.test(word)) continue;
      if (commandStart && (word === 'npx' || word === '--no-install' || word === '--')) continue;
      if (word === '--' && words[index + 1] === 'engram') {
        commandStart = true;
        continue;
      }
      if (commandStart && word === 'engram') {
        let end = index + 1;
        while (end < words.length && !SHELL_OPERATORS.has(words[end]!)) end += 1;
        found.push(words.slice(index + 1, end));
        index = end - 1;
      }
      commandStart = false;
    }
  }
  return found;
}

/** A placeholder a reader fills in: `<id>`, `<change-id>`, `…`. */
export const PLACEHOLDER = /<[a-z][\w-]*>|…/;
