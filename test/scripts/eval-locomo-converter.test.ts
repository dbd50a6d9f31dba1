import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { convertLocomo, LOCOMO_SOURCE, normalizeDialogId, parseLocomoDate } from '../../scripts/locomo-to-jsonl.js';
import { parseEvalDataset } from '../../src/eval/eval-dataset.js';

// A tiny conversation with LoCoMo's quirks: a dated session without turns, a caption, malformed,
// zero-padded and dangling evidence, a question without evidence and one that loses all of it.
const FIXTURE = [
  {
    sample_id: 'conv-1',
    conversation: {
      speaker_a: 'Ann',
      speaker_b: 'Bob',
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: [
        {
          speaker: 'Ann',
          dia_id: 'D1:1',
          text: 'I adopted a puppy!',
          blip_caption: 'a photo of a small brown dog',
          img_url: ['x'],
        },
        { speaker: 'Bob', dia_id: 'D1:2', text: 'What is its name?' },
      ],
      session_2_date_time: '10:02 am on 12 June, 2023',
      session_2: [
        { speaker: 'Bob', dia_id: 'D2:1', text: 'I started pottery classes.' },
        { speaker: 'Ann', dia_id: 'D2:5', text: 'Luna loves the park.' },
      ],
      session_3_date_time: '9:00 pm on 1 July, 2023',
    },
    qa: [
      { question: 'When did Ann adopt a puppy?', answer: 'May 2023', evidence: ['D1:1'], category: 2 },
      { question: 'What did Bob start?', answer: 'pottery', evidence: ['D2:01; D1:2'], category: 4 },
      { question: 'What is the dog called?', answer: 'Luna', evidence: ['D:2:5 D1:1', 'D'], category: 1 },
      { question: 'Is Ann an ally?', answer: 'yes', evidence: [], category: 3 },
      { question: 'What did Ann paint?', adversarial_answer: 'a lake', evidence: ['D9:9'], category: 5 },
    ],
  },
];

