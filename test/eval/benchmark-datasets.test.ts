import { describe, expect, it } from 'vitest';
import { parseEvalDataset } from '../../src/eval/eval-dataset.js';
import { convertLongMemEval, parseLongMemEvalDate } from '../../src/eval/longmemeval-dataset.js';
import { readLocomo } from '../../src/eval/locomo-dataset.js';
import { runEval } from '../../src/eval/node/run-eval.js';

// Small questions in LongMemEval's published shape, with the mess real files carry: control
// characters, an empty turn, a lone surrogate, a turn too long for a memory, an assistant turn
// marked as evidence, a malformed turn, an abstention question and one without user-side evidence.
const QUESTIONS = [
  {
    question_id: 'q-one',
    question_type: 'knowledge-update',
    question: 'Where do I keep my bike now?',
    question_date: '2023/05/30 (Tue) 21:43',
    answer: 'in the garage',
    answer_session_ids: ['s2'],
    haystack_dates: ['2023/05/01 (Mon) 10:00', '2023/05/20 (Sat) 09:15'],
    haystack_session_ids: ['s1', 's2'],
    haystack_sessions: [
      [
        { role: 'user', content: 'I keep my bike\u0002 in the hallway.', has_answer: true },
        { role: 'assistant', content: 'Noted, the hallway.' },
        { role: 'user', content: '   ' },
      ],
      [
        { role: 'user', content: 'I moved the bike to the garage \uD83D today.', has_answer: true },
        { role: 'assistant', content: 'The garage it is.', has_answer: true },
        { role: 'user', content: 'x'.repeat(300) },
        'not a turn',
      ],
    ],
  },
  {
    question_id: 'q-two_abs',
    question_type: 'multi-session',
    question: 'How many cats do I have?',
    question_date: '2023/05/30 (Tue) 21:43',
    haystack_dates: ['2023/05/01 (Mon) 10:00'],
    haystack_sessions: [[{ role: 'user', content: 'I have a dog.' }]],
  },
  {
    question_id: 'q-three',
    question_type: 'single-session-assistant',
    question: 'What did you tell me about tea?',
    question_date: 'sometime',
    haystack_dates: ['not a date'],
    haystack_sessions: [
      [
        { role: 'user', content: 'Tell me about tea.' },
        { role: 'assistant', content: 'Green tea has less caffeine.', has_answer: true },
      ],
    ],
  },
];

describe('LongMemEval as published', () => {
  it('indexes user turns only, one memory per turn, in a scope per question, asked at the question date', () => {
    const { lines, report } = convertLongMemEval(QUESTIONS, { level: 'turn', maxContentBytes: 100 });
    const records = lines.map((line) => JSON.parse(line));
    const memories = records.filter((record) => record.kind === 'memory');
    expect(memories.map((record) => record.id)).toEqual(['q-one:1:1', 'q-one:2:1', 'q-one:2:3', 'q-three:1:1']);
    expect(memories[0]).toEqual({
      kind: 'memory',
      id: 'q-one:1:1',
      scope: 'project:longmemeval-q-one',
      content: 'I keep my bike in the hallway.',
      created_at: '2023-05-01T10:00:00.000Z',
    });
    expect(memories[1].content).toBe('I moved the bike to the garage \uFFFD today.');
    expect(memories[2].content).toHaveLength(100);
    expect(memories[3]).not.toHaveProperty('created_at');
    const queries = records.filter((record) => record.kind === 'query');
    expect(queries).toEqual([
      {
        kind: 'query',
        id: 'q-one',
        scope: 'project:longmemeval-q-one',
        query: 'Where do I keep my bike now?',
        relevant: ['q-one:1:1', 'q-one:2:1'],
        tags: ['knowledge-update'],
        at: '2023-05-30T21:43:00.000Z',
      },
    ]);
    expect(report.counts).toMatchObject({
      questions: 3,
      scored: 1,
      abstention: 1,
      withoutUserEvidence: 1,
      emptyTurns: 1,
      malformedTurns: 1,
      undatedSessions: 1,
      controls: 1,
      surrogates: 1,
      clippedTurns: 1,
    });
    expect(report.notes.join('\n')).toMatch(/1 abstention question/);
    expect(report.notes.join('\n')).toMatch(/without user-side evidence left out \(single-session-assistant 1\)/);
    expect(report.notes.join('\n')).toMatch(/cut to fit/);
  });

  it('at session level makes one memory of each session’s user turns, relevant when one of them is evidence', () => {
    const { lines } = convertLongMemEval(QUESTIONS, { level: 'session' });
    const dataset = parseEvalDataset(lines.join('\n'));
    expect(dataset.memories.map((memory) => memory.id)).toEqual(['q-one:1', 'q-one:2', 'q-three:1']);
    expect(dataset.memories[0]!.content).toBe('I keep my bike in the hallway.');
    expect(dataset.memories[1]!.content).toMatch(/^I moved the bike to the garage \uFFFD today\.\n\nxxx/);
    expect(dataset.queries).toHaveLength(1);
    expect(dataset.queries[0]).toMatchObject({ relevant: ['q-one:1', 'q-one:2'], at: '2023-05-30T21:43:00.000Z' });
    expect(dataset.invalidLines).toEqual([]);
  });

  it('reads one question object as well as an array, and leaves out records that are not questions', () => {
    const single = convertLongMemEval(QUESTIONS[0]);
    expect(single.report.counts.scored).toBe(1);
    const odd = convertLongMemEval([null, 42, { question: 'no haystack' }, QUESTIONS[0], QUESTIONS[0]]);
    expect(odd.report.counts).toMatchObject({ malformedQuestions: 3, scored: 2, duplicateIds: 1 });
    const scopes = odd.lines.map((line) => JSON.parse(line).scope);
    expect(new Set(scopes)).toEqual(new Set(['project:longmemeval-q-one', 'project:longmemeval-q-one-2']));
  });

  it('reads its dates, and nothing that is not one', () => {
    expect(parseLongMemEvalDate('2023/05/20 (Sat) 00:31')).toBe('2023-05-20T00:31:00.000Z');
    expect(parseLongMemEvalDate('2023/5/2')).toBe('2023-05-02T00:00:00.000Z');
    expect(parseLongMemEvalDate('2023/02/31 (Fri) 10:00')).toBeUndefined();
    expect(parseLongMemEvalDate('2023/05/20 (Sat) 25:00')).toBeUndefined();
    expect(parseLongMemEvalDate(20230520)).toBeUndefined();
  });
});

