import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryTurn } from '../../src/agent/memory-turn.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { messageText, systemText } from '../../src/contracts/language-model-content.js';
import type { SessionTool } from '../../src/contracts/session-tool.js';
import { Engram } from '../../src/engram.js';
import type { Memory } from '../../src/memory/memory.js';
import { EXTRACTION_QUEUE, type ExtractionJobPayload } from '../../src/extraction/extraction-job-payload.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { Session } from '../../src/session/session.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';

const PROJECT = 'project:github.com/acme/app';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openEngram(): Promise<Engram> {
  const directory = await mkdtemp(join(tmpdir(), 'engram-memory-turn-run-'));
  const store = new SqliteMemoryStore({ path: join(directory, 'engram.db') });
  await store.open();
  cleanups.push(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });
  return new Engram({ store, defaultScope: PROJECT, actor: 'test', onWarning: () => undefined });
}

/** The memory the turns below recall: where the API deploys. */
function rememberDeployRegion(engram: Engram): Promise<Memory> {
  return engram.remember({
    name: 'deploy-region',
    content: 'The API deploys to the Frankfurt region (eu-central-1).',
    type: 'project',
  });
}

/** An extractor over `engram` that runs only when drained, stopped after the test. */
function idleExtractor(engram: Engram): Extractor {
  const extractor = new Extractor({ engram, autoStart: false });
  cleanups.push(() => extractor.stop());
  return extractor;
}

