import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram } from '../src/node/open-engram.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../src/testing/openai-chat-completions-server.js';
import { ENGRAM_BINARY } from './support/cli-harness.js';
import {
  PACKAGE_ROOT,
  PLACEHOLDER,
  codeBlocks,
  documentationPages,
  shellWords,
  type CodeBlock,
} from './support/markdown-examples.js';

// Every code block of README.md and docs/ that is meant to run, runs or compiles here, as a reader
// would use it: each ```ts block is a module of a temporary project that depends on engram as a
// user's does (node_modules/engram is this package, so `engram`, `engram/node`, … resolve through
// package.json "exports" to dist/), type-checked with strict settings and then run with node against
// loopback servers that speak the Anthropic and OpenAI wire protocols; each ```sh block runs in
// bash with `engram` on PATH, against a fresh home of its page. A block that is not run here says
// why on the line before its fence (test/support/markdown-examples.ts).

const LANGUAGES = new Set(['ts', 'sh', 'json', 'text']);
const SEEDED = 'The API deploys to the Frankfurt region.';

const pages = documentationPages();
const blocks = pages.flatMap(codeBlocks);
const runnable = (language: string) => blocks.filter((block) => block.language === language && !block.note);
const label = (block: CodeBlock) => `${block.page}:${block.line}`;
const moduleName = (block: CodeBlock) => `${block.page.replace(/[^a-z0-9]+/gi, '-')}-line-${block.line}`;

let project = '';
let homesRoot = '';
let bin = '';
let anthropic: LanguageModelServer;
let openai: LanguageModelServer;
const homes = new Map<string, { home: string; cwd: string }>();

beforeAll(async () => {
  if (!existsSync(join(PACKAGE_ROOT, 'dist', 'index.d.ts')))
    throw new Error('Run `npm run build` first: the examples compile against the built package (dist/).');
  project = mkdtempSync(join(tmpdir(), 'engram-doc-examples-'));
  mkdirSync(join(project, 'node_modules'));
  symlinkSync(PACKAGE_ROOT, join(project, 'node_modules', 'engram'), 'dir');
  // The SDKs an agent's code imports beside engram, one link per package (a linked scope folder
  // would let a tool that prunes this node_modules delete the packages inside the real one).
  mkdirSync(join(project, 'node_modules', '@anthropic-ai'));
  mkdirSync(join(project, 'node_modules', '@ai-sdk'));
  for (const name of ['@anthropic-ai/sdk', '@ai-sdk/openai', 'openai', 'ai'])
    symlinkSync(join(PACKAGE_ROOT, 'node_modules', name), join(project, 'node_modules', name), 'dir');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'doc-examples', private: true, type: 'module' }));
  for (const block of blocks.filter((block) => block.language === 'ts'))
    writeFileSync(join(project, `${moduleName(block)}.ts`), block.code);
  // Outside the project: nothing a page runs finds its package.json or node_modules.
  homesRoot = mkdtempSync(join(tmpdir(), 'engram-doc-homes-'));
  bin = join(project, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'engram'), `#!/bin/sh\nexec "${process.execPath}" "${ENGRAM_BINARY}" "$@"\n`);
  chmodSync(join(bin, 'engram'), 0o755);
  anthropic = await startAnthropicMessagesServer();
  openai = await startOpenAiChatCompletionsServer();
});

afterAll(async () => {
  await anthropic?.close();
  await openai?.close();
  if (project) rmSync(project, { recursive: true, force: true });
  if (homesRoot) rmSync(homesRoot, { recursive: true, force: true });
  const run = (language: string) => runnable(language).length;
  const skipped = blocks.filter((block) => block.note && block.language !== 'ts');
  console.log(
    `documentation blocks: ${blocks.length} in ${pages.length} pages; ts ${blocks.filter((block) => block.language === 'ts').length} type-checked, ${run('ts')} run; sh ${run('sh')} run; json ${run('json')} parsed; ${skipped.length} not run here (each says why)`,
  );
});

/** Whether a shell block runs npm or npx: never here, even unmarked (the check above fails instead). */
function runsNpm(block: CodeBlock): boolean {
  return block.code.split('\n').some((line) => {
    const words = shellWords(line);
    return words.some(
      (word, index) => /^(npm|npx)$/.test(word) && (index === 0 || /^(&&|\|\||\||;)$/.test(words[index - 1]!)),
    );
  });
}

/** The page's own home and working folder (one per page, so a page's blocks follow one another), with one memory in it. */
async function pageHome(page: string): Promise<{ home: string; cwd: string }> {
  const known = homes.get(page);
  if (known) return known;
  const home = join(homesRoot, page.replace(/[^a-z0-9]+/gi, '-'));
  const cwd = join(home, 'project');
  mkdirSync(cwd, { recursive: true });
  const { engram, close } = await openEngram({ cwd, env: environment(home, false) });
  await engram.remember({ content: SEEDED, type: 'project', scope: 'global' });
  await close();
  homes.set(page, { home, cwd });
  return { home, cwd };
}

function environment(home: string, models: boolean): NodeJS.ProcessEnv {
  return {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: home,
    // Where a reader's engram keeps its store (~/.engram), said outright: nothing here may reach this machine's own.
    ENGRAM_HOME: join(home, '.engram'),
    LANG: 'C.UTF-8',
    ...(models && {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: anthropic.url,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: openai.url,
    }),
  };
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { ...options, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
    // A reader types nothing more: a command that waits for input gets end of file, not a hang.
    child.stdin?.end();
  });
}

