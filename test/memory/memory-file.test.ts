import { describe, expect, it } from 'vitest';
import { expectEngramErrorSync } from '../support/expect-engram-error.js';
import { parse as parseYaml } from 'yaml';
import { EngramError, type EngramErrorCode } from '../../src/kernel/errors.js';
import { MAX_FRONTMATTER_BYTES, parseMemoryFile, renderMemoryFile } from '../../src/memory/memory-file.js';
import { normalizeNewMemory, type Memory, type NewMemory } from '../../src/memory/memory.js';

const NOW = '2025-03-01T12:00:00.000Z';
const LATER = '2031-01-01T00:00:00.000Z';
const FALLBACK = { scope: 'project:fallback', now: LATER, id: 'fallback-id' };

function makeMemory(input: Omit<NewMemory, 'scope'> & { scope?: string }, id = 'mem-1'): Memory {
  return normalizeNewMemory({ scope: 'project:acme', ...input }, { now: NOW, id });
}

function roundTrip(memory: Memory): Memory {
  const parsed = parseMemoryFile(renderMemoryFile(memory), FALLBACK);
  // Different clock and id on purpose: everything must come from the file, not the defaults.
  return normalizeNewMemory(parsed, { now: LATER, id: 'not-this-id' });
}

const parseError = (text: string, code: EngramErrorCode = 'INVALID_INPUT'): EngramError =>
  expectEngramErrorSync(() => parseMemoryFile(text, FALLBACK), code);

describe('renderMemoryFile', () => {
  it('writes name, description and metadata holding type and every engram field, then the content', () => {
    const memory = makeMemory({
      type: 'feedback',
      name: 'integration-tests',
      description: 'Integration tests use the real database',
      content: 'Use the real database.\n\n**Why:** mocks hid a migration bug.',
      importance: 0.8,
      source: { sessionId: 'session-9', turnId: 'turn-3', origin: 'cli' },
    });
    const text = renderMemoryFile(memory);
    expect(
      text.startsWith(
        '---\nname: integration-tests\ndescription: Integration tests use the real database\nmetadata:\n  type: feedback\n',
      ),
    ).toBe(true);
    expect(text.endsWith('---\n\nUse the real database.\n\n**Why:** mocks hid a migration bug.\n')).toBe(true);
    const frontmatter = parseYaml(text.split('\n---\n')[0]!.slice(4)) as Record<string, Record<string, unknown>>;
    expect(Object.keys(frontmatter)).toEqual(['name', 'description', 'metadata']);
    expect(frontmatter.metadata).toEqual({
      type: 'feedback',
      id: 'mem-1',
      scope: 'project:acme',
      importance: 0.8,
      source: { sessionId: 'session-9', turnId: 'turn-3', origin: 'cli' },
      createdAt: NOW,
      updatedAt: NOW,
      lastAccessedAt: null,
      hitCount: 0,
      validFrom: NOW,
      invalidAt: null,
      supersededBy: null,
      archived: false,
    });
  });

  it('quotes values a YAML 1.1 reader would turn into booleans, numbers or dates', () => {
    const text = renderMemoryFile(makeMemory({ name: 'yes', description: '2024-01-01', content: 'x' }));
    expect(text).toContain('name: "yes"\n');
    expect(text).toContain('description: "2024-01-01"\n');
    expect(text).toContain('createdAt: "2025-03-01T12:00:00.000Z"\n');
  });
});

describe('parseMemoryFile round trip', () => {
  const cases: Array<[string, Omit<NewMemory, 'scope'> & { scope?: string }]> = [
    ['plain', { content: 'The user prefers tabs.' }],
    ['edge whitespace', { content: '\n\n  indented first line\ntrailing spaces   \n\n\n' }],
    ['delimiter lines in the body', { content: '---\nname: not-frontmatter\n---\nstill body\n---' }],
    ['markdown', { content: '# Heading\n\n- item\n\n```ts\nconst x = 1; // ---\n```\n\n> quote\n\n[[other-name]]' }],
    [
      'unicode',
      { content: 'Ünïcödé — 数据库是 PostgreSQL 15 😀\u2028separator', description: 'Emoji 😀 and “quotes” — dash' },
    ],
    ['carriage returns inside content', { content: 'line one\r\nline two\rline three\r\n' }],
    ['tabs', { content: '\tcode\n\t\tdeeper' }],
    [
      'YAML-looking values',
      { name: 'null', description: 'key: value # not a comment, - [x] & *alias !tag %x @y `z` | > ?', content: 'x' },
    ],
    ['number-like name', { name: '1e3', description: '0.5', content: 'numbers' }],
    [
      'every field set',
      {
        type: 'procedure',
        name: 'deploy.steps_v2',
        description: "It's how we deploy",
        content: 'Run `make deploy`.',
        importance: 0.30000000000000004,
        source: { sessionId: 'session:abc', origin: 'hook' },
        createdAt: '2024-01-02T03:04:05.678Z',
        updatedAt: '2024-06-01T00:00:00.000Z',
        lastAccessedAt: '2025-01-01T00:00:00.000Z',
        hitCount: 42,
        validFrom: '2024-01-03T00:00:00.000Z',
        invalidAt: '2025-02-01T00:00:00.000Z',
        supersededBy: 'mem-2',
        archived: true,
        scope: 'user:alice@example.com',
      },
    ],
    ['zero importance', { content: 'z', importance: 0, type: 'reference' }],
  ];

  it.each(cases)('keeps every field: %s', (_label, input) => {
    const memory = makeMemory(input);
    expect(roundTrip(memory)).toStrictEqual(memory);
  });
});

