import { describe, expect, it } from 'vitest';
import { isEngramError } from '../../src/kernel/errors.js';
import { parseEvalDataset } from '../../src/eval/eval-dataset.js';

const memory = (id: string, scope = 'project:app', extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ kind: 'memory', id, scope, content: `Memory ${id} about the deploy pipeline.`, ...extra });
const query = (id: string, relevant: unknown, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ kind: 'query', id, scope: 'project:app', query: 'how do we deploy?', relevant, ...extra });

/** The invalid lines of a dataset that still has something to score, as the CLI lists them. */
function invalidOf(text: string): string {
  const dataset = parseEvalDataset(text);
  return [
    `${dataset.invalidLines.length} invalid line(s)`,
    ...dataset.invalidLines.map((entry) => `line ${entry.line}: ${entry.message}`),
  ].join('\n');
}

function problemsOf(text: string): string {
  try {
    parseEvalDataset(text);
  } catch (error) {
    if (isEngramError(error)) {
      expect(error.code).toBe('INVALID_INPUT');
      return error.message;
    }
    throw error;
  }
  throw new Error('expected the dataset to be refused');
}

describe('parseEvalDataset', () => {
  it('reads memories (snake_case dates too) and queries with tags', () => {
    const dataset = parseEvalDataset(
      [
        memory('m1', 'project:app', { created_at: '2024-01-02T03:04:05.000Z' }),
        memory('m2'),
        query('q1', ['m1', 'm2', 'm1'], { tags: ['single-hop'] }),
      ].join('\n'),
    );
    expect(dataset.memories.map((entry) => entry.id)).toEqual(['m1', 'm2']);
    expect(dataset.memories[0]!.createdAt).toBe('2024-01-02T03:04:05.000Z');
    expect(dataset.queries).toEqual([
      {
        line: 3,
        id: 'q1',
        scope: 'project:app',
        query: 'how do we deploy?',
        relevant: ['m1', 'm2'],
        tags: ['single-hop'],
      },
    ]);
    expect(dataset.skipped).toEqual([]);
  });

  it('skips and counts queries with an empty relevant list', () => {
    const dataset = parseEvalDataset([memory('m1'), query('q1', ['m1']), query('q2', []), query('q3', [])].join('\n'));
    expect(dataset.queries.map((entry) => entry.id)).toEqual(['q1']);
    expect(dataset.skipped).toEqual([
      { line: 3, id: 'q2', reason: 'no relevant memory ids' },
      { line: 4, id: 'q3', reason: 'no relevant memory ids' },
    ]);
  });

  it('names every bad line by number (malformed JSON, unknown ids, unknown scopes, duplicates) and scores the rest', () => {
    const message = invalidOf(
      [
        memory('m1'),
        '{"kind":"memory","id":"m2",',
        memory('m1'),
        query('q1', ['m1', 'ghost']),
        JSON.stringify({ kind: 'query', id: 'q2', scope: 'project:elsewhere', query: 'x', relevant: ['m1'] }),
        query('q1', ['m1']),
        JSON.stringify({ kind: 'query', id: 'q3', scope: 'not a scope', query: 'x', relevant: ['m1'] }),
        JSON.stringify({ kind: 'answer', id: 'a1' }),
        query('q4', 'm1'),
        query('q5', ['m1'], { query: '   ' }),
        query('q6', ['m1']),
      ].join('\n'),
    );
    expect(message).toContain('9 invalid line(s)');
    expect(message).toMatch(/line 2: Not valid JSON/);
    expect(message).toMatch(/line 3: Duplicate memory id "m1" \(first on line 1\)/);
    expect(message).toMatch(/line 4: Query "q1" names unknown memory id "ghost"/);
    expect(message).toMatch(/line 5: .*"project:elsewhere", which holds no memory/);
    expect(message).toMatch(/line 6: Duplicate query id "q1" \(first on line 4\)/);
    expect(message).toMatch(/line 7: .*"scope" must be a scope/);
    expect(message).toMatch(/line 8: Unknown line kind "answer"/);
    expect(message).toMatch(/line 9: .*"relevant" must be an array/);
    expect(message).toMatch(/line 10: .*"query" must be non-empty text/);
  });

  it('leaves out a query whose relevant memories live in another scope (it could never find them)', () => {
    const message = invalidOf(
      [memory('m1'), memory('m2', 'project:other'), query('q1', ['m1', 'm2']), query('q2', ['m1'])].join('\n'),
    );
    expect(message).toMatch(/line 3: .*names memories of other scopes.*"m2"/);
  });

  it('refuses oversized lines and queries without reading them as JSON', () => {
    const huge = JSON.stringify({
      kind: 'query',
      id: 'q1',
      scope: 'project:app',
      query: 'x'.repeat(2 * 1024 * 1024),
      relevant: ['m1'],
    });
    expect(problemsOf([memory('m1'), huge].join('\n'))).toMatch(/line 2: Line is \d+ bytes; at most 1048576/);
    const long = query('q1', ['m1'], { query: 'why '.repeat(5_000) });
    expect(invalidOf([memory('m1'), long, query('q2', ['m1'])].join('\n'))).toMatch(
      /line 2: .*at most 10000 are accepted/,
    );
  });

  it('lists at most 20 problems, says how many more, and keeps hostile values short', () => {
    const lines = [
      memory('m1'),
      ...Array.from({ length: 30 }, (_, index) => query(`q${index}-${'\u0007'.repeat(500)}`, ['nope'])),
    ];
    const message = problemsOf(lines.join('\n'));
    expect(message).toContain('no query with relevant memories');
    expect(message).toContain('30 invalid line(s)');
    expect(message).toContain('… and 10 more');
    expect(message.length).toBeLessThan(20 * 400);
    expect(message).not.toContain('\u0007');
  });

  it('reads real conversations: control characters replaced with a warning, an empty turn left out and its queries kept', () => {
    const dataset = parseEvalDataset(
      [
        memory('m1', 'project:app', { content: 'Alice co\u0002operates with the\u0007 platform team.' }),
        memory('m2', 'project:app', { content: '' }),
        memory('m3', 'project:app', { content: '\u0002\u0003' }),
        memory('m4'),
        query('q1', ['m1', 'm2'], { query: 'who does Alice\u0002 work with?' }),
        query('q2', ['m2', 'm3']),
        query('q3', ['m4']),
      ].join('\n'),
    );
    expect(dataset.memories.map((entry) => [entry.id, entry.content])).toEqual([
      ['m1', 'Alice co operates with the platform team.'],
      ['m4', 'Memory m4 about the deploy pipeline.'],
    ]);
    expect(dataset.invalidLines.map((entry) => entry.line)).toEqual([2, 3]);
    expect(dataset.invalidLines[0]!.message).toMatch(/content/);
    expect(dataset.queries.map((entry) => [entry.id, entry.query, entry.relevant])).toEqual([
      ['q1', 'who does Alice work with?', ['m1']],
      ['q3', 'how do we deploy?', ['m4']],
    ]);
    expect(dataset.skipped).toEqual([{ line: 6, id: 'q2', reason: 'its relevant memories are on invalid lines' }]);
    expect(dataset.warnings).toEqual(
      expect.arrayContaining([
        'Line 1: replaced 2 control characters (kept tab and newline).',
        'Line 5: replaced 1 control character (kept tab and newline).',
        expect.stringMatching(/Line 5: query "q1" leaves out relevant memory "m2", on invalid lines/),
      ]),
    );
  });

  it('refuses a dataset without memories or without scorable queries', () => {
    expect(problemsOf(query('q1', []))).toMatch(/line 1: .*which holds no memory/);
    expect(problemsOf([memory('m1'), query('q1', [])].join('\n'))).toMatch(
      /no query with relevant memories.*1 had an empty relevant list/,
    );
    expect(problemsOf('')).toMatch(/no memory lines/);
  });

  it('refuses tags that are not short strings and hostile prototype keys stay data', () => {
    expect(invalidOf([memory('m1'), query('q1', ['m1'], { tags: [42] }), query('q2', ['m1'])].join('\n'))).toMatch(
      /"tags" must be an array/,
    );
    const dataset = parseEvalDataset(
      [
        memory('m1'),
        '{"kind":"query","id":"__proto__","scope":"project:app","query":"deploy","relevant":["m1"],"__proto__":{"x":1}}',
      ].join('\n'),
    );
    expect(dataset.queries[0]!.id).toBe('__proto__');
    expect(dataset.warnings.join(' ')).toContain('__proto__');
  });
});