describe('the code blocks of README.md and docs/', () => {
  it('each name a language this test knows, and the README, the library and the CLI pages have some', () => {
    const unknown = blocks.filter((block) => !LANGUAGES.has(block.language)).map(label);
    expect(unknown, 'tag each block ts, sh, json or text (text: not code to run)').toEqual([]);
    const imports = blocks.map((block) => block.code).join('\n');
    for (const entry of ["'engram'", "'engram/node'", "'engram/ai-sdk'"]) expect(imports).toContain(`from ${entry}`);
    for (const page of ['README.md', 'docs/library.md', 'docs/cli.md'])
      expect(blocks.filter((block) => block.page === page && block.language !== 'text').length, page).toBeGreaterThan(
        0,
      );
  });

  it('that are not run say why, and those run elsewhere name a file that runs them', () => {
    for (const block of blocks.filter((block) => block.note)) {
      expect(block.note!.reason.length, label(block)).toBeGreaterThan(10);
      if (block.note!.kind !== 'elsewhere') continue;
      const named = block.note!.runBy
        ? [block.note!.runBy]
        : [...block.note!.reason.matchAll(/((?:scripts|test)\/[\w./-]*\w|\.ci\/run)/g)].map((match) => match[1]!);
      expect(named, `${label(block)} names no file that runs it`).not.toEqual([]);
      for (const path of named) expect(existsSync(join(PACKAGE_ROOT, path)), `${label(block)}: ${path}`).toBe(true);
      // One of them finds the block by its name, or by its page.
      const key = block.note!.id ?? block.page;
      expect(
        named.some((path) => readFileSync(join(PACKAGE_ROOT, path), 'utf8').includes(key)),
        `${label(block)}: none of ${named.join(', ')} mentions ${key}`,
      ).toBe(true);
    }
  });

  it('that are not run name only tests and scripts that exist (a reason pointing at a moved test is stale)', () => {
    const missing = blocks.flatMap((block) =>
      [...(block.note?.reason ?? '').matchAll(/((?:scripts|test)\/[\w./-]*\w)/g)]
        .map((match) => match[1]!)
        .filter((path) => !existsSync(join(PACKAGE_ROOT, path)))
        .map((path) => `${label(block)}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('that run npm or npx are marked not run (they need the network and change a node_modules)', () => {
    expect(runnable('sh').filter(runsNpm).map(label)).toEqual([]);
  });

  it('that hold a placeholder (<id>, …) are marked not run', () => {
    const unmarked = runnable('sh').filter((block) =>
      block.code.split('\n').some((line) => PLACEHOLDER.test(shellWords(line).join(' '))),
    );
    expect(unmarked.map(label)).toEqual([]);
  });

  it('in TypeScript compile against the package entries with strict settings', () => {
    const files = blocks
      .filter((block) => block.language === 'ts')
      .map((block) => join(project, `${moduleName(block)}.ts`));
    expect(files.length).toBeGreaterThanOrEqual(8);
    const program = ts.createProgram(files, {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2023.d.ts'],
      strict: true,
      noUncheckedIndexedAccess: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [join(PACKAGE_ROOT, 'node_modules', '@types')],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (!diagnostic.file || diagnostic.start === undefined) return text;
      const block = blocks.find((block) => diagnostic.file!.fileName.endsWith(`${moduleName(block)}.ts`));
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      // The page's line: the fence, then the block's lines.
      return block ? `${block.page}:${block.line + 1 + line}: ${text}` : text;
    });
    expect(problems).toEqual([]);
  }, 120_000);

  describe.each(runnable('ts').map((block) => [label(block), block] as const))('%s (ts)', (_, block) => {
    it('runs with node against the loopback model servers', async () => {
      const { home, cwd } = await pageHome(block.page);
      const file = join(project, `${moduleName(block)}.mjs`);
      const { outputText } = ts.transpileModule(block.code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      });
      writeFileSync(file, outputText);
      const before = { anthropic: anthropic.requests.length, openai: openai.requests.length };
      const result = await run(process.execPath, [file], { cwd, env: environment(home, true) });
      expect(result.code, `${label(block)} exited ${result.code}\n${result.stderr}`).toBe(0);
      // A wrapped client's request carries the memory the page's store holds.
      if (/withMemory\(|engramMiddleware\(/.test(block.code)) {
        const sent = [...anthropic.requests.slice(before.anthropic), ...openai.requests.slice(before.openai)];
        expect(sent.length, `${label(block)} made no model request`).toBeGreaterThan(0);
        expect(JSON.stringify(sent.map((request) => request.body))).toContain(SEEDED);
        expect(result.stdout).toContain('OK');
      }
    }, 120_000);
  });

  describe.each(
    runnable('sh')
      .filter((block) => !runsNpm(block))
      .map((block) => [label(block), block] as const),
  )('%s (sh)', (_, block) => {
    it('runs in bash with engram on PATH, every command exiting 0', async () => {
      const { home, cwd } = await pageHome(block.page);
      const result = await run('bash', ['-euo', 'pipefail', '-c', block.code], { cwd, env: environment(home, false) });
      expect(result.code, `${label(block)} exited ${result.code}\n${result.stdout}\n${result.stderr}`).toBe(0);
    }, 120_000);
  });

  it.each(runnable('json').map((block) => [label(block), block] as const))('%s (json) parses', (_, block) => {
    expect(() => JSON.parse(block.code)).not.toThrow();
  });
});
