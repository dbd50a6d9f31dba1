import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryTurn } from '../../src/agent/memory-turn.js';
import type { MemoryTurnOptions } from '../../src/agent/memory-turn-options.js';
import { MAX_RECALL_TIME_CAP_MS, type MemoryTurnEvent } from '../../src/agent/memory-injection.js';
import { OpenAiCompatibleEmbedder } from '../../src/adapters/embedding/openai-compatible-embedder.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import type { Conversation, ConversationMessage } from '../../src/contracts/conversation.js';
import type { Embedder } from '../../src/contracts/embedder.js';
import type { LanguageModel } from '../../src/contracts/language-model.js';
import { Engram } from '../../src/engram.js';
import { EXTRACTION_QUEUE, type ExtractionJobPayload } from '../../src/extraction/extraction-job-payload.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { EngramError, type EngramErrorCode } from '../../src/kernel/errors.js';
import { DEFAULT_SETTINGS, findSettingDefinition, type Settings } from '../../src/kernel/settings.js';
import { checkSetting } from '../../src/kernel/setting-checks.js';
import { startEmbeddingsServer, type EmbeddingsServer } from '../../src/testing/openai-compatible-embeddings-server.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import { closeSqlite, openSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';
import { expectEngramError } from '../support/expect-engram-error.js';

const PROJECT = 'project:github.com/acme/app';
const FRANKFURT = 'The deploy target of the API is the Frankfurt region (eu-central-1).';
const QUESTION = 'Where do we deploy the API service, Frankfurt?';

interface Fixture {
  path: string;
  store: SqliteMemoryStore;
  engram: Engram;
  events: MemoryTurnEvent[];
  turn(options?: Partial<MemoryTurnOptions>): MemoryTurn;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real SQLite store in a temp folder, an Engram over it, and memory turns that record their events. */
async function fixture(
  options: {
    settings?: (settings: Settings) => void;
    embedder?: Embedder;
    model?: LanguageModel;
    busyTimeoutMs?: number;
  } = {},
): Promise<Fixture> {
  const directory = await mkdtemp(join(tmpdir(), 'engram-memory-turn-'));
  const path = join(directory, 'engram.db');
  const settings = structuredClone(DEFAULT_SETTINGS) as Settings;
  options.settings?.(settings);
  const store = new SqliteMemoryStore({ path, busyTimeoutMs: options.busyTimeoutMs ?? 5_000 });
  await store.open();
  cleanups.push(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });
  const engram = new Engram({
    store,
    settings,
    defaultScope: PROJECT,
    actor: 'test',
    onWarning: () => undefined,
    ...(options.embedder && { embedder: options.embedder }),
    ...(options.model && { model: options.model }),
  });
  const events: MemoryTurnEvent[] = [];
  const turns: MemoryTurn[] = [];
  cleanups.push(async () => {
    for (const turn of turns) await turn.flush();
  });
  return {
    path,
    store,
    engram,
    events,
    turn: (turnOptions = {}) => {
      const turn = new MemoryTurn({ engram, onEvent: (event) => events.push(event), ...turnOptions });
      turns.push(turn);
      return turn;
    },
  };
}

/** An extractor that only queues (no worker runs here), stopped after the test. */
function queueingExtractor(engram: Engram): Extractor {
  const extractor = new Extractor({ engram, autoStart: false });
  cleanups.push(() => extractor.stop());
  return extractor;
}

function conversation(messages: ConversationMessage[], sessionId = 'session-1'): Conversation {
  return { sessionId, messages };
}

const userAndAnswer = (index: number, text: string): ConversationMessage[] => [
  { id: `u${index}`, role: 'user', text },
  { id: `a${index}`, role: 'assistant', text: 'Noted.' },
];