describe('parseMemoryFile with Claude Code files', () => {
  const current = [
    '---',
    'name: user-role',
    'description: The user is a data engineer who maintains the ingest pipeline',
    'metadata:',
    '  type: user',
    '---',
    '',
    'The user is a data engineer on the ingest team.',
    '',
  ].join('\n');

  const older = [
    '---',
    'name: User Role Notes',
    'description: Corrections about how to run the tests',
    'type: feedback',
    '---',
    'Never mock the database in integration tests.',
    '**Why:** a mocked test passed while the migration failed.',
    '**How to apply:** start the test container first.',
    '',
  ].join('\n');

  it('reads the current format with metadata.type', () => {
    expect(parseMemoryFile(current, FALLBACK)).toStrictEqual({
      id: 'fallback-id',
      scope: 'project:fallback',
      content: 'The user is a data engineer on the ingest team.',
      type: 'user',
      name: 'user-role',
      description: 'The user is a data engineer who maintains the ingest pipeline',
    });
  });

  it('leaves the id out when neither the file nor the caller gives one', () => {
    const { id: _unused, ...withoutId } = FALLBACK;
    expect(parseMemoryFile(current, withoutId)).not.toHaveProperty('id');
    const engramFile = renderMemoryFile(makeMemory({ content: 'kept' }, 'engram-id-7'));
    expect(parseMemoryFile(engramFile, withoutId).id).toBe('engram-id-7');
  });

  it('reads the v2.1.120 format: top-level type and a title turned into a slug', () => {
    const parsed = parseMemoryFile(older, FALLBACK);
    expect(parsed.type).toBe('feedback');
    expect(parsed.name).toBe('user-role-notes');
    expect(parsed.content).toBe(
      'Never mock the database in integration tests.\n**Why:** a mocked test passed while the migration failed.\n**How to apply:** start the test container first.',
    );
  });

  it('reads CRLF files as if they had LF line endings', () => {
    const parsed = parseMemoryFile(current.replace(/\n/g, '\r\n'), FALLBACK);
    expect(parsed.name).toBe('user-role');
    expect(parsed.type).toBe('user');
    expect(parsed.content).toBe('The user is a data engineer on the ingest team.');
  });

  it('tolerates a byte order mark and capitalised types', () => {
    const parsed = parseMemoryFile(`\uFEFF${current.replace('type: user', 'type: User')}`, FALLBACK);
    expect(parsed.type).toBe('user');
  });

  it('takes a later modified: timestamp as updatedAt, and as createdAt when none is given', () => {
    const withModified = current.replace('metadata:', 'modified: 2025-05-06T07:08:09Z\nmetadata:');
    const parsed = parseMemoryFile(withModified, FALLBACK);
    expect(parsed.updatedAt).toBe('2025-05-06T07:08:09.000Z');
    expect(parsed.createdAt).toBe('2025-05-06T07:08:09.000Z');

    const memory = makeMemory({ content: 'edited by Claude Code' });
    const edited = renderMemoryFile(memory).replace('metadata:', 'modified: 2026-01-01T00:00:00.000Z\nmetadata:');
    const reparsed = parseMemoryFile(edited, FALLBACK);
    expect(reparsed.updatedAt).toBe('2026-01-01T00:00:00.000Z');
    expect(reparsed.createdAt).toBe(NOW);

    const stale = renderMemoryFile(memory).replace('metadata:', 'modified: 2020-01-01T00:00:00.000Z\nmetadata:');
    expect(parseMemoryFile(stale, FALLBACK).updatedAt).toBe(NOW);
  });

  it('reads a file without frontmatter, naming it after its file', () => {
    const parsed = parseMemoryFile('# Testing\n\nUse the real database.\n', {
      ...FALLBACK,
      fileName: 'feedback_testing.md',
    });
    expect(parsed).toStrictEqual({
      id: 'fallback-id',
      scope: 'project:fallback',
      content: '# Testing\n\nUse the real database.',
      name: 'feedback_testing',
    });
    const normalized = normalizeNewMemory(parsed, { now: NOW, id: 'x' });
    expect(normalized.description).toBe('Testing');
  });

  it('slugs a file name that is not a slug, and uses it when the title has no letters it can keep', () => {
    expect(parseMemoryFile('body', { ...FALLBACK, fileName: 'Team Notes.md' }).name).toBe('team-notes');
    const cjk = '---\nname: 用户角色\ndescription: 用户是数据工程师\n---\n用户是数据工程师\n';
    expect(parseMemoryFile(cjk, { ...FALLBACK, fileName: 'user_role.md' }).name).toBe('user_role');
    expect(parseMemoryFile(cjk, FALLBACK).name).toBeUndefined();
  });

  it('joins a description written as a folded block into one line', () => {
    const text = '---\nname: folded\ndescription: >\n  first part\n  second part\n---\nbody\n';
    expect(parseMemoryFile(text, FALLBACK).description).toBe('first part second part');
  });
});

