import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// README's TypeScript examples must compile against what the package ships. Each ```ts block
// becomes one module of a temporary project that depends on engram as a user's would
// (node_modules/engram is this package, so `engram`, `engram/node`, … resolve through
// package.json "exports" to the built declarations), and the compiler checks them all.

const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Example {
  /** 1-based line of the opening fence in README.md. */
  line: number;
  code: string;
}

/** Every ```ts block of a Markdown text, with the line it starts on. */
function typeScriptBlocks(markdown: string): Example[] {
  const examples: Example[] = [];
  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    if (!/^```(ts|typescript)\s*$/.test(lines[index]!)) continue;
    const start = index;
    const body: string[] = [];
    for (index += 1; index < lines.length && !/^```\s*$/.test(lines[index]!); index += 1) body.push(lines[index]!);
    examples.push({ line: start + 1, code: `${body.join('\n')}\n` });
  }
  return examples;
}

describe("README's library examples", () => {
  let project = '';
  let examples: Example[] = [];

  beforeAll(() => {
    if (!existsSync(join(PACKAGE_ROOT, 'dist', 'index.d.ts')))
      throw new Error('Run `npm run build` first: the examples compile against the built declarations (dist/).');
    examples = typeScriptBlocks(readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8'));
    project = mkdtempSync(join(tmpdir(), 'engram-readme-'));
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(PACKAGE_ROOT, join(project, 'node_modules', 'engram'), 'dir');
    // The SDKs an agent's code imports beside engram (the "Use in your agent code" examples).
    for (const name of ['@anthropic-ai', 'openai', 'ai'])
      symlinkSync(join(PACKAGE_ROOT, 'node_modules', name), join(project, 'node_modules', name), 'dir');
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'readme-examples', private: true, type: 'module' }),
    );
    for (const example of examples) writeFileSync(join(project, `readme-line-${example.line}.ts`), example.code);
  });

  afterAll(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('are found: the library, extraction, memory tool and session sections each have one', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5);
    const imports = examples.map((example) => example.code).join('\n');
    for (const entry of ["'engram'", "'engram/node'"]) expect(imports).toContain(`from ${entry}`);
  });

  it('compile against the package entries with strict settings', () => {
    const program = ts.createProgram(
      examples.map((example) => join(project, `readme-line-${example.line}.ts`)),
      {
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
      },
    );
    const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (!diagnostic.file || diagnostic.start === undefined) return text;
      const fence = Number(/readme-line-(\d+)\.ts$/.exec(diagnostic.file.fileName)?.[1] ?? 0);
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      // The README line: the fence, then the block's lines.
      return `README.md:${fence + 1 + line}: ${text}`;
    });
    expect(problems).toEqual([]);
  });
});
