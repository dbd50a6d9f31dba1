import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { Memory, NewMemory } from '../../src/memory/memory.js';
import { Engram } from '../../src/engram.js';
import { dateMatches, questionDates, type QuestionDate } from '../../src/recall/question-dates.js';
import { asksWhen, mentionsTime } from '../../src/recall/time-expressions.js';
import { applyTimeSignals } from '../../src/recall/time-aware-ranking.js';
import { memoryRecord } from '../support/memory-record.js';
import { useTemporaryStore } from '../support/temporary-store.js';
import { recallInStore, withRecallSettings } from '../support/recall-support.js';

const NOW = '2024-01-10T15:00:00.000Z';
const DAY = 86_400_000;

/** Each date as [first day, day after the last] (UTC, yyyy-mm-dd) or ['month', index]. */
function days(question: string, now = NOW): Array<[string, string] | ['month', number]> {
  const iso = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
  return questionDates(question, now).map((date: QuestionDate) =>
    date.kind === 'range' ? [iso(date.start), iso(date.end)] : ['month', date.month],
  );
}

describe('questionDates', () => {
  it('reads days, months and years in the ways people write them', () => {
    expect(days('What did we decide on 8 May 2023?')).toEqual([['2023-05-08', '2023-05-09']]);
    expect(days('What did Gina find on 1 February, 2023?')).toEqual([['2023-02-01', '2023-02-02']]);
    expect(days('What painting did she show on October 13, 2023?')).toEqual([['2023-10-13', '2023-10-14']]);
    expect(days('Any notes from May 8th, 2023 or the 3rd of June 2023?')).toEqual([
      ['2023-05-08', '2023-05-09'],
      ['2023-06-03', '2023-06-04'],
    ]);
    expect(days('the release of 2023-11-02')).toEqual([['2023-11-02', '2023-11-03']]);
    expect(days('What did Mel paint in July 2023?')).toEqual([['2023-07-01', '2023-08-01']]);
    expect(days('Which bugs were open in Dec. 2022?')).toEqual([['2022-12-01', '2023-01-01']]);
    expect(days('How often did she go to the beach in 2023?')).toEqual([['2023-01-01', '2024-01-01']]);
    // A month or a day without a year is that month of any year.
    expect(days('When did Melanie go camping in June?')).toEqual([['month', 5]]);
    expect(days('What happened on 13 October?')).toEqual([['month', 9]]);
  });

  it('reads nothing from words that only look like dates', () => {
    expect(days('I may go to the march')).toEqual([]);
    expect(days('What is the date of the deploy?')).toEqual([]);
    expect(days('Ran 1200 meters in the 1990s')).toEqual([]);
    // 31 June is no day: the month is still named.
    expect(days('on 31 June 2023')).toEqual([['2023-06-01', '2023-07-01']]);
  });

  it('reads yesterday, last week, this month relative to now, unless the question names a calendar date', () => {
    expect(days('What did we decide yesterday?')).toEqual([['2024-01-09', '2024-01-10']]);
    expect(days('What did I do today?')).toEqual([['2024-01-10', '2024-01-11']]);
    expect(days('what changed last month')).toEqual([['2023-12-01', '2024-01-01']]);
    expect(days('anything new this year')).toEqual([['2024-01-01', '2025-01-01']]);
    expect(days('What did Maria do last weekend before April 10, 2023?')).toEqual([['2023-04-10', '2023-04-11']]);
  });

  it('reads spans counted back from now: "two weeks ago", "the past two months", "last Saturday"', () => {
    // NOW is Wednesday 10 January 2024.
    expect(days('What gardening did I do two weeks ago?')).toEqual([['2023-12-23', '2024-01-01']]);
    expect(days('the milestone I mentioned 4 weeks ago')).toEqual([['2023-12-09', '2023-12-18']]);
    expect(days('A few days ago I said I went to the park')).toEqual([['2024-01-05', '2024-01-10']]);
    expect(days('What did I buy a month ago?')).toEqual([['2023-11-26', '2023-12-27']]);
    expect(days('How much feed did I buy in the past two months?')).toEqual([['2023-11-11', '2024-01-11']]);
    expect(days('over the last 3 weeks')).toEqual([['2023-12-20', '2024-01-11']]);
    expect(days('Who did I go with to the concert last Saturday?')).toEqual([['2024-01-06', '2024-01-07']]);
    expect(days('What did I cook on Wednesday?')).toEqual([['2024-01-03', '2024-01-04']]);
    expect(days('this past Monday')).toEqual([['2024-01-08', '2024-01-09']]);
    // A shift written before a calendar date moves it: the puppy came about two weeks before 11 August.
    expect(days('the puppy he got two weeks before August 11, 2023')).toEqual([['2023-07-26', '2023-07-31']]);
    expect(days('what she did 3 days after 8 May 2023')).toEqual([['2023-05-11', '2023-05-12']]);
    // Years ago and counts without a unit are no span.
    expect(days('Where did she move from 4 years ago?')).toEqual([]);
    expect(days('I have two dogs and three weeks of leave')).toEqual([]);
  });

  it('matches a memory written within the date or in the days after it', () => {
    const [july] = questionDates('in July 2023', NOW);
    const [june] = questionDates('in June', NOW);
    expect(dateMatches(july!, Date.parse('2023-07-31T23:00:00Z'), 0)).toBe(true);
    expect(dateMatches(july!, Date.parse('2023-08-03T10:00:00Z'), 0)).toBe(false);
    expect(dateMatches(july!, Date.parse('2023-08-03T10:00:00Z'), 7 * DAY)).toBe(true);
    expect(dateMatches(july!, Date.parse('2023-06-30T10:00:00Z'), 7 * DAY)).toBe(false);
    expect(dateMatches(june!, Date.parse('2019-06-15T00:00:00Z'), 0)).toBe(true);
    expect(dateMatches(june!, Date.parse('2021-07-05T00:00:00Z'), 7 * DAY)).toBe(true);
    expect(dateMatches(june!, Date.parse('2021-05-31T00:00:00Z'), 7 * DAY)).toBe(false);
  });
});