describe('parseMemoryFile refuses bad files', () => {
  it.each([
    ['an unclosed frontmatter', '---\nname: x\ndescription: y\nbody', /no closing "---"/],
    ['a single delimiter line', '---', /no closing "---"/],
    ['broken YAML', '---\nname: [unclosed\n---\nbody\n', /Malformed frontmatter: .*file line 3/],
    ['duplicate keys', '---\nname: a\nname: b\n---\nbody\n', /Map keys must be unique.*file line 3/],
    ['a list as frontmatter', '---\n- a\n- b\n---\nbody\n', /must be a YAML mapping/],
    ['a scalar as frontmatter', '---\njust text\n---\nbody\n', /must be a YAML mapping/],
    ['metadata that is not a mapping', '---\nname: a\nmetadata: user\n---\nbody\n', /"metadata" must be a mapping/],
    ['a name that is a list', '---\nname: [a, b]\n---\nbody\n', /"name" must be a short text/],
    ['a description that is a mapping', '---\ndescription: {a: 1}\n---\nbody\n', /"description" must be one line/],
    ['a JavaScript tag', '---\nname: !!js/function "function () { return 1 }"\n---\nbody\n', /Unresolved tag/],
    ['a binary tag', '---\nname: !!binary aGVsbG8=\n---\nbody\n', /Unresolved tag/],
    ['a custom tag', '---\nname: !exec rm -rf\n---\nbody\n', /Unresolved tag/],
    ['an empty body', '---\nname: a\n---\n\n\n', /no content/],
    ['an unknown type', '---\nname: a\nmetadata:\n  type: preference\n---\nbody\n', /Invalid type "preference"/],
    ['importance out of range', '---\nmetadata:\n  importance: 2\n---\nbody\n', /Invalid importance 2/],
    ['a path as id', '---\nmetadata:\n  id: ../../etc/passwd\n---\nbody\n', /Invalid memory id/],
    [
      'a control character in the description',
      '---\ndescription: "bell \\u0007 here"\n---\nbody\n',
      /control characters/,
    ],
    ['a NUL in the content', '---\nname: a\n---\nbefore\u0000after\n', /control characters/],
    ['a bad modified stamp', '---\nmodified: yesterday\n---\nbody\n', /Invalid modified/],
    ['a bad source field', '---\nmetadata:\n  source: {command: "rm -rf /"}\n---\nbody\n', /Invalid source field/],
  ])('%s', (_label, text, message) => {
    const error = parseError(text);
    expect(error.message).toMatch(message);
  });

  it('refuses an invalid scope with INVALID_SCOPE', () => {
    parseError('---\nmetadata:\n  scope: "team:x y"\n---\nbody\n', 'INVALID_SCOPE');
  });

  it('refuses oversized content with PAYLOAD_TOO_LARGE', () => {
    parseError(`---\nname: big\n---\n${'x'.repeat(70_000)}\n`, 'PAYLOAD_TOO_LARGE');
  });

  it('stops an alias bomb before it expands', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level += 1) {
      const previous = String.fromCharCode(96 + level);
      const current = String.fromCharCode(97 + level);
      levels.push(`${current}: &${current} [${Array(9).fill(`*${previous}`).join(',')}]`);
    }
    const error = parseError(`---\n${levels.join('\n')}\n---\nbody\n`);
    expect(error.message).toMatch(/aliases/);
  });

  it('refuses frontmatter larger than the cap without parsing it', () => {
    const filler = `filler: "${'y'.repeat(MAX_FRONTMATTER_BYTES)}"`;
    expect(parseError(`---\n${filler}\n---\nbody\n`).message).toMatch(/larger than|longer than/);
  });

  it('refuses deeply nested frontmatter with a clear error', () => {
    const nested = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const error = parseError(`---\nname: ${nested}\n---\nbody\n`);
    expect(error.message).toMatch(/^Malformed frontmatter|"name" must be/);
  });

  it('does not let a __proto__ key reach any prototype', () => {
    const parsed = parseMemoryFile('---\n__proto__: {polluted: yes}\nname: safe\n---\nbody\n', FALLBACK);
    expect(parsed.name).toBe('safe');
    expect((parsed as unknown as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a non-string input', () => {
    parseError(42 as unknown as string);
  });
});
