import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/contracts/embedder.js';
import { Engram } from '../../src/engram.js';
import { storeSnapshot } from '../support/store-snapshot.js';
import { engramOver, useTemporaryStore } from '../support/temporary-store.js';
import { lexicalProfile } from '../../src/remember/near-duplicate.js';
import { porterStem } from '../../src/recall/porter-stemmer.js';
import { candidateTerms } from '../../src/remember/save-memory.js';

const PROJECT = 'project:github.com/acme/app';
const OTHER = 'project:github.com/acme/other';
const opened = useTemporaryStore(Date.parse('2025-06-01T12:00:00.000Z'));

function engramWith(options: { embedder?: Embedder } = {}): Engram {
  return engramOver(opened, {
    defaultScope: PROJECT,
    readScopes: [PROJECT, 'global'],
    onWarning: () => undefined,
    ...options,
  });
}

const snapshot = (): Promise<string> => storeSnapshot(opened.store, [PROJECT, OTHER, 'global']);

function later(minutes: number): void {
  opened.clock.now += minutes * 60_000;
}

describe('dedupe on write', () => {
  it('updates a near-duplicate in the same scope instead of adding one, and history shows the update', async () => {
    const engram = engramWith();
    const first = await engram.save({
      content: 'Always run the linter before committing.',
      type: 'feedback',
      importance: 0.7,
    });
    expect(first.action).toBe('created');
    later(5);
    const second = await engram.save({ content: 'Always run the linter before committing changes.', importance: 0.4 });
    expect(second).toMatchObject({ action: 'merged', mergedInto: first.memory.id, method: 'lexical' });
    expect(second.similarity).toBeCloseTo(0.833, 3);
    expect(second.memory.id).toBe(first.memory.id);
    expect(second.memory.content).toBe('Always run the linter before committing changes.');
    // The higher importance stays; the type was not named, so it stays too.
    expect(second.memory).toMatchObject({ importance: 0.7, type: 'feedback', hitCount: 1 });
    expect(await engram.count()).toBe(1);

    const history = await engram.history(first.memory.id);
    expect(history.map((entry) => [entry.action, entry.actor])).toEqual([
      ['create', 'library'],
      ['update', 'library (dedupe)'],
    ]);
    expect(history[1]!.id).toBe(second.changeId);
    expect(history[1]!.before!.content).toBe('Always run the linter before committing.');
    expect(history[1]!.after!.content).toBe('Always run the linter before committing changes.');

    // The update is an ordinary change: undo brings the first wording back.
    await engram.undo(second.changeId!);
    expect((await engram.get(first.memory.id)).content).toBe('Always run the linter before committing.');
  });

  it('answers an exact repeat with the existing memory, no new history, one more hit', async () => {
    const engram = engramWith();
    const first = await engram.remember({ content: 'The user prefers dark mode in every editor.' });
    const again = await engram.save({ content: 'The user prefers dark mode in every editor.' });
    expect(again).toMatchObject({ action: 'merged', mergedInto: first.id, changeId: null, similarity: 1 });
    expect(await engram.history(first.id)).toHaveLength(1);
    expect((await engram.get(first.id)).hitCount).toBe(1);
    // remember() keeps its signature and answers with the memory the statement went to.
    expect((await engram.remember({ content: 'The user prefers dark mode in every editor!' })).id).toBe(first.id);
  });

  it('keeps facts that merely share a topic, contradict, or change a value as separate memories', async () => {
    const engram = engramWith();
    const pairs: Array<[string, string]> = [
      [
        'The user prefers tabs for indentation in TypeScript, JavaScript, Go and Rust files.',
        'The user prefers spaces for indentation in TypeScript, JavaScript, Go and Rust files.',
      ],
      [
        'The project database is PostgreSQL 15 on a private server.',
        'The project database is PostgreSQL 16 on a private server.',
      ],
      [
        'Integration tests use the real database, with fixtures per test.',
        'Integration tests do not use the real database, with fixtures per test.',
      ],
      [
        'Run database migrations before deploying the API server to production.',
        'Run database migrations after deploying the API server to production.',
      ],
    ];
    for (const [a, b] of pairs) {
      expect((await engram.save({ content: a })).action).toBe('created');
      expect((await engram.save({ content: b })).action).toBe('created');
    }
    expect(await engram.count()).toBe(pairs.length * 2);
  });

  it('never merges across scopes, nor into archived or invalidated memories', async () => {
    const engram = engramWith();
    const content = 'Pipeline bugs are tracked in Linear project INGEST.';
    const own = await engram.save({ content });
    const other = await engram.save({ content, scope: OTHER });
    const global = await engram.save({ content, scope: 'global' });
    expect([own.action, other.action, global.action]).toEqual(['created', 'created', 'created']);
    expect(new Set([own.memory.id, other.memory.id, global.memory.id]).size).toBe(3);

    await engram.forget(own.memory.id);
    const afterArchive = await engram.save({ content });
    expect(afterArchive.action).toBe('created');
    await engram.invalidate(afterArchive.memory.id);
    expect((await engram.save({ content })).action).toBe('created');
  });

  it('adds a new memory with dedupe: false, and never dedupes a write that names its id', async () => {
    const engram = engramWith();
    const content = 'Staging runs on Kubernetes in eu-west-1.';
    const first = await engram.save({ content });
    const forced = await engram.save({ content }, { dedupe: false });
    expect(forced.action).toBe('created');
    expect(forced.memory.id).not.toBe(first.memory.id);
    const withId = await engram.save({ content, id: 'mem-explicit' });
    expect(withId).toMatchObject({ action: 'created', memory: { id: 'mem-explicit' } });
    expect(await engram.count()).toBe(3);
  });

  it('takes a named type, name and description and re-derives a derived description', async () => {
    const engram = engramWith();
    const first = await engram.save({ content: 'The user writes tests before writing code.', type: 'user' });
    const merged = await engram.save({
      content: 'The user writes the tests before writing the code.',
      type: 'feedback',
      name: 'tests-first',
      importance: 0.9,
    });
    expect(merged.memory).toMatchObject({
      id: first.memory.id,
      type: 'feedback',
      name: 'tests-first',
      importance: 0.9,
      description: 'The user writes the tests before writing the code.',
    });
  });

  it('searches candidates by a few long words, enough that every near-duplicate holds one of them', async () => {
    const text = 'The user prefers dark mode in every editor and terminal they use at work.';
    const terms = candidateTerms(text, lexicalProfile(text), 0.8);
    // 9 content words: a duplicate shares at least 8 of them, so any 2 suffice.
    expect(terms).toEqual(['terminal', 'prefers']);
    for (const restatement of [
      'The user prefers dark mode in every editor and terminal they use.',
      'User prefers dark mode in every editor and terminal they use at work daily.',
    ]) {
      const words = lexicalProfile(restatement).words;
      expect(
        terms.some((term) => words.has(porterStem(term))),
        restatement,
      ).toBe(true);
    }

    // Among many memories sharing most words, the one near-duplicate is still found.
    const engram = engramWith();
    for (let index = 0; index < 60; index += 1)
      await engram.save(
        { content: `The user prefers dark mode in every editor and terminal, variant ${index}.` },
        { dedupe: false },
      );
    const original = await engram.save({ content: text });
    expect(original.action).toBe('created');
    const again = await engram.save({
      content: 'The user prefers dark mode in every editor and terminal they use at work!',
    });
    expect(again.mergedInto).toBe(original.memory.id);
  });

  it('refuses hostile input with a clear error and changes nothing', async () => {
    const engram = engramWith();
    await engram.save({ content: 'The user prefers tabs over spaces.' });
    const before = await snapshot();
    const attempts: Array<[unknown, unknown, string]> = [
      [{ content: 'The user prefers tabs over spaces.' }, { dedupe: 'yes' }, 'INVALID_INPUT'],
      [{ content: 'The user prefers tabs over spaces.\u0000' }, {}, 'INVALID_INPUT'],
      [{ content: 'x'.repeat(70_000) }, {}, 'PAYLOAD_TOO_LARGE'],
      [{ content: 'The user prefers tabs over spaces.', scope: 'project:' }, {}, 'INVALID_SCOPE'],
      [{ content: 'The user prefers tabs over spaces.', importance: 7 }, {}, 'INVALID_INPUT'],
      [{ content: 42 }, {}, 'INVALID_INPUT'],
      [null, {}, 'INVALID_INPUT'],
      [['array'], {}, 'INVALID_INPUT'],
    ];
    for (const [input, options, code] of attempts) {
      await expect(
        engram.save(input as never, options as never),
        JSON.stringify(input).slice(0, 60),
      ).rejects.toMatchObject({ code });
    }
    expect(await snapshot()).toBe(before);
    // Query syntax, emoji and a near-limit body are just text: compared and stored, never parsed.
    expect((await engram.save({ content: 'NEAR(tabs spaces) AND "unbalanced' })).action).toBe('created');
    expect((await engram.save({ content: '🙂 emoji 🙂' })).action).toBe('created');
    const long = await engram.save({ content: 'tabs '.repeat(12_000) });
    expect(long.action).toBe('created');
    expect((await engram.save({ content: `${'tabs '.repeat(12_000)}!` })).mergedInto).toBe(long.memory.id);
  });
});

