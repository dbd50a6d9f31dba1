import { describe, expect, it } from 'vitest';
import {
  activeInstructions,
  formatInstructions,
  type InstructionFile,
} from '../../src/instructions/instruction-format.js';
import { expandGlobs, matchGlob } from '../../src/instructions/instruction-globs.js';
import {
  findImports,
  normalizeInstructionText,
  parseRuleFrontmatter,
  stripBlockHtmlComments,
} from '../../src/instructions/instruction-rules.js';

describe('paths: frontmatter', () => {
  it('reads a block list, quoted or not, and leaves the body without the frontmatter', () => {
    const parsed = parseRuleFrontmatter(
      '---\npaths:\n  - "src/api/**/*.ts"\n  - tests/**/*.test.ts # the tests\n---\n# API rules\nUse zod.\n',
    );
    expect(parsed.paths).toEqual(['src/api/**/*.ts', 'tests/**/*.test.ts']);
    expect(parsed.body).toBe('# API rules\nUse zod.\n');
    expect(parsed.warnings).toEqual([]);
  });

  it('reads a single string with braces (commas inside braces kept), and a comma-separated one', () => {
    expect(parseRuleFrontmatter('---\npaths: src/**/*.{ts,tsx}\n---\nx').paths).toEqual(['src/**/*.{ts,tsx}']);
    expect(parseRuleFrontmatter("---\npaths: 'lib/**', docs/*.md\n---\nx").paths).toEqual(['lib/**', 'docs/*.md']);
    expect(parseRuleFrontmatter('---\npaths: ["a/**", \'b/{c,d}/*\']\n---\nx').paths).toEqual(['a/**', 'b/{c,d}/*']);
  });

  it('accepts globs: when paths: is absent, and ignores other keys', () => {
    expect(parseRuleFrontmatter('---\ndescription: go rules\nglobs: "**/*.go"\n---\nx').paths).toEqual(['**/*.go']);
    expect(parseRuleFrontmatter('---\ndescription: no paths here\n---\nbody').paths).toBeUndefined();
  });

  it('treats an empty paths: as applying everywhere, with a warning, and an unclosed frontmatter as text', () => {
    const empty = parseRuleFrontmatter('---\npaths: []\n---\nbody');
    expect(empty.paths).toBeUndefined();
    expect(empty.warnings[0]).toMatch(/no pattern/);
    const unclosed = parseRuleFrontmatter('---\npaths: src/**\nbody without an end');
    expect(unclosed.paths).toBeUndefined();
    expect(unclosed.body).toBe('---\npaths: src/**\nbody without an end');
    expect(unclosed.warnings[0]).toMatch(/closing/);
  });

  it('leaves a file without frontmatter untouched', () => {
    expect(parseRuleFrontmatter('# Title\n---\npaths: x\n---\n')).toEqual({
      body: '# Title\n---\npaths: x\n---\n',
      warnings: [],
    });
  });
});