describe('asksWhen and mentionsTime', () => {
  it('tells questions about time from others', () => {
    for (const question of [
      'When did Caroline go to the support group?',
      'So when is the deploy?',
      'What year did we move?',
      'How long has Nate had turtles?',
      'In what year was it built?',
    ]) {
      expect(asksWhen(question), question).toBe(true);
    }
    for (const question of [
      'What did Caroline do when she was young?',
      'Where is the deploy script?',
      'How many pets does Nate have?',
    ]) {
      expect(asksWhen(question), question).toBe(false);
    }
  });

  it('tells memories that say when from others', () => {
    for (const text of [
      'I went to a support group yesterday.',
      'We moved in 2019.',
      'Deploys run on Tuesdays.',
      'I have had them for 3 years now.',
      'Back in March we chose Postgres.',
      'two weeks ago',
      'at 9:30 am',
    ]) {
      expect(mentionsTime(text), text).toBe(true);
    }
    for (const text of ['I love turtles.', 'The database is PostgreSQL 15.', 'We may try it.'])
      expect(mentionsTime(text), text).toBe(false);
  });
});

function memory(id: string, content: string, createdAt: string): Memory {
  return memoryRecord({ id, scope: 'project:time', content, createdAt });
}

describe('applyTimeSignals', () => {
  const weights = { dateWeight: 2, dateAfterDays: 7, timeMentionWeight: 1 };

  it('multiplies the relevance of memories written within a named date and re-sorts', () => {
    const hits = [
      { memory: memory('march', 'We picked the queue library.', '2023-03-20T10:00:00Z'), relevance: 3 },
      { memory: memory('july', 'We picked the queue library again.', '2023-07-04T10:00:00Z'), relevance: 2 },
    ];
    const result = applyTimeSignals(
      hits,
      { dates: questionDates('What did we pick in July 2023?', NOW), asksWhen: false },
      weights,
    );
    expect(result.map((hit) => hit.memory.id)).toEqual(['july', 'march']);
    expect(result[0]).toMatchObject({ relevance: 6, time: { date: 3 } });
    expect(result[1]).toEqual(hits[0]);
    // Off, or a question without a date: nothing moves.
    expect(
      applyTimeSignals(
        hits,
        { dates: questionDates('in July 2023', NOW), asksWhen: false },
        { ...weights, dateWeight: 0 },
      ),
    ).toEqual(hits);
    expect(applyTimeSignals(hits, { dates: [], asksWhen: false }, weights)).toEqual(hits);
  });

  it('favours memories that say when for a "when" question', () => {
    const hits = [
      { memory: memory('plain', 'Caroline went to the support group.', NOW), relevance: 5 },
      { memory: memory('dated', 'Caroline: I went to the support group yesterday.', NOW), relevance: 4 },
    ];
    const result = applyTimeSignals(hits, { dates: [], asksWhen: true }, weights);
    expect(result.map((hit) => hit.memory.id)).toEqual(['dated', 'plain']);
    expect(result[0]).toMatchObject({ relevance: 8, time: { timeMention: 2 } });
  });

  it('refuses weights out of range', () => {
    expect(() => applyTimeSignals([], { dates: [], asksWhen: false }, { ...weights, dateWeight: -1 })).toThrow(
      /dateWeight/,
    );
    expect(() =>
      applyTimeSignals([], { dates: [], asksWhen: false }, { ...weights, timeMentionWeight: Number.NaN }),
    ).toThrow(/timeMentionWeight/);
  });
});