describe('MemoryTurn before a request', () => {
  it('returns the static part and the <memory_context> block, with the memories, their scores and events', async () => {
    const { engram, events, turn } = await fixture();
    const deploy = await engram.remember({
      name: 'deploy-region',
      description: 'Where the API is deployed',
      content: FRANKFURT,
      type: 'project',
    });
    await engram.remember({
      name: 'tabs',
      description: 'Indentation preference',
      content: 'The user indents with tabs, never spaces.',
      type: 'user',
    });
    const memoryTurn = turn();

    const injection = await memoryTurn.beforeRequest(QUESTION);

    expect(injection.status).toBe('injected');
    // The static part: the preamble, then the index of both memories (not only the recalled one).
    expect(injection.staticPart.startsWith('# Long-term memory')).toBe(true);
    expect(injection.staticPart).toContain('deploy-region');
    expect(injection.staticPart).toContain('tabs');
    expect(injection.staticPart).not.toContain('eu-central-1');
    expect(injection.block.startsWith('<memory_context>\n')).toBe(true);
    expect(injection.block.endsWith('</memory_context>\n')).toBe(true);
    expect(injection.block).toContain('eu-central-1');
    expect(injection.block).not.toContain('never spaces');
    expect(injection.memories.map((entry) => entry.memory.id)).toEqual([deploy.id]);
    expect(injection.memories[0]!.score).toBeGreaterThan(0);
    expect(injection.memories[0]!.source).toBe('ranked');
    expect(injection.tokens.block).toBeGreaterThan(0);
    expect(injection.tokens.block).toBeLessThanOrEqual(injection.tokens.budget);
    expect(injection.tokens.budget).toBe(DEFAULT_SETTINGS.injection.maxTokens);
    expect(injection.warnings).toEqual(['vector-search-unavailable']);
    expect(events.map((event) => event.type)).toEqual(['memory-recalled', 'memory-injected']);
    expect(events[1]).toMatchObject({ type: 'memory-injected', ids: [deploy.id] });
    // The hit is a write done after the injection was handed over.
    expect((await engram.get(deploy.id)).hitCount).toBe(0);
    await memoryTurn.flush();
    expect((await engram.get(deploy.id)).hitCount).toBe(1);
  });

  it('keeps the static part byte-stable for the conversation (the prompt cache prefix) until refreshStaticPart', async () => {
    const { engram, turn } = await fixture();
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const memoryTurn = turn();
    const first = await memoryTurn.beforeRequest(QUESTION);
    await engram.remember({
      name: 'staging-database',
      content: 'The staging database is called atlas.',
      type: 'project',
    });
    const second = await memoryTurn.beforeRequest('What is the staging database called?');
    expect(second.staticPart).toBe(first.staticPart);
    expect(second.block).toContain('atlas');
    expect(await memoryTurn.staticPart()).toBe(first.staticPart);
    memoryTurn.refreshStaticPart();
    const refreshed = await memoryTurn.staticPart();
    expect(refreshed).toContain('staging-database');
    expect(refreshed).not.toBe(first.staticPart);
    // Asked not to, it builds none.
    expect((await turn().beforeRequest(QUESTION, { staticPart: false })).staticPart).toBe('');
  });

  it('leaves out what this conversation surfaced (top_k still counts new memories); the set restores in another process and after forgetSurfaced', async () => {
    // One memory a request, and no score floor: which of the two comes first does not matter here.
    const { engram, turn } = await fixture({
      settings: (settings) => Object.assign(settings.recall, { topK: 1, minScore: 0 }),
    });
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    await engram.remember({
      name: 'deploy-window',
      content: 'Deploys of the API service to Frankfurt happen on Tuesdays.',
      type: 'project',
    });
    const memoryTurn = turn();

    const first = await memoryTurn.beforeRequest(QUESTION);
    const second = await memoryTurn.beforeRequest(QUESTION);
    const third = await memoryTurn.beforeRequest(QUESTION);
    expect(first.memories).toHaveLength(1);
    expect(second.memories).toHaveLength(1);
    expect(second.memories[0]!.memory.id).not.toBe(first.memories[0]!.memory.id);
    expect(third.status).toBe('nothing-recalled');
    expect(third.block).toBe('');
    const ids = [first.memories[0]!.memory.id, second.memories[0]!.memory.id];
    expect(memoryTurn.surfacedIds()).toEqual(ids);
    expect(memoryTurn.hasSurfaced(ids[0]!)).toBe(true);

    // A hook runs one process per prompt: the next one starts from the persisted set.
    const restored = turn({ surfaced: JSON.parse(JSON.stringify(memoryTurn.surfacedIds())) as string[] });
    expect((await restored.beforeRequest(QUESTION)).status).toBe('nothing-recalled');

    // A compaction dropped the first one's text: it may come back.
    memoryTurn.forgetSurfaced([ids[0]!]);
    expect((await memoryTurn.beforeRequest(QUESTION)).memories.map((entry) => entry.memory.id)).toEqual([ids[0]]);

    // A caller that rebuilds the whole prompt every request gets the same memory each time.
    const rebuilding = turn({ excludeSurfaced: false });
    const again = [await rebuilding.beforeRequest(QUESTION), await rebuilding.beforeRequest(QUESTION)];
    expect(again.map((injection) => injection.memories.map((entry) => entry.memory.id))).toEqual([[ids[0]], [ids[0]]]);
  });

  it('packs the block within the token budget and counts what did not fit', async () => {
    const { engram, turn } = await fixture();
    // Long memories that differ in more than the region: recall's diversity (recall.duplicateSimilarity)
    // rightly sets aside memories whose words are nearly all a better hit's.
    const details: Record<string, string> = {
      Frankfurt: 'Its nodes run behind a load balancer with health checks and a warm standby. ',
      Paris: 'Traffic reaches it through an edge proxy that terminates TLS and caches static assets. ',
      Dublin: 'A nightly job snapshots its database volume and ships the archive offsite. ',
    };
    for (const [region, detail] of Object.entries(details)) {
      await engram.remember({
        content: `The API service deploys a replica to ${region}. ${detail.repeat(12)}`,
        type: 'project',
      });
    }
    const wide = await turn().beforeRequest('Which regions does the API service deploy to?');
    expect(wide.memories).toHaveLength(3);
    const budget = Math.ceil(wide.tokens.block / 2);
    const narrow = await turn({ maxTokens: budget }).beforeRequest('Which regions does the API service deploy to?');
    expect(narrow.memories.length).toBeGreaterThanOrEqual(1);
    expect(narrow.memories.length).toBeLessThan(3);
    expect(narrow.omitted).toBe(3 - narrow.memories.length);
    expect(narrow.tokens).toMatchObject({ budget });
    expect(narrow.tokens.block).toBeLessThanOrEqual(budget);
    // No room at all: no block, everything counted as left out, nothing marked as surfaced.
    const none = turn();
    const empty = await none.beforeRequest('Which regions does the API service deploy to?', { maxTokens: 0 });
    expect(empty).toMatchObject({ status: 'nothing-recalled', block: '', omitted: 3 });
    expect(none.surfacedIds()).toEqual([]);
  });
});