/** Vectors chosen by hand: cosine to the first is 0.9 for a paraphrase and 0.99 for its negation. */
class TableEmbedder implements Embedder {
  readonly model = 'table-embedder';
  readonly dimensions = 4;
  calls = 0;
  failing = false;
  readonly #table: Array<[string, number[]]> = [
    ['talk to a real database instance', [0.9, Math.sqrt(1 - 0.81), 0, 0]],
    ['do not use the real database', [0.99, Math.sqrt(1 - 0.9801), 0, 0]],
    ['use the real database', [1, 0, 0, 0]],
    ['tracked in Linear', [0, 0, 1, 0]],
    ['talk to a fake database', [0, 0.6, 0.8, 0]],
  ];

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls += 1;
    if (this.failing) throw new Error('embeddings service down');
    return texts.map((text) => {
      const found = this.#table.find(([key]) => text.includes(key));
      if (!found) throw new Error(`no vector for ${text}`);
      return Float32Array.from(found[1]);
    });
  }
}

describe('dedupe on write with embeddings', () => {
  it('merges a paraphrase at cosine ≥ 0.85 and stores the vector of what it wrote', async () => {
    const embedder = new TableEmbedder();
    const engram = engramWith({ embedder });
    const first = await engram.save({ content: 'Integration tests use the real database.' });
    expect(first).toMatchObject({ action: 'created', warnings: [] });
    expect(await opened.store.vectors.counts()).toEqual({ stored: 1, missing: 0 });

    const paraphrase = await engram.save({ content: 'Integration tests talk to a real database instance.' });
    expect(paraphrase).toMatchObject({ action: 'merged', mergedInto: first.memory.id, method: 'cosine' });
    expect(paraphrase.similarity).toBeCloseTo(0.9, 3);
    // The merged text has a vector again (the store drops the vector of changed text).
    expect(await opened.store.vectors.counts()).toEqual({ stored: 1, missing: 0 });

    // Far from both (cosine 0.26): a new memory.
    expect((await engram.save({ content: 'Integration tests talk to a fake database.' })).action).toBe('created');
  });

  it('does not merge a negation even at cosine 0.99', async () => {
    const engram = engramWith({ embedder: new TableEmbedder() });
    await engram.save({ content: 'Integration tests use the real database.' });
    expect((await engram.save({ content: 'Integration tests do not use the real database.' })).action).toBe('created');
    expect(await engram.count()).toBe(2);
  });

  it('falls back to words when the embedder fails, and says so', async () => {
    const embedder = new TableEmbedder();
    const engram = engramWith({ embedder });
    const first = await engram.save({ content: 'Bugs are tracked in Linear, project INGEST.' });
    embedder.failing = true;
    const again = await engram.save({ content: 'Bugs are tracked in Linear, project INGEST!' });
    expect(again).toMatchObject({
      action: 'merged',
      mergedInto: first.memory.id,
      method: 'lexical',
      warnings: ['embedding-failed'],
    });
  });
});
