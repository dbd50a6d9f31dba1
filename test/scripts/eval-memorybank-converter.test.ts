import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  convertMemoryBank,
  MEMORYBANK_EVIDENCE,
  MEMORYBANK_SOURCE,
  readMemoryBank,
} from '../../scripts/memorybank-to-jsonl.js';
import { parseEvalDataset } from '../../src/eval/eval-dataset.js';

// MemoryBank's shape, with its quirks: user keys padded with spaces, quoted questions.
const HISTORIES = {
  ' Ada ': {
    name: 'Ada',
    history: {
      '2023-04-27': [
        { query: 'I went to the aquarium today.', response: 'Which animals did you see?' },
        { query: 'Jellyfish and a sleepy octopus!', response: 'Octopuses are clever.' },
      ],
      '2023-04-28': [{ query: 'Can you recommend a podcast?', response: 'Try "Radiolab".' }],
    },
  },
};
const QUESTIONS = [
  '{"Ada": ["What animals did I see at the aquarium?", "\\"On April 28th, which podcast did you recommend?\\"", "I don\'t like fish, right?"]}',
  '',
];
const EVIDENCE = { Ada: [['2023-04-27#1', '2023-04-27#2'], ['2023-04-28#1'], []] };

describe('MemoryBank converter', () => {
  const { lines, report } = convertMemoryBank(HISTORIES, QUESTIONS, EVIDENCE);
  const records = lines.map((line) => JSON.parse(line));

  it('makes each exchange a memory of its user, with its day, order and source turn', () => {
    const memories = records.filter((record) => record.kind === 'memory');
    expect(memories.map((record) => record.id)).toEqual(['ada:2023-04-27:1', 'ada:2023-04-27:2', 'ada:2023-04-28:1']);
    expect(memories[1]).toEqual({
      kind: 'memory',
      id: 'ada:2023-04-27:2',
      scope: 'user:memorybank-ada',
      description: 'Ada and the AI companion, 27 April 2023',
      content: 'Ada: Jellyfish and a sleepy octopus!\nAI companion: Octopuses are clever.',
      created_at: '2023-04-27T12:01:00.000Z',
      source: { sessionId: 'ada:2023-04-27', turnId: '2' },
    });
    expect(report).toEqual({ users: 1, days: 2, exchanges: 3, questions: 3, questionsWithoutEvidence: 1 });
  });

  it('turns each probing question into a tagged query naming its labelled exchanges', () => {
    const queries = records.filter((record) => record.kind === 'query');
    expect(queries.map((record) => [record.id, record.query, record.relevant, record.tags])).toEqual([
      ['ada:q1', 'What animals did I see at the aquarium?', ['ada:2023-04-27:1', 'ada:2023-04-27:2'], ['recall']],
      ['ada:q2', 'On April 28th, which podcast did you recommend?', ['ada:2023-04-28:1'], ['dated']],
      ['ada:q3', "I don't like fish, right?", [], ['verification']],
    ]);
    const dataset = parseEvalDataset(lines.join('\n'));
    expect(dataset.queries).toHaveLength(2);
    expect(dataset.skipped.map((entry) => entry.id)).toEqual(['ada:q3']);
  });

  it('refuses labels that name no exchange or do not match the questions', () => {
    expect(() => convertMemoryBank(HISTORIES, QUESTIONS, { Ada: [['2023-04-27#9'], [], []] })).toThrow(
      /names no exchange/,
    );
    expect(() => convertMemoryBank(HISTORIES, QUESTIONS, { Ada: [['2023-04-27#1']] })).toThrow(
      /3 probing questions but 1 evidence lists/,
    );
    expect(() => convertMemoryBank([], QUESTIONS, EVIDENCE)).toThrow(/JSON object keyed by user/);
  });
});

describe.skipIf(!existsSync(resolve(MEMORYBANK_SOURCE, 'memory_bank_en.json')))(
  'MemoryBank converter on ../shared/data/memorybank (skipped when absent)',
  () => {
    it('labels every probing question against an exchange that exists', () => {
      const converted = readMemoryBank()!;
      expect(converted.report).toEqual({
        users: 15,
        days: 150,
        exchanges: 566,
        questions: 100,
        questionsWithoutEvidence: 1,
      });
      const dataset = parseEvalDataset(converted.lines.join('\n'));
      expect(dataset.queries).toHaveLength(99);
      const evidence = JSON.parse(readFileSync(MEMORYBANK_EVIDENCE, 'utf8')) as Record<string, string[][]>;
      expect(Object.values(evidence).flat()).toHaveLength(100);
    });
  },
);
