import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddingsServer } from '../../../src/testing/index.js';
import { createWorkspace, embedderEnv, type Workspace } from '../../support/cli-harness.js';

const SCOPE = 'project:eval-fixture';
const memory = (id: string, content: string, createdAt: string): string =>
  JSON.stringify({ kind: 'memory', id, scope: SCOPE, content, created_at: createdAt });
const query = (id: string, text: string, relevant: string[], tags: string[]): string =>
  JSON.stringify({ kind: 'query', id, scope: SCOPE, query: text, relevant, tags });

// Three queries share words only with their answer; the fourth shares none, so recall@k is 3/4 for every k.
const DATASET = [
  memory('m1', 'The production database is PostgreSQL 15 on a private server.', '2025-01-10T09:00:00.000Z'),
  memory('m2', 'Integration tests use the real test server, no mocks.', '2025-02-10T09:00:00.000Z'),
  memory('m3', 'Pipeline bugs are tracked in Linear project INGEST.', '2025-03-10T09:00:00.000Z'),
  memory('m4', 'The user prefers tabs over spaces for indentation.', '2025-04-10T09:00:00.000Z'),
  memory('m5', 'Deploys run every Friday afternoon from the release branch.', '2025-05-10T09:00:00.000Z'),
  query('q1', 'Which database is in production?', ['m1'], ['single-hop']),
  query('q2', 'Where are pipeline bugs tracked?', ['m3'], ['single-hop']),
  query('q3', 'What indentation does the user like?', ['m4'], ['preference']),
  query('q4', 'How are payments handled?', ['m5'], ['miss']),
  query('q5', 'Nothing is relevant to this one', [], ['skipped']),
].join('\n');

let workspace: Workspace;
let datasetPath: string;

beforeAll(() => {
  workspace = createWorkspace();
  datasetPath = join(workspace.root, 'dataset.jsonl');
  writeFileSync(datasetPath, `${DATASET}\n`);
});

afterAll(() => workspace.cleanup());