const readTool: SessionTool = {
  definition: {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  run: async (input) => ({ content: `${String(input.path)}: region eu-central-1` }),
};

describe('MemoryTurn.run: one agent turn on a Session with memory', () => {
  it('puts the block, then the host context, before the user message (never in the system prompt) and queues the answered turn', async () => {
    const engram = await openEngram();
    const deploy = await rememberDeployRegion(engram);
    const extractor = idleExtractor(engram);
    const memoryTurn = new MemoryTurn({ engram, extractor });
    const system = await memoryTurn.staticPart();
    const model = new ScriptedLanguageModel({ script: ['It deploys to Frankfurt.', 'Tuesdays.'] });
    const session = new Session({ model, system, sessionId: 'chat-1', tools: [readTool] });

    const result = await memoryTurn.run(session, {
      content: 'Where does the API deploy, Frankfurt?',
      context: 'Rule: source files use named exports.',
    });

    expect(result.text).toBe('It deploys to Frankfurt.');
    expect(result.injection.status).toBe('injected');
    const request = model.requests[0]!;
    expect(systemText(request.system)).toBe(system);
    expect(systemText(request.system)).toContain('deploy-region');
    const texts = request.messages.map(messageText);
    expect(texts).toHaveLength(2);
    expect(texts[0]!.startsWith('<memory_context>')).toBe(true);
    expect(texts[0]).toContain('eu-central-1');
    expect(texts[0]!.endsWith('</memory_context>\n\n\nRule: source files use named exports.')).toBe(true);
    expect(texts[1]).toBe('Where does the API deploy, Frankfurt?');
    // The context message goes too, as meta: extraction knows it for injected text and strips it.
    expect(await result.extraction).toMatchObject({ status: 'queued', jobs: 1, messages: 3 });
    const [job] = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    const payload = job!.payload as ExtractionJobPayload;
    expect(payload.sessionId).toBe('chat-1');
    expect(payload.recalled.map((memory) => memory.id)).toEqual([deploy.id]);

    // The next turn on the same subject: the memory is in the conversation already, not injected twice.
    const next = await memoryTurn.run(session, { content: 'And when do deploys to Frankfurt happen?' });
    expect(next.injection.status).toBe('nothing-recalled');
    expect(model.requests[1]!.messages.map(messageText).filter((text) => text.includes('eu-central-1'))).toHaveLength(
      1,
    );
    expect(await next.extraction).toMatchObject({ status: 'queued', messages: 2 });
  });

  it('a turn with tool calls is queued once, whole, after its final answer', async () => {
    const engram = await openEngram();
    const extractor = idleExtractor(engram);
    const memoryTurn = new MemoryTurn({ engram, extractor });
    const model = new ScriptedLanguageModel({
      script: [
        {
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'deploy.yaml' } }],
          stopReason: 'tool_use',
        },
        'It deploys to eu-central-1.',
      ],
    });
    const session = new Session({ model, sessionId: 'chat-2', tools: [readTool] });

    const result = await memoryTurn.run(session, { content: 'Which region does deploy.yaml name?' });

    expect(result).toMatchObject({ text: 'It deploys to eu-central-1.', requests: 2, toolCalls: 1 });
    expect(await result.extraction).toMatchObject({ status: 'queued', jobs: 1, messages: 4 });
    const jobs = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    expect(jobs).toHaveLength(1);
    expect((jobs[0]!.payload as ExtractionJobPayload).messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
  });

  it('a message the session refuses as too large leaves its memories unsurfaced: the next request still gets them', async () => {
    const engram = await openEngram();
    const deploy = await rememberDeployRegion(engram);
    const memoryTurn = new MemoryTurn({ engram });
    const session = new Session({ model: new ScriptedLanguageModel({ script: [] }), sessionId: 'chat-4' });
    const question = 'Where does the API deploy, Frankfurt?';

    let refused: unknown;
    await memoryTurn.run(session, { content: `${question} ${'More detail here. '.repeat(60_000)}` }).catch((error) => {
      refused = error;
    });

    expect((refused as { code?: string } | undefined)?.code).toBe('PAYLOAD_TOO_LARGE');
    expect(session.messages).toHaveLength(0);
    expect(memoryTurn.hasSurfaced(deploy.id)).toBe(false);
    const again = await memoryTurn.beforeRequest(question);
    expect(again.memories.map((entry) => entry.memory.id)).toEqual([deploy.id]);
  });

  it('an aborted turn takes back only what it surfaced, and the extractor is not told of it', async () => {
    const engram = await openEngram();
    const deploy = await rememberDeployRegion(engram);
    const schedule = await engram.remember({
      name: 'deploy-schedule',
      content: 'Deploys to Frankfurt happen on Tuesdays.',
      type: 'project',
    });
    const extractor = idleExtractor(engram);
    const controller = new AbortController();
    // A rebuilt-prompt host that surfaced deploy-region earlier; Ctrl-C once the memories are chosen.
    const memoryTurn = new MemoryTurn({
      engram,
      extractor,
      excludeSurfaced: false,
      surfaced: [deploy.id],
      onEvent: (event) => {
        if (event.type === 'memory-injected') controller.abort();
      },
    });
    const session = new Session({ model: new ScriptedLanguageModel({ script: [] }), sessionId: 'chat-5' });

    let aborted: unknown;
    await memoryTurn
      .run(session, { content: 'Where and when do deploys to Frankfurt happen?', signal: controller.signal })
      .catch((error) => {
        aborted = error;
      });

    expect(aborted).toBeDefined();
    expect(session.messages).toHaveLength(0);
    expect(memoryTurn.hasSurfaced(schedule.id)).toBe(false);
    expect(memoryTurn.hasSurfaced(deploy.id)).toBe(true);
    const queued = await memoryTurn.afterResponse({
      sessionId: 'chat-5',
      messages: [
        { id: 'u1', role: 'user', text: 'Hello.' },
        { id: 'a1', role: 'assistant', text: 'Hello.' },
      ],
    });
    expect(queued).toMatchObject({ status: 'queued' });
    const [job] = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    expect((job!.payload as ExtractionJobPayload).recalled.map((memory) => memory.id)).not.toContain(schedule.id);
  });

  it('a store that fails leaves the turn to run without memory', async () => {
    const engram = await openEngram();
    const events: string[] = [];
    const memoryTurn = new MemoryTurn({ engram, onEvent: (event) => events.push(event.type) });
    await engram.store.close();
    const model = new ScriptedLanguageModel({ script: ['Answered anyway.'] });
    const session = new Session({ model, sessionId: 'chat-3' });

    const result = await memoryTurn.run(session, { content: 'Where does the API deploy?' });

    expect(result.text).toBe('Answered anyway.');
    expect(result.injection).toMatchObject({ status: 'failed', error: { code: 'STORE_CLOSED' } });
    expect(model.requests[0]!.messages.map(messageText)).toEqual(['Where does the API deploy?']);
    expect(events).toEqual(['recall-failed']);
    expect(await result.extraction).toMatchObject({ status: 'off' });
  });
});
