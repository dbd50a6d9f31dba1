import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The layering rules of docs/ARCHITECTURE.md, checked on the source itself: I/O only where it is
// allowed, pure code never reaching into node/ folders, and no run-time import cycle.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

const IO_MODULES = [
  /^(node:)?(fs|fs\/promises|child_process|net|http|https|http2|os|readline|readline\/promises|tty|worker_threads|dgram|dns|cluster|sqlite)$/,
  /^better-sqlite3$/,
  /^@photostructure\/sqlite$/,
  /^pg$/,
  /^sqlite-vec$/,
  /^@anthropic-ai\/sdk(\/.*)?$/,
  /^openai(\/.*)?$/,
  /^@modelcontextprotocol\/sdk(\/.*)?$/,
  /^vitest(\/.*)?$/,
  /^playwright-core$/,
];

interface RuntimeImport {
  specifier: string;
  line: number;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Imports that exist at run time: type-only imports and exports are erased by the compiler. */
export function runtimeImports(text: string): RuntimeImport[] {
  const found: RuntimeImport[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const statement = /(?:^|\n)\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/g;
  for (const match of text.matchAll(statement)) {
    if (match[2]) continue;
    const clause = match[3] ?? '';
    if (match[1] === 'export' && !clause.includes('{') && !clause.includes('*')) continue;
    const braces = /\{([^}]*)\}/.exec(clause);
    const outside = clause
      .replace(/\{[^}]*\}/, '')
      .replace(/,/g, '')
      .trim();
    if (braces && !outside) {
      const names = braces[1]!
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean);
      if (names.length > 0 && names.every((name) => name.startsWith('type '))) continue;
    }
    found.push({ specifier: match[4]!, line: lineOf(match.index ?? 0) });
  }
  for (const match of text.matchAll(/(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g))
    found.push({ specifier: match[1]!, line: lineOf(match.index ?? 0) });
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g))
    found.push({ specifier: match[1]!, line: lineOf(match.index ?? 0) });
  return found;
}

/** May this source file (path relative to src/) do I/O? */
export function mayDoIo(path: string): boolean {
  return path === 'node.ts' || /(^|\/)node\//.test(path) || /^(adapters|surfaces|testing)\//.test(path);
}

const isIoModule = (specifier: string) => IO_MODULES.some((pattern) => pattern.test(specifier));

function resolveLocal(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = relative(SRC, resolve(dirname(join(SRC, from)), specifier));
  return target.endsWith('.js') ? `${target.slice(0, -3)}.ts` : target;
}

function importGraph(): Map<string, Array<RuntimeImport & { target?: string }>> {
  const graph = new Map<string, Array<RuntimeImport & { target?: string }>>();
  for (const file of sourceFiles(SRC)) {
    const path = relative(SRC, file);
    const imports = runtimeImports(readFileSync(file, 'utf8')).map((entry) => {
      const target = resolveLocal(path, entry.specifier);
      return target === undefined ? entry : { ...entry, target };
    });
    graph.set(path, imports);
  }
  return graph;
}

/** Strongly connected components of more than one file (or a file importing itself). */
export function importCycles(graph: Map<string, Array<{ target?: string }>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    indices.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const { target } of graph.get(node) ?? []) {
      if (target === undefined || !graph.has(target)) continue;
      if (!indices.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, indices.get(target)!));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = (graph.get(node) ?? []).some(({ target }) => target === node);
      if (component.length > 1 || selfLoop) cycles.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) visit(node);
  return cycles;
}

describe('the source tree keeps its layers', () => {
  const graph = importGraph();

  it('imports I/O modules only in node/ folders, adapters/, surfaces/ and testing/', () => {
    const offenders = [...graph].flatMap(([path, imports]) =>
      mayDoIo(path)
        ? []
        : imports
            .filter((entry) => isIoModule(entry.specifier))
            .map((entry) => `src/${path}:${entry.line} imports ${entry.specifier}`),
    );
    expect(offenders).toEqual([]);
  });

  it('keeps pure modules from importing code that does I/O', () => {
    const offenders = [...graph].flatMap(([path, imports]) =>
      mayDoIo(path)
        ? []
        : imports
            .filter((entry) => entry.target !== undefined && mayDoIo(entry.target))
            .map((entry) => `src/${path}:${entry.line} imports src/${entry.target}`),
    );
    expect(offenders).toEqual([]);
  });

  it('has no run-time import cycle', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('resolves every relative import to a source file', () => {
    const missing = [...graph].flatMap(([path, imports]) =>
      imports
        .filter((entry) => entry.target !== undefined && !graph.has(entry.target) && !entry.target.endsWith('.json'))
        .map((entry) => `src/${path}:${entry.line} → ${entry.specifier}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('the layering checks themselves', () => {
  it('tell type-only imports from run-time ones', () => {
    const text = [
      "import type { A } from './a.js';",
      "import { type B, type C } from './b.js';",
      "import { type D, e } from './d.js';",
      "export type { F } from './f.js';",
      "export { g } from './g.js';",
      "import h from 'node:fs';",
      "import './side-effect.js';",
      "const lazy = await import('./lazy.js');",
    ].join('\n');
    expect(runtimeImports(text).map((entry) => entry.specifier)).toEqual([
      './d.js',
      './g.js',
      'node:fs',
      './side-effect.js',
      './lazy.js',
    ]);
  });

  it('find a cycle and ignore a chain', () => {
    const edges = (pairs: Array<[string, string]>) => {
      const graph = new Map<string, Array<{ target?: string }>>();
      for (const [from, to] of pairs) {
        graph.set(from, [...(graph.get(from) ?? []), { target: to }]);
        if (!graph.has(to)) graph.set(to, []);
      }
      return graph;
    };
    expect(
      importCycles(
        edges([
          ['a', 'b'],
          ['b', 'c'],
        ]),
      ),
    ).toEqual([]);
    expect(
      importCycles(
        edges([
          ['a', 'b'],
          ['b', 'c'],
          ['c', 'a'],
          ['c', 'd'],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
  });

  it('allow I/O only in the places the architecture names', () => {
    expect(
      [
        'node.ts',
        'node/open-engram.ts',
        'memory/node/memory-directory.ts',
        'adapters/sqlite/x.ts',
        'surfaces/cli/main.ts',
        'testing/index.ts',
      ].every(mayDoIo),
    ).toBe(true);
    expect(
      ['memory/memory.ts', 'recall/ranking.ts', 'kernel/settings.ts', 'contracts/memory-store.ts', 'nodes/x.ts'].some(
        mayDoIo,
      ),
    ).toBe(false);
  });
});