describe('glob matching', () => {
  it('matches ** across directories (zero or more), * and ? within one segment', () => {
    expect(matchGlob('src/**/*.ts', 'src/a.ts')).toBe(true);
    expect(matchGlob('src/**/*.ts', 'src/deep/er/a.ts')).toBe(true);
    expect(matchGlob('src/**/*.ts', 'lib/a.ts')).toBe(false);
    expect(matchGlob('src/*.ts', 'src/deep/a.ts')).toBe(false);
    expect(matchGlob('**/*.go', 'go.go')).toBe(true);
    expect(matchGlob('**/*.go', 'cmd/x/main.go')).toBe(true);
    expect(matchGlob('a?c.md', 'abc.md')).toBe(true);
    expect(matchGlob('a?c.md', 'a/c.md')).toBe(false);
    expect(matchGlob('src/**', 'src/x/y')).toBe(true);
    expect(matchGlob('[ab]*.[!j]s', 'b1.ts')).toBe(true);
    expect(matchGlob('[ab]*.[!j]s', 'b1.js')).toBe(false);
    expect(matchGlob('[ab]*.[!j]s', 'c1.ts')).toBe(false);
  });

  it('expands braces, nested, and normalizes ./ and / prefixes and a trailing slash', () => {
    expect(expandGlobs(['src/**/*.{ts,tsx}'], 100).patterns).toEqual(['src/**/*.ts', 'src/**/*.tsx']);
    expect(expandGlobs(['{a,b/{c,d}}.md'], 100).patterns).toEqual(['a.md', 'b/c.md', 'b/d.md']);
    expect(expandGlobs(['./src/**', '/lib/*.ts', 'docs/'], 100).patterns).toEqual(['src/**', 'lib/*.ts', 'docs/**']);
    // A lone {a} and an unclosed brace stay literal, as in bash.
    expect(expandGlobs(['{a}.md', 'x{y'], 100).patterns).toEqual(['{a}.md', 'x{y']);
  });

  it('bounds brace expansion: twenty groups of two would be a million patterns', () => {
    const bomb = '{a,b}'.repeat(20);
    const expanded = expandGlobs([bomb, 'never/reached'], 1_000);
    expect(expanded.patterns).toHaveLength(1_000);
    expect(expanded.truncated).toBe(true);
    expect(expanded.patterns).not.toContain('never/reached');
  });

  it('expands braces once, with no stack or time blow-up on deep nesting or overlong globs', () => {
    expect(expandGlobs(['{a,b}{c,d}'], 100).patterns).toEqual(['ac', 'ad', 'bc', 'bd']);
    // Sixteen levels expand; deeper braces stay literal.
    const deep = expandGlobs([`${'{a,'.repeat(20)}z${'}'.repeat(20)}`], 100).patterns;
    expect(deep).toEqual(['a', '{a,{a,{a,{a,z}}}}']);
    expect(expandGlobs([`${'{x,'.repeat(1_300)}z`], 10).patterns).toEqual([`${'{x,'.repeat(1_300)}z`]);
    const unclosed = '{'.repeat(4_000);
    expect(expandGlobs([unclosed], 10).patterns).toEqual([unclosed]);
    const overlong = expandGlobs(['x'.repeat(5_000), 'ok/**'], 10);
    expect(overlong).toEqual({ patterns: ['ok/**'], truncated: false, tooLong: 1 });
    expect(matchGlob('**', 'a/'.repeat(3_000))).toBe(false);
  });

  it('stays linear on patterns built to backtrack', () => {
    const name = `${'a'.repeat(5_000)}b`;
    expect(matchGlob(`${'*a'.repeat(50)}c`, name)).toBe(false);
    expect(matchGlob(`${'**/'.repeat(40)}z`, `${'d/'.repeat(2_000)}y`)).toBe(false);
  });
});

describe('@path imports', () => {
  it('finds imports at a line start or after white space, in order and once each', () => {
    const text =
      'See @README and @docs/git.md.\n@~/.claude/personal.md\n- also @./a\\ b.md, @/abs/path.md\nmail me at me@example.com\n@docs/git.md again';
    expect(findImports(text)).toEqual([
      { path: 'README', line: 1 },
      { path: 'docs/git.md', line: 1 },
      { path: '~/.claude/personal.md', line: 2 },
      { path: './a b.md', line: 3 },
      { path: '/abs/path.md', line: 3 },
    ]);
  });

  it('ignores imports in inline code spans and fenced code blocks (``` and ~~~)', () => {
    const text = [
      'Run `npm i @types/node` and ``see @not-this``, but @this.md counts.',
      '```sh',
      'npm install @scope/package',
      '```',
      '~~~~',
      '@inside-tilde.md',
      '```',
      '@still-inside.md',
      '~~~~',
      '@after.md',
    ].join('\n');
    expect(findImports(text).map((entry) => entry.path)).toEqual(['this.md', 'after.md']);
  });

  it('stays fast on hostile lines: thousands of unmatched backtick runs and unclosed comments', () => {
    // Runs of every length 1..2000 (about 2 MB on one line), none closed: a naive scan is quadratic.
    const runs = Array.from({ length: 2_000 }, (_, index) => '`'.repeat(index + 1)).join(' @x.md ');
    expect(findImports(runs).map((entry) => entry.path)).toEqual(['x.md']);
    const comments = '<!-- never closed @a.md\n'.repeat(200_000);
    expect(stripBlockHtmlComments(comments)).toBe(comments);
    expect(findImports(`\`a\` @b.md \`\`c\`\` @d.md \`\`\`e`).map((entry) => entry.path)).toEqual(['b.md', 'd.md']);
  });

  it('ignores a lone @, @@ and tokens that cannot be paths', () => {
    expect(findImports('@ alone, @@twice, @!bang, @{x}, end @')).toEqual([]);
  });
});

