import { describe, expect, it } from 'vitest';
import { parseJsonl, serializeMemoryLine } from '../../src/memory/jsonl-format.js';
import { normalizeNewMemory, type Memory, type NewMemory } from '../../src/memory/memory.js';

const NOW = '2025-03-01T12:00:00.000Z';

function makeMemory(input: Partial<NewMemory> = {}, id = 'mem-1'): Memory {
  return normalizeNewMemory({ scope: 'project:acme', content: 'The user prefers tabs.', ...input }, { now: NOW, id });
}

describe('serializeMemoryLine', () => {
  it('writes one line with kind first and every field in camelCase', () => {
    const line = serializeMemoryLine(makeMemory({ content: 'two\nlines\u2028and a separator' }));
    expect(line).not.toContain('\n');
    expect(line.startsWith('{"kind":"memory","id":"mem-1","scope":"project:acme","type":"project"')).toBe(true);
    expect(Object.keys(JSON.parse(line) as object)).toEqual([
      'kind',
      'id',
      'scope',
      'type',
      'name',
      'description',
      'content',
      'importance',
      'source',
      'createdAt',
      'updatedAt',
      'lastAccessedAt',
      'hitCount',
      'validFrom',
      'invalidAt',
      'supersededBy',
      'archived',
    ]);
  });

  it('round-trips every field through parseJsonl', () => {
    const memories = [
      makeMemory(),
      makeMemory(
        {
          type: 'feedback',
          name: 'real-database',
          description: 'Integration tests hit the real database — “no mocks”',
          content: '  Use the real database.\n\n**Why:** 😀 mocks hid a bug.\r\n',
          importance: 0.9,
          source: { sessionId: 's-1', turnId: 't-2', origin: 'mcp' },
          createdAt: '2024-01-01T00:00:00.000Z',
          updatedAt: '2024-02-01T00:00:00.000Z',
          lastAccessedAt: '2024-03-01T00:00:00.000Z',
          hitCount: 7,
          validFrom: '2024-01-02T00:00:00.000Z',
          invalidAt: '2024-04-01T00:00:00.000Z',
          supersededBy: 'mem-9',
          archived: true,
        },
        'mem-2',
      ),
    ];
    const parsed = parseJsonl(memories.map(serializeMemoryLine).join('\n'));
    expect(parsed.errors).toEqual([]);
    expect(parsed.warnings).toEqual([]);
    expect(parsed.memories.map((entry) => entry.line)).toEqual([1, 2]);
    expect(
      parsed.memories.map((entry) => normalizeNewMemory(entry.input, { now: '2030-01-01T00:00:00.000Z', id: 'x' })),
    ).toStrictEqual(memories);
  });
});