describe('MemoryTurn fails open', () => {
  it('past the time cap the LLM retriever is cut and what ranked recall found is still given', async () => {
    const selection = new ScriptedLanguageModel({ script: [{ hang: true }] });
    const { engram, events, turn } = await fixture({
      settings: (settings) => (settings.recall.llmTimeoutMs = 600_000),
    });
    const deploy = await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });

    const injection = await turn({ selectionModel: selection, recallTimeoutMs: 20 }).beforeRequest(QUESTION);

    expect(selection.requests).toHaveLength(1);
    expect(selection.requests[0]!.signal?.aborted).toBe(true);
    expect(injection.status).toBe('injected');
    expect(injection.memories.map((entry) => entry.memory.id)).toEqual([deploy.id]);
    expect(injection.warnings).toContain('llm-selection-timeout');
    expect(events).toContainEqual({ type: 'recall-timed-out', timeoutMs: 20, kept: 1 });
  });

  it('with a recall step that does not answer in time (a slow embeddings server), the request goes on without memory', async () => {
    const server: EmbeddingsServer = await startEmbeddingsServer({ dimensions: 16 });
    cleanups.push(() => server.close());
    const embedder = new OpenAiCompatibleEmbedder({ baseUrl: server.baseUrl, model: 'hashed-words', maxRetries: 0 });
    const { engram, events, turn } = await fixture({
      embedder,
      settings: (settings) => (settings.embedding.queryTimeoutMs = 3_000),
    });
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const memoryTurn = turn({ recallTimeoutMs: 50 });
    const before = await memoryTurn.staticPart();
    expect(before).toContain('deploy-region');
    // The query's vector takes far longer than the cap.
    server.script({ delayMs: 2_000 });

    const late = await memoryTurn.beforeRequest(QUESTION);

    expect(late).toMatchObject({ status: 'timed-out', block: '', memories: [], warnings: ['recall-timed-out'] });
    // The static part known before is kept: the prompt's prefix does not change because recall was slow.
    expect(late.staticPart).toBe(before);
    expect(events).toContainEqual({ type: 'recall-timed-out', timeoutMs: 50, kept: 0 });
    expect(memoryTurn.surfacedIds()).toEqual([]);
    // The next request, with the server answering again, has its memory.
    const next = await memoryTurn.beforeRequest(QUESTION, { recallTimeoutMs: 30_000 });
    expect(next.status).toBe('injected');
    expect(next.block).toContain('eu-central-1');
  });

  it("the caller's abort ends the wait at once: no memory, nothing surfaced; an abort given before starts no recall", async () => {
    const controller = new AbortController();
    const selection = new ScriptedLanguageModel({
      script: [
        () => {
          // The user pressed Ctrl-C while the retriever was thinking.
          controller.abort(new Error('interrupted'));
          return { hang: true };
        },
      ],
    });
    const { engram, events, turn } = await fixture({
      settings: (settings) => (settings.recall.llmTimeoutMs = 600_000),
    });
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const memoryTurn = turn({ selectionModel: selection, recallTimeoutMs: 600_000 });

    const abandoned = await memoryTurn.beforeRequest(QUESTION, { signal: controller.signal });

    expect(abandoned).toMatchObject({ status: 'aborted', block: '', memories: [], warnings: ['recall-aborted'] });
    expect(selection.requests[0]!.signal?.aborted).toBe(true);
    expect(memoryTurn.surfacedIds()).toEqual([]);
    expect(await memoryTurn.beforeRequest(QUESTION, { signal: controller.signal })).toMatchObject({
      status: 'aborted',
    });
    expect(selection.requests).toHaveLength(1);
    expect(events.map((event) => event.type)).toEqual(['recall-aborted', 'recall-aborted']);
  });

  it('a closed store: no memory, a warning and an event saying why, never a throw', async () => {
    const { engram, store, events, turn } = await fixture();
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const built = turn();
    const staticPart = await built.staticPart();
    const fresh = turn();
    await store.close();

    const injection = await fresh.beforeRequest(QUESTION);
    expect(injection).toMatchObject({
      status: 'failed',
      staticPart: '',
      block: '',
      memories: [],
      warnings: ['recall-failed'],
      error: { code: 'STORE_CLOSED' },
    });
    expect(events).toContainEqual({ type: 'recall-failed', error: injection.error });
    expect(await fresh.staticPart()).toBe('');
    // A static part built before the failure stays: the cached prefix does not change.
    const kept = await built.beforeRequest(QUESTION);
    expect(kept).toMatchObject({ status: 'failed', staticPart, block: '' });
  });

  it('a store whose write lock another connection holds: recall answers (WAL readers go on), hits and queueing fail open and catch up', async () => {
    const { path, engram, events, turn } = await fixture({ busyTimeoutMs: 20 });
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const memoryTurn = turn({ extractor: queueingExtractor(engram) });
    const other = openSqlite(path);
    cleanups.push(async () => void closeSqlite(other));
    other.exec('BEGIN IMMEDIATE');

    const injection = await memoryTurn.beforeRequest(QUESTION);
    expect(injection.status).toBe('injected');
    const messages = userAndAnswer(1, QUESTION);
    const queued = await memoryTurn.afterResponse(conversation(messages));
    await memoryTurn.flush();
    expect(queued).toMatchObject({ status: 'failed', jobs: 0, error: { code: 'STORE_ERROR' } });
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['hits-failed', 'extraction-failed']));

    other.exec('ROLLBACK');
    // Nothing was lost: the next call queues the turn, and still names the memory it injected.
    const retried = await memoryTurn.afterResponse(conversation([...messages, ...userAndAnswer(2, 'Thanks.')]));
    expect(retried).toMatchObject({ status: 'queued', jobs: 1, messages: 4 });
    const [job] = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    expect((job!.payload as ExtractionJobPayload).recalled.map((memory) => memory.id)).toEqual([
      injection.memories[0]!.memory.id,
    ]);
  });

  it('a listener that throws changes nothing', async () => {
    const { engram, turn } = await fixture();
    await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const injection = await turn({
      onEvent: () => {
        throw new Error('broken display');
      },
    }).beforeRequest(QUESTION);
    expect(injection.status).toBe('injected');
  });
});