describe('LoCoMo as published, by the neutral rules', () => {
  const MESSY = [
    {
      sample_id: 'conv 9',
      conversation: {
        speaker_a: 'Ann',
        speaker_b: 'Bob',
        session_1_date_time: '1:56 pm on 8 May, 2023',
        session_1: [
          { speaker: 'Ann', dia_id: 'D1:1', text: 'I adopted\u0007 a puppy!', blip_caption: 'a small brown dog' },
          { speaker: 'Bob', dia_id: 'D1:2', text: '   ' },
          { speaker: 'Bob', text: 'no dialog id' },
          { speaker: 'Ann', dia_id: 'D1:1', text: 'a repeated id' },
          null,
        ],
        session_2_date_time: 'some day',
        session_2: [{ speaker: 'Bob', dia_id: 'D2:1', text: 'Pottery classes started.' }],
      },
      qa: [
        { question: 'What did Ann adopt?', evidence: ['D1:01', 'D:2:1; D7:7'], category: 4 },
        { question: 'What did Bob say?', evidence: ['D1:2'], category: 1 },
        'not a question',
      ],
    },
  ];

  it('writes content and date only, cleans the text and reports what it left out, refusing nothing', () => {
    const { lines, report } = readLocomo(MESSY);
    const records = lines.map((line) => JSON.parse(line));
    expect(records.filter((record) => record.kind === 'memory')).toEqual([
      {
        kind: 'memory',
        id: 'conv-9:D1:1',
        scope: 'project:locomo-conv-9',
        content: 'Ann: I adopted a puppy! [shared a small brown dog]',
        created_at: '2023-05-08T13:56:00.000Z',
      },
      { kind: 'memory', id: 'conv-9:D2:1', scope: 'project:locomo-conv-9', content: 'Bob: Pottery classes started.' },
    ]);
    expect(report.counts).toMatchObject({
      turns: 2,
      emptyTurns: 1,
      malformedTurns: 3,
      undatedSessions: 1,
      controlCharacters: 1,
      droppedEvidence: 2,
      questionsLosingAllEvidence: 1,
    });
    const dataset = parseEvalDataset(lines.join('\n'));
    expect(dataset.queries.map((query) => [query.id, query.relevant])).toEqual([
      ['conv-9:q1', ['conv-9:D1:1', 'conv-9:D2:1']],
    ]);
    // The third "question" is no object: an empty query line, left out and listed by the dataset parser.
    expect(dataset.invalidLines).toHaveLength(1);
    expect(report.notes.join('\n')).toMatch(/evidence id\(s\) name no turn/);
  });

  it('refuses only a file that is no LoCoMo at all, with what it expects', () => {
    expect(() => readLocomo({ not: 'locomo' })).toThrow(/JSON array of conversations/);
  });
});

describe('a query asked at its own time ("at")', () => {
  const memory = (id: string, content: string, day: string): string =>
    JSON.stringify({ kind: 'memory', id, scope: 'project:at', content, created_at: `${day}T12:00:00.000Z` });
  const lines = [
    memory('early', 'I baked sourdough bread with my sister.', '2023-03-01'),
    memory('late', 'I baked sourdough bread for the neighbours.', '2023-03-20'),
    memory('other', 'I repaired the fence in the garden.', '2023-03-25'),
  ];
  const query = (id: string, at: unknown): string =>
    JSON.stringify({
      kind: 'query',
      id,
      scope: 'project:at',
      query: 'What did I bake two weeks ago?',
      relevant: ['early'],
      at,
    });

  it('recalls with the clock at the question, so "two weeks ago" means two weeks before it was asked', async () => {
    const dataset = parseEvalDataset([...lines, query('asked-mid-march', '2023-03-15T09:00:00Z')].join('\n'));
    expect(dataset.queries[0]!.at).toBe('2023-03-15T09:00:00.000Z');
    const report = await runEval(dataset, { ks: [1], includeQueries: true });
    expect(report.queries![0]!.ranking[0]).toBe('early');
    // Asked just after the newest memory instead, "two weeks ago" is the 11th and neither memory is favoured by date.
    const unanchored = parseEvalDataset(
      [...lines, JSON.stringify({ ...JSON.parse(query('q', 'x')), at: undefined })].join('\n'),
    );
    expect((await runEval(unanchored, { ks: [1], includeQueries: true })).queries![0]!.ranking[0]).toBe('late');
  });

  it('leaves out a query whose "at" is no instant, and says what it should be', () => {
    const dataset = parseEvalDataset(
      [...lines, query('ok', '2023-03-15T09:00:00Z'), query('bad', 'last Tuesday')].join('\n'),
    );
    expect(dataset.queries.map((entry) => entry.id)).toEqual(['ok']);
    expect(dataset.invalidLines).toEqual([{ line: 5, message: expect.stringMatching(/"at" must be the instant/) }]);
  });
});