describe('engram eval', () => {
  it('reports recall@k and nDCG@k overall and per tag, with the clock after the newest memory', async () => {
    const report = await workspace.json(['eval', '--dataset', datasetPath, '--k', '1,3']);
    expect(report.ks).toEqual([1, 3]);
    expect(report.dataset).toEqual({ memories: 5, queries: 4, skipped: 1, scopes: 1 });
    expect(report.skipped).toEqual([{ line: 10, id: 'q5', reason: 'no relevant memory ids' }]);
    expect(report.overall.recall).toEqual({ 1: 0.75, 3: 0.75 });
    expect(report.overall.ndcg).toEqual({ 1: 0.75, 3: 0.75 });
    expect(report.byTag['single-hop'].recall['1']).toBe(1);
    expect(report.byTag.preference.recall['1']).toBe(1);
    expect(report.byTag.miss).toMatchObject({ queries: 1, recall: { 1: 0, 3: 0 } });
    expect(report.byTag.skipped).toBeUndefined();
    expect(report.now).toBe('2025-05-10T09:00:01.000Z');
    // At default settings an agent gets the three answers that match, and a real <memory_context> block.
    expect(report.defaults.topK).toBe(11);
    expect(report.defaults.meanResults).toBeCloseTo(3 / 4, 12);
    expect(report.defaults.meanInjectedTokens).toBeGreaterThan(0);
    expect(report.defaults.tokenCounting).toBe('memory-context');
  });

  it('with --no-source loads the memories without their source turns, so conversation context cannot lend relevance', async () => {
    // The answer shares no word with the question; only its source (the turn after a matching one) can lift it.
    const scope = 'project:eval-source';
    const turn = (id: string, content: string, turnId: string, session: string): string =>
      JSON.stringify({
        kind: 'memory',
        id,
        scope,
        content,
        created_at: '2025-01-10T09:00:00.000Z',
        source: { sessionId: session, turnId },
      });
    const lines = [
      turn('question', 'Kim: Sam, what did you think of the lighthouse novel?', '4', 'evening'),
      turn('z-answer', 'Sam: Loved it. The ending made me cry.', '5', 'evening'),
      // Shorter than the answer, so "Sam" alone ranks them above it.
      ...['Coffee first.', 'Rainy again.', 'Off to work.', 'Lunch at noon.'].map((text, index) =>
        turn(`other-${index}`, `Sam: ${text}`, '1', `day-${index}`),
      ),
      JSON.stringify({
        kind: 'query',
        id: 'q1',
        scope,
        query: 'What did Sam think of the lighthouse novel?',
        relevant: ['z-answer'],
      }),
    ];
    const path = join(workspace.root, 'sourced.jsonl');
    writeFileSync(path, `${lines.join('\n')}\n`);
    const kept = await workspace.json(['eval', '--dataset', path, '--k', '2']);
    const ignored = await workspace.json(['eval', '--dataset', path, '--k', '2', '--no-source']);
    expect(kept.ignoredSource).toBe(false);
    expect(ignored.ignoredSource).toBe(true);
    expect(kept.overall.recall['2']).toBe(1);
    expect(ignored.overall.recall['2']).toBe(0);
    expect((await workspace.run(['eval', '--dataset', path, '--no-source'])).stdout).toContain(
      '(source fields ignored)',
    );
  });

  it('prints a table for people and never touches the user’s own store', async () => {
    const run = await workspace.run(['eval', '--dataset', datasetPath]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/TAG\s+QUERIES\s+R@5\s+R@10\s+R@25\s+nDCG@5/);
    expect(run.stdout).toMatch(/overall\s+4\s+0\.750\s+0\.750\s+0\.750/);
    expect(run.stdout).toContain('1 skipped (no relevant ids)');
    expect(existsSync(join(workspace.home, 'engram.db'))).toBe(false);
    expect(readdirSync(workspace.home)).toEqual([]);
  });

  it('scores a dataset of real text: bad lines and empty turns listed and left out, control characters replaced', async () => {
    const bad = join(workspace.root, 'bad.jsonl');
    writeFileSync(
      bad,
      [
        DATASET,
        `{"kind":"query","id":"q9","scope":"${SCOPE}","query":"x","relevant":["nope"]}`,
        'not json',
        memory('m6', '', '2025-05-11T09:00:00.000Z'),
        memory('m7', 'The on\u0002call rota is kept in Pager\u0007Duty.', '2025-05-12T09:00:00.000Z'),
        query('q10', 'Where is the on\u0002call rota kept?', ['m7', 'm6'], ['pdf']),
      ].join('\n'),
    );
    const run = await workspace.run(['eval', '--dataset', bad]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/3 invalid line\(s\) left out/);
    expect(run.stdout).toMatch(/line 11: Query "q9" names unknown memory id "nope"/);
    expect(run.stdout).toMatch(/line 12: Not valid JSON/);
    expect(run.stdout).toMatch(/line 13: .*content/);
    expect(run.stdout).toMatch(/Line 14: replaced 2 control characters/);
    const report = await workspace.json(['eval', '--dataset', bad, '--k', '1']);
    expect(report.dataset).toMatchObject({ memories: 6, queries: 5 });
    expect(report.invalidLines.map((entry: { line: number }) => entry.line)).toEqual([11, 12, 13]);
    expect(report.byTag.pdf.recall['1']).toBe(1);

    const strict = await workspace.run(['eval', '--dataset', bad, '--strict']);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(/3 invalid line\(s\) \(--strict\)/);
    expect(strict.stdout).toBe('');
    const nothing = join(workspace.root, 'nothing.jsonl');
    writeFileSync(nothing, 'not json\n[1]\n');
    expect((await workspace.run(['eval', '--dataset', nothing])).code).toBe(2);
  });

  it('refuses missing, unreadable and malformed arguments with clear errors', async () => {
    expect((await workspace.run(['eval'])).stderr).toMatch(/Missing --dataset/);
    const missing = await workspace.run(['eval', '--dataset', join(workspace.root, 'nope.jsonl')]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/Cannot read the dataset/);
    for (const k of ['0', '5,,10', 'ten', '5,2000', '2.5']) {
      const run = await workspace.run(['eval', '--dataset', datasetPath, '--k', k]);
      expect(run.code, k).toBe(2);
      expect(run.stderr, k).toMatch(/Invalid (--)?k/);
    }
    const negative = await workspace.run(['eval', '--dataset', datasetPath, '--k', '-1']);
    expect(negative.code).toBe(2);
    expect(negative.stderr).toMatch(/--k/);
    const directory = await workspace.run(['eval', '--dataset', workspace.root]);
    expect(directory.stderr).toMatch(/is not a file/);
    const binary = join(workspace.root, 'binary.jsonl');
    writeFileSync(binary, Buffer.from([0xff, 0xfe, 0x00, 0x81]));
    expect((await workspace.run(['eval', '--dataset', binary])).stderr).toMatch(/not UTF-8/);
  });

  it('--format longmemeval reads a folder of questions as published, a bad file reported, each question asked at its date', async () => {
    const folder = join(workspace.root, 'lme');
    mkdirSync(folder);
    const session = (content: string, evidence: boolean) => [
      { role: 'user', content, ...(evidence && { has_answer: true }) },
      { role: 'assistant', content: 'Noted! Here is a very long answer about '.repeat(20) },
    ];
    const question = (id: string, text: string, turns: Array<[string, boolean]>) => ({
      question_id: id,
      question_type: 'single-session-user',
      question: text,
      question_date: '2023/05/30 (Tue) 21:43',
      haystack_dates: turns.map((_, index) => `2023/05/${10 + index} (Wed) 10:00`),
      haystack_sessions: turns.map(([content, evidence]) => session(content, evidence)),
    });
    writeFileSync(
      join(folder, '1.json'),
      JSON.stringify(
        question('a', 'Which bakery do I like?', [
          ['My favourite bakery is Crumb & Co.\u0001', true],
          ['I walked the dog.', false],
        ]),
      ),
    );
    writeFileSync(
      join(folder, '2.json'),
      JSON.stringify(question('b', 'Where do I swim?', [['I swim at the lido.', true]])),
    );
    writeFileSync(join(folder, '3.json'), '{ not json');
    const report = await workspace.json(['eval', '--format', 'longmemeval', '--dataset', folder, '--k', '1']);
    expect(report.dataset).toMatchObject({ memories: 3, queries: 2, scopes: 2 });
    expect(report.overall.recall).toEqual({ 1: 1 });
    expect(report.benchmark.counts).toMatchObject({ unreadFiles: 1, controls: 1, scored: 2 });
    const session2 = await workspace.json([
      'eval',
      '--format',
      'longmemeval',
      '--level',
      'session',
      '--dataset',
      folder,
    ]);
    expect(session2.level).toBe('session');
    const text = (await workspace.run(['eval', '--format', 'longmemeval', '--dataset', folder])).stdout;
    expect(text).toContain('Read as LongMemEval');
    expect(text).toContain('1 file(s) of the folder left out: 3.json');
    const wrong = await workspace.run(['eval', '--format', 'locomo', '--dataset', join(folder, '1.json')]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/JSON array of conversations/);
    expect((await workspace.run(['eval', '--format', 'csv', '--dataset', folder])).stderr).toMatch(/Unknown --format/);
    expect((await workspace.run(['eval', '--level', 'turn', '--dataset', datasetPath])).stderr).toMatch(
      /--level applies to --format longmemeval only/,
    );
  });
});