describe('MemoryTurn after a response', () => {
  it('queues the new turn after the caller has gone on, never during its call', async () => {
    const { engram, events, turn } = await fixture();
    const memoryTurn = turn({ extractor: queueingExtractor(engram) });
    const jobs = (): Promise<unknown[]> => engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    const first = userAndAnswer(1, 'We deploy the API to Frankfurt.');

    for (const messages of [first, [...first, ...userAndAnswer(2, 'And staging goes to Dublin.')]]) {
      const before = (await jobs()).length;
      const queued = memoryTurn.afterResponse(conversation(messages));
      // The caller's own awaits (a stream consumer's loop) all run before any of the queueing: the
      // store is synchronous underneath, so work started in the call would already be done here.
      for (let step = 0; step < 100; step += 1) await Promise.resolve();
      expect(await jobs()).toHaveLength(before);
      expect(await queued).toMatchObject({ status: 'queued', jobs: 1, messages: 2 });
      expect(await jobs()).toHaveLength(before + 1);
    }
    expect(events.filter((event) => event.type === 'extraction-queued')).toEqual([
      { type: 'extraction-queued', sessionId: 'session-1', jobs: 1, messages: 2 },
      { type: 'extraction-queued', sessionId: 'session-1', jobs: 1, messages: 2 },
    ]);
    // Nothing new since: nothing queued.
    expect(
      await memoryTurn.afterResponse(conversation([...first, ...userAndAnswer(2, 'And staging goes to Dublin.')])),
    ).toMatchObject({ status: 'nothing-new', jobs: 0 });
  });

  it('a turn that ends in a tool call waits for the final answer, which queues it whole', async () => {
    const { engram, events, turn } = await fixture();
    const memoryTurn = turn({ extractor: queueingExtractor(engram) });
    const messages: ConversationMessage[] = [
      { id: 'u1', role: 'user', text: 'Remember that the API deploys to Frankfurt, and read the config.' },
      {
        id: 'a1',
        role: 'assistant',
        text: 'Reading.',
        toolCalls: [{ id: 'toolu_1', name: 'read_file', input: { path: 'deploy.yaml' } }],
      },
    ];
    expect(await memoryTurn.afterResponse(conversation(messages))).toMatchObject({ status: 'deferred', jobs: 0 });
    expect(events).toContainEqual({ type: 'extraction-deferred', sessionId: 'session-1' });
    messages.push({
      id: 't1',
      role: 'tool',
      text: '',
      toolResults: [{ toolUseId: 'toolu_1', content: 'region: eu-central-1' }],
    });
    // A host that knows better says so.
    expect(await memoryTurn.afterResponse(conversation(messages), { final: false })).toMatchObject({
      status: 'deferred',
    });
    expect(await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE })).toHaveLength(0);
    messages.push({ id: 'a2', role: 'assistant', text: 'It deploys to eu-central-1.' });

    expect(await memoryTurn.afterResponse(conversation(messages))).toMatchObject({
      status: 'queued',
      jobs: 1,
      messages: 4,
    });
    const [job] = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    expect((job!.payload as ExtractionJobPayload).messages.map((message) => message.id)).toEqual([
      'u1',
      'a1',
      't1',
      'a2',
    ]);
  });

  it('without an extractor it does nothing and says so', async () => {
    const { turn } = await fixture();
    expect(await turn().afterResponse(conversation(userAndAnswer(1, 'Hello.')))).toEqual({
      status: 'off',
      jobs: 0,
      messages: 0,
    });
  });
});

