import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { SETTING_DEFINITIONS } from '../src/kernel/settings.js';
import { GLOBAL_OPTIONS, type CommandOption } from '../src/surfaces/cli/cli-command.js';
import type { CliIo } from '../src/surfaces/cli/cli-io.js';
import { runCli } from '../src/surfaces/cli/cli-runner.js';
import {
  PACKAGE_ROOT,
  PLACEHOLDER,
  codeBlocks,
  documentationPages,
  engramInvocations,
  inlineCodeSpans,
  type DocumentationPage,
} from './support/markdown-examples.js';

// What README.md and docs/ name must exist in the code: every `engram` command and flag (in code
// blocks, run or not, and in inline code), every ENGRAM_ variable, every setting, every link and
// its anchor. A page that describes a command, flag or setting the code does not have fails here.

const pages = documentationPages();
const README_MAX_LINES = 200;

interface CommandHelp {
  name: string;
  options: Record<string, CommandOption>;
}

/** Runs the CLI in this process and returns the JSON document it printed. */
async function cliJson(argv: string[]): Promise<any> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let text = '';
  stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const io: CliIo = {
    cwd: PACKAGE_ROOT,
    env: { HOME: '/nonexistent', PATH: process.env.PATH },
    stdin: process.stdin,
    stdout: stdout as unknown as NodeJS.WriteStream,
    stderr: stderr as unknown as NodeJS.WriteStream,
    interactive: false,
    color: false,
    columns: Number.POSITIVE_INFINITY,
  };
  const code = await runCli(argv, io);
  expect(code, `engram ${argv.join(' ')}`).toBe(0);
  return JSON.parse(text);
}

const commands = new Map<string, CommandHelp>();

beforeAll(async () => {
  const { commands: listed } = (await cliJson(['help', '--json'])) as { commands: Array<{ name: string }> };
  for (const { name } of listed) {
    if (name === 'help') continue;
    const help = (await cliJson([name, '--help', '--json'])) as { options: Record<string, CommandOption> };
    commands.set(name, { name, options: help.options });
  }
});

/** What is wrong with one `engram …` argument list, if anything. */
function invocationProblem(argv: readonly string[]): string | undefined {
  let command: CommandHelp | undefined;
  let sawCommand = false;
  for (let index = 0; index < argv.length; index += 1) {
    const word = argv[index]!;
    if (word === '--') break;
    if (word.startsWith('-') && word !== '-') {
      const long = word.startsWith('--');
      const name = long ? word.slice(2).split('=')[0]! : word.slice(1);
      const options: Record<string, CommandOption> = { ...GLOBAL_OPTIONS, ...(command?.options ?? {}) };
      const option = long ? options[name] : Object.values(options).find((candidate) => candidate.short === name);
      if (!option && !(name === 'version' && !sawCommand))
        return `no option ${word}${command ? ` for ${command.name}` : ''}`;
      if (option?.type === 'string' && long && !word.includes('=')) index += 1;
      continue;
    }
    if (sawCommand) continue;
    sawCommand = true;
    if (PLACEHOLDER.test(word) || word === 'help') return undefined;
    command = commands.get(word);
    if (!command) return `no command ${word}`;
  }
  return undefined;
}

/** Every `engram …` a page names: in its shell blocks and its inline code. */
function invocationsOf(page: DocumentationPage): Array<{ where: string; argv: string[] }> {
  const found: Array<{ where: string; argv: string[] }> = [];
  for (const block of codeBlocks(page).filter((block) => block.language === 'sh'))
    for (const argv of engramInvocations(block.code)) found.push({ where: `${page.path}:${block.line}`, argv });
  for (const span of inlineCodeSpans(page).filter((span) => /^(npx )?engram( |$)/.test(span.text)))
    for (const argv of engramInvocations(span.text)) found.push({ where: `${page.path}:${span.line}`, argv });
  return found;
}

/** Every file of the code a variable may be read in. */
function sourceText(): string {
  const texts: string[] = [];
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|mjs|js|json|sh)$/.test(name)) texts.push(readFileSync(path, 'utf8'));
    }
  };
  for (const folder of ['src', 'bench', 'scripts', 'plugins']) walk(join(PACKAGE_ROOT, folder));
  return texts.join('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^```/.test(line)) inFence = !inFence;
    const heading = !inFence && /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) anchors.add(anchor(heading[1]!));
  }
  return anchors;
}