describe('LoCoMo converter', () => {
  const { lines, report } = convertLocomo(FIXTURE);
  const records = lines.map((line) => JSON.parse(line));
  const memories = records.filter((record) => record.kind === 'memory');
  const queries = records.filter((record) => record.kind === 'query');

  it('makes each turn a memory in the conversation’s scope, with speaker, caption, session date and source turn', () => {
    expect(memories.map((record) => record.id)).toEqual(['conv-1:D1:1', 'conv-1:D1:2', 'conv-1:D2:1', 'conv-1:D2:5']);
    expect(memories[0]).toEqual({
      kind: 'memory',
      id: 'conv-1:D1:1',
      scope: 'project:locomo-conv-1',
      description: 'Ann, 8 May 2023',
      content: 'Ann: I adopted a puppy! [shared a photo of a small brown dog]',
      created_at: '2023-05-08T13:56:00.000Z',
      source: { sessionId: 'conv-1:session_1', turnId: 'D1:1' },
    });
    expect(memories.map((record) => record.source.sessionId)).toEqual([
      'conv-1:session_1',
      'conv-1:session_1',
      'conv-1:session_2',
      'conv-1:session_2',
    ]);
    expect(memories[2]!.created_at).toBe('2023-06-12T10:02:00.000Z');
    expect(memories[1]!.content).toBe('Bob: What is its name?');
  });

  it('writes neutral turns as an import would: content and date, no source turn, no description, same questions', () => {
    const neutral = convertLocomo(FIXTURE, { neutral: true });
    const neutralRecords = neutral.lines.map((line) => JSON.parse(line));
    expect(neutralRecords[0]).toEqual({
      kind: 'memory',
      id: 'conv-1:D1:1',
      scope: 'project:locomo-conv-1',
      content: 'Ann: I adopted a puppy! [shared a photo of a small brown dog]',
      created_at: '2023-05-08T13:56:00.000Z',
    });
    expect(
      neutralRecords
        .filter((record) => record.kind === 'memory')
        .every((record) => !('source' in record) && !('description' in record)),
    ).toBe(true);
    expect(neutralRecords.filter((record) => record.kind === 'query')).toEqual(queries);
    expect(neutral.report).toEqual(report);
  });

  it('normalizes evidence, drops what points at no turn, and tags each question with its category name', () => {
    expect(queries.map((record) => [record.id, record.relevant, record.tags])).toEqual([
      ['conv-1:q1', ['conv-1:D1:1'], ['temporal']],
      ['conv-1:q2', ['conv-1:D2:1', 'conv-1:D1:2'], ['single-hop']],
      ['conv-1:q3', ['conv-1:D2:5', 'conv-1:D1:1'], ['multi-hop']],
      ['conv-1:q4', [], ['open-domain']],
      ['conv-1:q5', [], ['adversarial']],
    ]);
    expect(report).toEqual({
      conversations: 1,
      sessions: 2,
      turns: 4,
      captionedTurns: 1,
      questions: 5,
      questionsWithoutEvidence: 1,
      normalizedEvidence: 3,
      droppedEvidence: ['conv-1:D', 'conv-1:D9:9'],
      questionsLosingAllEvidence: 1,
      emptyTurns: 0,
      malformedTurns: 0,
      undatedSessions: 0,
      controlCharacters: 0,
      loneSurrogates: 0,
      clippedTurns: 0,
      clippedBytes: 0,
    });
  });

  it('writes a dataset `engram eval` accepts, skipping the questions left without evidence', () => {
    const dataset = parseEvalDataset(lines.join('\n'));
    expect(dataset.memories).toHaveLength(4);
    expect(dataset.queries).toHaveLength(3);
    expect(dataset.skipped.map((entry) => entry.id)).toEqual(['conv-1:q4', 'conv-1:q5']);
  });

  it('parses LoCoMo dates and dialog ids, refusing what it cannot read', () => {
    expect(parseLocomoDate('12:09 am on 13 September, 2023')).toBe('2023-09-13T00:09:00.000Z');
    expect(parseLocomoDate('12:30 pm on 1 January, 2024')).toBe('2024-01-01T12:30:00.000Z');
    expect(() => parseLocomoDate('yesterday')).toThrow(/Unrecognized LoCoMo session date/);
    expect(() => parseLocomoDate('1:00 pm on 3 Smarch, 2023')).toThrow(/Unrecognized/);
    expect(normalizeDialogId('D30:05')).toBe('D30:5');
    expect(normalizeDialogId('D:11:26')).toBe('D11:26');
    expect(normalizeDialogId('D')).toBeUndefined();
    expect(() => convertLocomo({ not: 'an array' })).toThrow(/JSON array of conversations/);
  });
});

describe.skipIf(!existsSync(LOCOMO_SOURCE))(
  'LoCoMo converter on ../shared/data/locomo (skipped when the data is absent)',
  () => {
    it('reproduces the counts ../shared/data/README.md gives', () => {
      const { lines, report } = convertLocomo(JSON.parse(readFileSync(LOCOMO_SOURCE, 'utf8')));
      expect(report).toMatchObject({
        conversations: 10,
        sessions: 272,
        turns: 5_882,
        captionedTurns: 1_226,
        questions: 1_986,
        questionsWithoutEvidence: 4,
      });
      expect(report.droppedEvidence).toEqual(['conv-42:D10:19', 'conv-42:D', 'conv-47:D4:36']);
      const dataset = parseEvalDataset(lines.join('\n'));
      expect(dataset.queries.length + dataset.skipped.length).toBe(1_986);
      const tags = new Map<string, number>();
      for (const query of [...dataset.queries]) for (const tag of query.tags) tags.set(tag, (tags.get(tag) ?? 0) + 1);
      expect(Object.fromEntries(tags)).toEqual({
        'multi-hop': 282,
        temporal: 321,
        'open-domain': 92,
        'single-hop': 841,
        adversarial: 446,
      });
    });
  },
);