describe('MemoryTurn with hostile input', () => {
  it('refuses a message that is not a string, and answers empty, huge and control-character messages cleanly', async () => {
    const { engram, turn } = await fixture();
    const deploy = await engram.remember({ name: 'deploy-region', content: FRANKFURT, type: 'project' });
    const memoryTurn = turn({ excludeSurfaced: false });
    for (const message of [42, null, undefined, { text: QUESTION }, [QUESTION]]) {
      await expectEngramError(() => memoryTurn.beforeRequest(message as never), 'INVALID_INPUT');
    }
    for (const message of ['', '   \n\t ', '\u0000\u0007\u001b']) {
      const injection = await memoryTurn.beforeRequest(message);
      expect(injection).toMatchObject({ status: 'nothing-recalled', block: '', memories: [] });
      expect(injection.staticPart).toContain('deploy-region');
    }
    const found = (message: string) =>
      memoryTurn.beforeRequest(message).then((injection) => injection.memories.map((entry) => entry.memory.id));
    expect(await found('\u0000Frankfurt\u001b[31m deploy\u0007 region?\u2028')).toEqual([deploy.id]);
    // 2 MB of pasted log, the question at the end (and a surrogate pair cut in half at the seam).
    expect(await found(`${'😀'.repeat(1_000_000)} Where do we deploy? Frankfurt?`)).toEqual([deploy.id]);
    expect(await found(`Frankfurt deploy region? ${'log line\n'.repeat(250_000)}`)).toEqual([deploy.id]);
    await expectEngramError(() => memoryTurn.beforeRequest(QUESTION, { maxTokens: -1 }), 'INVALID_INPUT');
    await expectEngramError(() => memoryTurn.beforeRequest(QUESTION, null as never), 'INVALID_INPUT');
  });

  it('refuses bad options when it is made, not on the first request', async () => {
    const { engram } = await fixture();
    const bad: Array<[Partial<MemoryTurnOptions>, EngramErrorCode]> = [
      [{ engram: undefined as never }, 'INVALID_INPUT'],
      [{ engram: {} as never }, 'INVALID_INPUT'],
      [{ maxTokens: -1 }, 'INVALID_INPUT'],
      [{ maxTokens: 1.5 }, 'INVALID_INPUT'],
      [{ recallTimeoutMs: 0 }, 'INVALID_INPUT'],
      [{ recallTimeoutMs: '100' as never }, 'INVALID_INPUT'],
      [{ scopes: [] }, 'INVALID_SCOPE'],
      [{ scopes: ['nowhere'] }, 'INVALID_SCOPE'],
      [{ surfaced: 'mem_1' as never }, 'INVALID_INPUT'],
      [{ surfaced: [42] as never }, 'INVALID_INPUT'],
      [{ surfaced: ['x'.repeat(201)] }, 'INVALID_INPUT'],
      [{ onEvent: 'log' as never }, 'INVALID_INPUT'],
      [{ selectionModel: {} as never }, 'INVALID_INPUT'],
      [{ extractor: {} as never }, 'INVALID_INPUT'],
      [{ excludeSurfaced: 'yes' as never }, 'INVALID_INPUT'],
    ];
    for (const [options, code] of bad) await expectEngramError(() => new MemoryTurn({ engram, ...options }), code);
    await expectEngramError(() => new MemoryTurn(null as never), 'INVALID_INPUT');
    // A surfaced set past its cap keeps the newest ids.
    const many = Array.from({ length: 10_005 }, (_, index) => `mem_${index}`);
    const kept = new MemoryTurn({ engram, surfaced: many }).surfacedIds();
    expect(kept).toHaveLength(10_000);
    expect(kept[0]).toBe('mem_5');
  });

  it('starts with every time cap the settings accept: recall.timeCapMs, and recall.llmTimeoutMs as engram chat passes it', async () => {
    const { engram } = await fixture();
    for (const path of ['recall.timeCapMs', 'recall.llmTimeoutMs']) {
      const definition = findSettingDefinition(path);
      if (definition?.type !== 'number') throw new Error(`${path} is a number setting`);
      expect(definition, path).toMatchObject({ integer: true, minimum: 1, maximum: MAX_RECALL_TIME_CAP_MS });
      for (const value of [definition.minimum, definition.default, definition.maximum!]) {
        const settings = structuredClone(DEFAULT_SETTINGS) as Settings;
        settings.recall.timeCapMs = path === 'recall.timeCapMs' ? value : settings.recall.timeCapMs;
        settings.recall.llmTimeoutMs = path === 'recall.llmTimeoutMs' ? value : settings.recall.llmTimeoutMs;
        const configured = new Engram({ store: engram.store, settings, defaultScope: PROJECT, actor: 'test' });
        expect(() => new MemoryTurn({ engram: configured })).not.toThrow();
        expect(
          () =>
            new MemoryTurn({
              engram: configured,
              recallTimeoutMs: Math.max(settings.recall.timeCapMs, settings.recall.llmTimeoutMs),
            }),
        ).not.toThrow();
      }
      // What the table refuses, the memory turn would refuse too.
      for (const value of [0, 1.5, MAX_RECALL_TIME_CAP_MS + 1])
        expect(() => checkSetting(path as 'recall.timeCapMs', value), `${path} ${value}`).toThrow(EngramError);
    }
  });

  it('a malformed conversation or recalled list is reported, never thrown, and the next good call still queues', async () => {
    const { engram, events, turn } = await fixture();
    const memoryTurn = turn({ extractor: queueingExtractor(engram) });
    const hostile: unknown[] = [
      null,
      'text',
      { sessionId: 's', messages: 'x' },
      { sessionId: '', messages: [] },
      { sessionId: 's', messages: [{ id: 'u1', role: 'robot', text: 'hi' }] },
    ];
    for (const value of hostile) {
      const result = await memoryTurn.afterResponse(value as Conversation);
      expect(result).toMatchObject({ status: 'failed', error: { code: 'INVALID_INPUT' } });
    }
    expect(
      await memoryTurn.afterResponse(conversation(userAndAnswer(1, 'Hello.')), { recalled: [{ id: 42 }] as never }),
    ).toMatchObject({ status: 'failed' });
    expect(events.filter((event) => event.type === 'extraction-failed')).toHaveLength(hostile.length + 1);
    expect(await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE })).toHaveLength(0);
    expect(await memoryTurn.afterResponse(conversation(userAndAnswer(1, 'Hello.')))).toMatchObject({
      status: 'queued',
      jobs: 1,
    });
  });
});