describe('engram eval with an embedder configured', () => {
  // The answers share no word with their questions: only the embedder, which folds synonyms, links them.
  const scope = 'project:eval-embedder';
  const line = (id: string, content: string): string =>
    JSON.stringify({ kind: 'memory', id, scope, content, created_at: '2025-06-01T09:00:00.000Z' });
  const ask = (id: string, text: string, relevant: string): string =>
    JSON.stringify({ kind: 'query', id, scope, query: text, relevant: [relevant] });
  const DATASET = [
    line('e1', 'The user drives an automobile to the office.'),
    line('e2', 'Integration tests use the real database, no mocks.'),
    line('e3', 'Deploys go through ArgoCD with a manual approval step.'),
    line('e4', 'Lunch is usually a salad from the place downstairs.'),
    ask('q1', 'Which car do I have?', 'e1'),
    ask('q2', 'What do I eat at midday?', 'e4'),
  ].join('\n');

  it('measures the setup as configured: memories embedded first, questions fused with vectors; --no-embedder measures full text alone', async () => {
    const server = await startEmbeddingsServer({ dimensions: 24, synonyms: { automobile: 'car', lunch: 'midday' } });
    try {
      const path = join(workspace.root, 'embedder.jsonl');
      writeFileSync(path, `${DATASET}\n`);
      const env = embedderEnv(server.baseUrl);
      const fused = await workspace.json(['eval', '--dataset', path, '--k', '1'], 0, { env });
      expect(fused.overall.recall).toEqual({ 1: 1 });
      expect(fused.embedding).toEqual({ model: 'hashed-words', dimensions: 24, embedded: 4, failedQuestions: 0 });
      const inputs = server.requests.flatMap((request) => (request.body as { input: string[] }).input);
      expect(inputs).toEqual(expect.arrayContaining(['Which car do I have?', 'What do I eat at midday?']));
      expect(inputs.some((input) => input.includes('automobile'))).toBe(true);

      const text = (await workspace.run(['eval', '--dataset', path, '--k', '1'], { env })).stdout;
      expect(text).toContain(
        'Recall: full text fused with the embedder hashed-words (24 dimensions), 4 of 4 memories embedded.',
      );

      const sent = server.requests.length;
      const alone = await workspace.json(['eval', '--dataset', path, '--k', '1', '--no-embedder'], 0, { env });
      expect(alone.overall.recall).toEqual({ 1: 0 });
      expect(alone.embedding).toBeNull();
      expect(server.requests).toHaveLength(sent);
    } finally {
      await server.close();
    }
  });

  it('counts the questions whose embedding failed, recalled on full text alone, and says so', async () => {
    // The memories embed; every question's request is refused.
    const server = await startEmbeddingsServer({
      dimensions: 24,
      synonyms: { automobile: 'car', lunch: 'midday' },
      respond: (request) =>
        (request.body as { input: string[] }).input.some((input) => input.endsWith('?'))
          ? { status: 400, body: { error: { message: 'refused', type: 'invalid_request_error' } } }
          : undefined,
    });
    try {
      const path = join(workspace.root, 'embedder-failing.jsonl');
      writeFileSync(path, `${DATASET}\n`);
      const env = embedderEnv(server.baseUrl);
      const report = await workspace.json(['eval', '--dataset', path, '--k', '1'], 0, { env });
      expect(report.embedding).toMatchObject({ embedded: 4, failedQuestions: 2 });
      expect(report.overall.recall).toEqual({ 1: 0 });
      const text = (await workspace.run(['eval', '--dataset', path, '--k', '1'], { env })).stdout;
      expect(text).toContain(
        '2 question(s) recalled on full text alone: embedding them failed or gave vectors of another length',
      );
    } finally {
      await server.close();
    }
  });

  it('an embedder that cannot embed the memories stops the evaluation with a clear error that names --no-embedder', async () => {
    const server = await startEmbeddingsServer({ respond: () => ({ status: 500, body: { error: 'boom' } }) });
    try {
      const path = join(workspace.root, 'embedder-down.jsonl');
      writeFileSync(path, `${DATASET}\n`);
      const run = await workspace.run(['eval', '--dataset', path, '--k', '1'], { env: embedderEnv(server.baseUrl) });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain("Embedding the dataset's memories failed:");
      expect(run.stderr).toContain('(--no-embedder measures full text alone)');
      expect(run.stdout).toBe('');
    } finally {
      await server.close();
    }
  });

  it('without an embedder configured says it measured full text alone', async () => {
    const text = (await workspace.run(['eval', '--dataset', datasetPath, '--k', '1'])).stdout;
    expect(text).toContain('Recall: full text alone');
    expect((await workspace.json(['eval', '--dataset', datasetPath, '--k', '1'])).embedding).toBeNull();
  });
});