describe('block-level HTML comments', () => {
  it('strips comments that start a line (over several lines too) and keeps inline ones and code', () => {
    const text = `# Rules
<!-- maintainer note: @secret.md -->
Use tabs.
<!--
multi
line -->
Keep <!-- inline --> this.
\`\`\`html
<!-- in code -->
\`\`\``;
    expect(stripBlockHtmlComments(text)).toBe(
      ['# Rules', 'Use tabs.', 'Keep <!-- inline --> this.', '```html', '<!-- in code -->', '```'].join('\n'),
    );
  });

  it('keeps text after the closing --> and leaves an unclosed comment as text', () => {
    expect(stripBlockHtmlComments('<!-- a --> tail\nnext')).toBe(' tail\nnext');
    expect(stripBlockHtmlComments('<!-- never closed\nstill here')).toBe('<!-- never closed\nstill here');
  });

  it('normalizes a BOM and CRLF line ends', () => {
    expect(normalizeInstructionText('\uFEFFa\r\nb\rc')).toBe('a\nb\nc');
  });
});

describe('active instructions and the system block', () => {
  const files: InstructionFile[] = [
    { path: '/etc/claude-code/CLAUDE.md', scope: 'managed', content: 'No force pushes.\n' },
    {
      path: '/p/.claude/rules/api.md',
      scope: 'project',
      content: 'Validate with zod.',
      paths: ['src/api/**/*.{ts,tsx}'],
      patterns: ['src/api/**/*.ts', 'src/api/**/*.tsx'],
      baseDirectory: '/p',
    },
    { path: '/p/CLAUDE.local.md', scope: 'local', content: '\n\nMy sandbox URL is local.\n\n' },
    { path: '/p/docs/empty.md', scope: 'project', content: '  \n', importedFrom: '/p/CLAUDE.md' },
  ];
  const set = { files, warnings: [], projectRoot: '/p' };

  it('includes a path-scoped rule only while a matching file is worked on (absolute or root-relative)', () => {
    expect(activeInstructions(set, []).map((file) => file.path)).toEqual([
      '/etc/claude-code/CLAUDE.md',
      '/p/CLAUDE.local.md',
      '/p/docs/empty.md',
    ]);
    expect(activeInstructions(set, ['README.md']).map((file) => file.path)).not.toContain('/p/.claude/rules/api.md');
    expect(activeInstructions(set, ['src/api/users/route.tsx']).map((file) => file.path)).toContain(
      '/p/.claude/rules/api.md',
    );
    expect(activeInstructions(set, ['/p/src/api/x.ts']).map((file) => file.path)).toContain('/p/.claude/rules/api.md');
    // Outside the base directory nothing matches, however the path is spelled.
    expect(activeInstructions(set, ['/q/src/api/x.ts', '../src/api/x.ts', '']).map((file) => file.path)).not.toContain(
      '/p/.claude/rules/api.md',
    );
  });

  it('formats each file under its path and scope, byte-stable, skipping empty files', () => {
    const text = formatInstructions(files);
    expect(text).toBe(formatInstructions(structuredClone(files)));
    expect(text).toContain('Contents of /etc/claude-code/CLAUDE.md (managed policy instructions');
    expect(text).toContain(
      'Contents of /p/.claude/rules/api.md (project instructions, shared with the codebase; applies while working on files matching src/api/**/*.{ts,tsx}):\n\nValidate with zod.',
    );
    expect(text).toContain(
      "Contents of /p/CLAUDE.local.md (the user's private instructions for this project, not checked in):\n\nMy sandbox URL is local.",
    );
    expect(text).not.toContain('/p/docs/empty.md');
    expect(text.indexOf('No force pushes.')).toBeLessThan(text.indexOf('My sandbox URL'));
    expect(formatInstructions([])).toBe('');
  });
});