describe('parseJsonl', () => {
  it('accepts snake_case aliases, as the evaluation datasets write them', () => {
    const line = JSON.stringify({
      kind: 'memory',
      id: 'locomo-1',
      scope: 'user:alice',
      content: 'Alice moved to Lisbon in May 2023.',
      created_at: '2023-05-08T13:56:00Z',
      updated_at: '2023-05-09T00:00:00Z',
      last_accessed_at: '2023-06-01T00:00:00Z',
      hit_count: 3,
      valid_from: '2023-05-08T00:00:00Z',
      invalid_at: null,
      superseded_by: null,
      source: { session_id: 'session_1', turn_id: 'D1:3' },
    });
    const parsed = parseJsonl(line);
    expect(parsed.errors).toEqual([]);
    expect(parsed.memories[0]!.input).toEqual({
      id: 'locomo-1',
      scope: 'user:alice',
      content: 'Alice moved to Lisbon in May 2023.',
      createdAt: '2023-05-08T13:56:00Z',
      updatedAt: '2023-05-09T00:00:00Z',
      lastAccessedAt: '2023-06-01T00:00:00Z',
      hitCount: 3,
      validFrom: '2023-05-08T00:00:00Z',
      invalidAt: null,
      supersededBy: null,
      source: { sessionId: 'session_1', turnId: 'D1:3' },
    });
  });

  it('reads a line without kind as a memory and returns other kinds separately', () => {
    const text = [
      '{"id":"m1","scope":"global","content":"A fact."}',
      '{"kind":"query","question":"Where does Alice live?","answer":"Lisbon"}',
      '{"kind":"memory","id":"m2","scope":"global","content":"Another fact."}',
    ].join('\n');
    const parsed = parseJsonl(text);
    expect(parsed.memories.map((entry) => [entry.line, entry.input.id])).toEqual([
      [1, 'm1'],
      [3, 'm2'],
    ]);
    expect(parsed.others).toEqual([
      { line: 2, value: { kind: 'query', question: 'Where does Alice live?', answer: 'Lisbon' } },
    ]);
    expect(parsed.errors).toEqual([]);
  });

  it('skips blank lines, tolerates a BOM and CRLF, and keeps 1-based line numbers', () => {
    const text =
      '\uFEFF{"id":"m1","scope":"global","content":"One."}\r\n\r\n   \r\n{"id":"m2","scope":"global","content":"Two."}\r\n';
    const parsed = parseJsonl(text);
    expect(parsed.memories.map((entry) => entry.line)).toEqual([1, 4]);
    expect(parsed.memories[0]!.input.content).toBe('One.');
    expect(parsed.errors).toEqual([]);
  });

  it('ignores unknown fields with one warning per line', () => {
    const parsed = parseJsonl('{"id":"m1","scope":"global","content":"x","speaker":"Alice","dia_id":"D1:3"}');
    expect(parsed.memories[0]!.input).toEqual({ id: 'm1', scope: 'global', content: 'x' });
    expect(parsed.warnings).toEqual(['Line 1: ignored unknown fields "speaker", "dia_id".']);
  });

  it('caps the number of warnings listed and says how many more there were', () => {
    const lines = Array.from(
      { length: 120 },
      (_unused, index) => `{"id":"m${index}","scope":"global","content":"x","extra":1}`,
    );
    const parsed = parseJsonl(lines.join('\n'));
    expect(parsed.memories).toHaveLength(120);
    expect(parsed.warnings).toHaveLength(51);
    expect(parsed.warnings.at(-1)).toBe('70 more warnings (unknown fields, control characters) not listed.');
  });

  it('shortens hostile unknown field names in warnings', () => {
    const record: Record<string, unknown> = { id: 'm1', scope: 'global', content: 'x' };
    for (let index = 0; index < 15; index += 1) record[`${'k'.repeat(1000)}${index}`] = 1;
    const parsed = parseJsonl(JSON.stringify(record));
    expect(parsed.warnings).toHaveLength(1);
    expect(parsed.warnings[0]!.length).toBeLessThan(600);
    expect(parsed.warnings[0]).toMatch(/and 5 more\.$/);
  });

  it('reports each bad line with its line number and keeps reading', () => {
    const text = [
      '{"id":"ok-1","scope":"global","content":"Fine."}',
      'not json at all',
      '[1,2,3]',
      '"a string"',
      'null',
      '{"scope":"global","content":"no id"}',
      '{"id":"m","content":"no scope"}',
      '{"id":"m","scope":"global"}',
      '{"id":"m","scope":"global","content":null}',
      '{"kind":7,"id":"m","scope":"global","content":"x"}',
      '{"id":"m","scope":"project:has space","content":"x"}',
      '{"id":"m","scope":"global","content":"x","importance":"high"}',
      '{"id":"m","scope":"global","content":"x","type":"preference"}',
      '{"id":"../../etc/passwd","scope":"global","content":"x"}',
      '{"id":"m","scope":"global","content":"\\u0007"}',
      '{"id":"m","scope":"global","content":"x","createdAt":"2024-01-01T00:00:00Z","created_at":"2025-01-01T00:00:00Z"}',
      '{"id":"m","scope":"global","content":"x","source":{"__proto__":{"polluted":true}}}',
      '{"id":"m","scope":"global","content":"x","hit_count":-1}',
      '{"id":"ok-2","scope":"global","content":"Also fine.","created_at":"2024-01-01T00:00:00Z","createdAt":"2024-01-01T00:00:00Z"}',
    ].join('\n');
    const parsed = parseJsonl(text);
    expect(parsed.memories.map((entry) => [entry.line, entry.input.id])).toEqual([
      [1, 'ok-1'],
      [19, 'ok-2'],
    ]);
    const byLine = new Map(parsed.errors.map((error) => [error.line, error.message]));
    expect([...byLine.keys()]).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
    expect(byLine.get(2)).toMatch(/^Not valid JSON/);
    expect(byLine.get(3)).toMatch(/must be a JSON object/);
    expect(byLine.get(5)).toMatch(/must be a JSON object/);
    expect(byLine.get(6)).toBe('Memory line is missing id.');
    expect(byLine.get(7)).toBe('Memory line is missing scope.');
    expect(byLine.get(8)).toBe('Memory line is missing content.');
    expect(byLine.get(9)).toBe('Memory line is missing content.');
    expect(byLine.get(10)).toMatch(/"kind" must be a string/);
    expect(byLine.get(11)).toMatch(/Invalid scope/);
    expect(byLine.get(12)).toMatch(/Invalid importance/);
    expect(byLine.get(13)).toMatch(/Invalid type "preference"/);
    expect(byLine.get(14)).toMatch(/Invalid memory id/);
    expect(byLine.get(15)).toMatch(/Invalid content: a non-empty string/);
    expect(byLine.get(16)).toMatch(/Conflicting values for createdAt/);
    expect(byLine.get(17)).toMatch(/Invalid source field "__proto__"/);
    expect(byLine.get(18)).toMatch(/Invalid hitCount/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('replaces control characters in content and description with a warning, keeping tab and newline', () => {
    const text = [
      JSON.stringify({ id: 'pdf', scope: 'global', content: 'co\u0002operate with\u0002 the\u0007\u0007 team' }),
      JSON.stringify({ id: 'tabs', scope: 'global', content: 'a\tb\r\nc\rd\u001b[31m e\u0085' }),
      JSON.stringify({ id: 'desc', scope: 'global', content: 'Fine.', description: 'one\u0000line\nsplit' }),
      JSON.stringify({ id: 'plain', scope: 'global', content: 'Nothing to clean.\n\tIndented.' }),
    ].join('\n');
    const parsed = parseJsonl(text);
    expect(parsed.errors).toEqual([]);
    const content = new Map(parsed.memories.map((entry) => [entry.input.id, entry.input]));
    expect(content.get('pdf')!.content).toBe('co operate with the team');
    expect(content.get('tabs')!.content).toBe('a\tb\r\nc\rd [31m e');
    expect(content.get('desc')!.description).toBe('one line split');
    expect(content.get('plain')!.content).toBe('Nothing to clean.\n\tIndented.');
    expect(parsed.warnings).toEqual([
      'Line 1: replaced 4 control characters (kept tab and newline).',
      'Line 2: replaced 2 control characters (kept tab and newline).',
      'Line 3: replaced 1 control character (kept tab and newline).',
    ]);
  });

  it('names the memory id of a refused line, so a dataset knows which memory is missing', () => {
    const parsed = parseJsonl(
      [
        JSON.stringify({ id: 'empty', scope: 'global', content: '   ' }),
        JSON.stringify({ id: 7, scope: 'global', content: 'x' }),
        '{torn',
      ].join('\n'),
    );
    expect(parsed.errors.map((error) => error.id)).toEqual(['empty', undefined, undefined]);
  });

  it('does not treat inherited property names as known fields', () => {
    const parsed = parseJsonl('{"id":"m","scope":"global","content":"x","constructor":1,"toString":2}');
    expect(parsed.errors).toEqual([]);
    expect(parsed.memories[0]!.input).toEqual({ id: 'm', scope: 'global', content: 'x' });
    expect(parsed.warnings[0]).toBe('Line 1: ignored unknown fields "constructor", "toString".');
  });

  it('refuses lines over the byte cap, counting UTF-8 bytes', () => {
    const content = '数'.repeat(100);
    const line = JSON.stringify({ id: 'm', scope: 'global', content });
    const bytes = Buffer.byteLength(line);
    expect(line.length).toBeLessThan(bytes - 100);
    expect(parseJsonl(line, { maxLineBytes: bytes }).errors).toEqual([]);
    const parsed = parseJsonl(`${line}\n${line}`, { maxLineBytes: bytes - 1 });
    expect(parsed.memories).toEqual([]);
    expect(parsed.errors).toEqual([
      { line: 1, message: `Line is ${bytes} bytes; at most ${bytes - 1} are accepted.` },
      { line: 2, message: `Line is ${bytes} bytes; at most ${bytes - 1} are accepted.` },
    ]);
  });

  it('refuses by default a line of more than 1 MB without parsing it', () => {
    const parsed = parseJsonl(`{"id":"m","scope":"global","content":"${'x'.repeat(1_100_000)}"}`);
    expect(parsed.errors[0]?.message).toMatch(/at most 1048576 are accepted/);
  });

  it('reports oversized content through the memory validators', () => {
    const parsed = parseJsonl(JSON.stringify({ id: 'm', scope: 'global', content: 'x'.repeat(70_000) }));
    expect(parsed.errors[0]?.message).toMatch(/at most 65536 bytes/);
  });

  it('survives deeply nested JSON', () => {
    const parsed = parseJsonl(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(parsed.errors).toHaveLength(1);
    expect(parsed.errors[0]!.line).toBe(1);
  });

  it('refuses invalid options and non-text input', () => {
    expect(() => parseJsonl('', { maxLineBytes: 0 })).toThrow(/maxLineBytes/);
    expect(() => parseJsonl(undefined as unknown as string)).toThrow(/JSONL input is text/);
    expect(parseJsonl('')).toEqual({ memories: [], others: [], errors: [], warnings: [] });
  });
});