describe('time-aware recall (SQLite)', () => {
  const sqlite = useTemporaryStore(Date.parse(NOW));

  const write = (content: string, createdAt: string): NewMemory => ({
    scope: 'project:time',
    content,
    createdAt,
    lastAccessedAt: NOW,
  });
  const recallContents = async (settings: Settings, query: string): Promise<string[]> => {
    const memories = await recallInStore(sqlite.store, query, { scope: 'project:time', at: NOW, settings, topK: 3 });
    return memories.map((entry) => entry.memory.content);
  };

  it('puts the memory written in the month the question names first, and explains it', async () => {
    await sqlite.store.createMany(
      [
        write('Release review: the team chose the blue logo for the landing page.', '2023-09-12T10:00:00Z'),
        write('Release review: we went with the green logo after all.', '2023-07-18T10:00:00Z'),
        write('Unrelated: the office plants need water.', '2023-07-18T10:00:00Z'),
      ],
      { actor: 'test' },
    );
    const query = 'Which logo did the release review choose in July 2023?';
    expect((await recallContents(withRecallSettings({ dateWeight: 0 }), query))[0]).toMatch(/blue/);
    expect((await recallContents(DEFAULT_SETTINGS, query))[0]).toMatch(/green/);
    const engram = new Engram({ store: sqlite.store, readScopes: ['project:time'], now: () => new Date(NOW) });
    const [first] = (await engram.recall(query, { recordAccess: false })).memories;
    expect(first!.parts.signals).toEqual({ date: 1 + DEFAULT_SETTINGS.recall.dateWeight });
  });

  it('puts the memory that says when first for a "when" question', async () => {
    await sqlite.store.createMany(
      [
        write('Caroline loved the support group and the people in the support group.', NOW),
        write('Caroline went to the support group last Friday.', NOW),
      ],
      { actor: 'test' },
    );
    const query = 'When did Caroline go to the support group?';
    expect((await recallContents(withRecallSettings({ timeMentionWeight: 0 }), query))[0]).toMatch(/loved/);
    expect((await recallContents(DEFAULT_SETTINGS, query))[0]).toMatch(/last Friday/);
  });
});