describe('what the documentation names', () => {
  it('finds the commands of every page (the check below has something to check)', () => {
    const all = pages.flatMap(invocationsOf);
    expect(all.length).toBeGreaterThan(100);
    expect(commands.size).toBeGreaterThan(25);
    // The check itself: a command or a flag the CLI does not have is found.
    expect(invocationProblem(['recall', 'x', '--explain'])).toBeUndefined();
    expect(invocationProblem(['recall', 'x', '--explian'])).toMatch(/no option --explian/);
    expect(invocationProblem(['recal', 'x'])).toMatch(/no command recal/);
    expect(invocationProblem(['forget', '<id>', '-y', '--hard'])).toBeUndefined();
    expect(invocationProblem(['--store', './x.db', 'list', '--type', 'feedback'])).toBeUndefined();
  });

  it.each(pages.map((page) => [page.path, page] as const))('%s: every engram command and flag exists', (_, page) => {
    const problems = invocationsOf(page)
      .map(({ where, argv }) => {
        const problem = invocationProblem(argv);
        return problem && `${where}: engram ${argv.join(' ')}: ${problem}`;
      })
      .filter(Boolean);
    expect(problems).toEqual([]);
  });

  it('every ENGRAM_ variable a page names is read somewhere in the code', () => {
    const source = sourceText();
    const missing = pages.flatMap((page) =>
      [...new Set(page.text.match(/\bENGRAM_[A-Z0-9_]*[A-Z0-9]/g) ?? [])]
        .filter((name) => !new RegExp(`\\b${name}\\b`).test(source))
        .map((name) => `${page.path}: ${name}`),
    );
    expect(missing).toEqual([]);
  });

  it('every setting a page names exists, and configuration.md lists every environment variable', () => {
    const paths = new Set(SETTING_DEFINITIONS.map((definition) => definition.path));
    const groups = new Set([...paths].map((path) => path.split('.')[0]!));
    const unknown = pages.flatMap((page) =>
      inlineCodeSpans(page)
        .map((span) => /^([a-z][a-zA-Z]*)\.([a-zA-Z*]+)$/.exec(span.text))
        .filter((match): match is RegExpExecArray => match !== null && groups.has(match[1]!))
        .filter((match) => !/^(html|ts|js|mjs|json|jsonl|md|css|db|svg)$/.test(match[2]!))
        .filter((match) => (match[2] === '*' ? false : !paths.has(match[0])))
        .map((match) => `${page.path}: ${match[0]}`),
    );
    expect(unknown).toEqual([]);
    const configuration = pages.find((page) => page.path === 'docs/configuration.md')!.text;
    const unlisted = SETTING_DEFINITIONS.filter((definition) => definition.env)
      .map((definition) => definition.env!)
      .filter((env) => !configuration.includes(`\`${env}\``));
    expect(unlisted, 'add a row to the table of docs/configuration.md').toEqual([]);
  });

  it('every relative link resolves to a file, and every anchor to a heading', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const match of page.text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [file, hash] = target.split('#') as [string, string | undefined];
        const path = file === '' ? page.path : normalize(join(dirname(page.path), file));
        let text: string;
        try {
          text = readFileSync(join(PACKAGE_ROOT, path), 'utf8');
        } catch {
          broken.push(`${page.path}: ${target} (no file ${path})`);
          continue;
        }
        if (hash !== undefined && path.endsWith('.md') && !anchorsOf(text).has(hash))
          broken.push(`${page.path}: ${target} (no heading #${hash} in ${path})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README is a front page: at most 200 lines, linking every page of docs/', () => {
    const readme = pages.find((page) => page.path === 'README.md')!;
    expect(readme.text.split('\n').length).toBeLessThanOrEqual(README_MAX_LINES);
    const linked = new Set(
      [...readme.text.matchAll(/\]\((docs\/[^)#\s]+)/g)].map((match) => relative('.', normalize(match[1]!))),
    );
    const unlinked = pages.filter((page) => page.path.startsWith('docs/') && !linked.has(page.path));
    expect(unlinked.map((page) => page.path)).toEqual([]);
  });
});
