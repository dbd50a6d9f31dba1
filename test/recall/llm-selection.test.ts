import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewMemory } from '../../src/memory/memory.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import type { LanguageModelRequest } from '../../src/contracts/language-model.js';
import { messageText } from '../../src/contracts/language-model-content.js';
import {
  assignHandles,
  parseSelectionOutput,
  selectMemoriesWithModel,
  LLM_SELECTION_WARNINGS,
} from '../../src/recall/llm-selection.js';
import { ScriptedLanguageModel } from '../../src/testing/index.js';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.js';

const ACTOR = { actor: 'selection-test' };
const DAY = 86_400_000;
const T0 = Date.parse('2026-05-10T08:00:00.000Z');
const iso = (days: number): string => new Date(T0 + days * DAY).toISOString();

let temporary: TemporaryStore;

beforeEach(async () => {
  temporary = await openTemporaryStore(T0);
});

afterEach(async () => {
  await temporary.close();
});

function dependencies() {
  return { store: temporary.store, settings: DEFAULT_SETTINGS, now: () => new Date(temporary.clock.now) };
}

function engram(scopes: string[] = ['project:a', 'global']): Engram {
  return new Engram({
    store: temporary.store,
    defaultScope: 'project:a',
    readScopes: scopes,
    now: () => new Date(temporary.clock.now),
  });
}

async function seed(inputs: Array<Partial<NewMemory> & { content: string }>): Promise<string[]> {
  const created = await temporary.store.createMany(
    inputs.map((input) => ({ scope: 'project:a', createdAt: iso(-1), ...input })),
    ACTOR,
  );
  return created.map((memory) => memory.id);
}

/** The manifest lines the model was shown: `handle | type | name | age | description`. */
function manifestLines(request: LanguageModelRequest | undefined): string[] {
  const first = request?.messages[0];
  const text = first === undefined ? '' : messageText(first);
  const body = text.slice(text.indexOf('<memories>\n') + '<memories>\n'.length, text.lastIndexOf('\n</memories>'));
  return body === '' ? [] : body.split('\n');
}

function handleOf(request: LanguageModelRequest | undefined, name: string): string {
  const line = manifestLines(request).find((entry) => entry.split(' | ')[2] === name);
  if (!line) throw new Error(`no manifest line for ${name}`);
  return line.split(' | ')[0]!;
}

describe('LLM selection (scripted model)', () => {
  it('shows the model at most 200 manifest entries (recent writes and full-text matches), most recently useful first', async () => {
    await seed(
      Array.from({ length: 230 }, (_, index) => ({
        name: `fact-${String(index).padStart(3, '0')}`,
        description: `Fact number ${index}`,
        content: `Fact number ${index}.`,
        createdAt: iso(-300 + index),
      })),
    );
    // An old memory the message names gets a line, and having been used yesterday puts it first.
    const [used] = await seed([
      {
        name: 'old-but-used',
        description: 'Used yesterday',
        content: 'Old note about the quokka gateway.',
        createdAt: iso(-900),
        lastAccessedAt: iso(-1),
      },
    ]);
    const [unrelated] = await seed([
      { name: 'old-unrelated', description: 'Unrelated', content: 'Old note about lunch.', createdAt: iso(-800) },
    ]);
    const model = new ScriptedLanguageModel({ script: ['{"selected": []}'] });
    const selection = await selectMemoriesWithModel(dependencies(), ['project:a'], {
      model,
      query: 'Where is the quokka gateway?',
      recentTools: ['Bash', 'Read'],
    });

    expect(selection.status).toBe('selected');
    expect(selection.manifest).toHaveLength(200);
    expect(selection.manifest[0]!.id).toBe(used);
    expect(selection.manifest[1]!.name).toBe('fact-229');
    expect(selection.manifest.at(-1)!.name).toBe('fact-031');
    expect(selection.manifest.map((entry) => entry.id)).not.toContain(unrelated);
    const request = model.lastRequest!;
    expect(manifestLines(request)).toHaveLength(200);
    expect(manifestLines(request)[0]).toMatch(
      /^m[0-9a-z]{7} \| project \| old-but-used \| 900 days old \| Used yesterday$/,
    );
    expect(request.messages[0]!.content).toContain('Where is the quokka gateway?');
    expect(request.messages[0]!.content).toContain('Recently used tools: Bash, Read');
    expect(request.responseFormat).toBe('json');
    expect(request.maxOutputTokens).toBe(DEFAULT_SETTINGS.recall.llmMaxOutputTokens);
    expect(request.system).toContain('at most 5');
  });

  it('returns at most 5 picks, in the model’s order, and says when it had to drop some', async () => {
    await seed(
      Array.from({ length: 9 }, (_, index) => ({
        name: `tip-${index}`,
        description: `Tip ${index}`,
        content: `Tip ${index}.`,
      })),
    );
    const model = new ScriptedLanguageModel({
      script: [
        (request) =>
          JSON.stringify({ selected: [8, 7, 6, 5, 4, 3, 2, 1].map((index) => handleOf(request, `tip-${index}`)) }),
      ],
    });
    const selection = await selectMemoriesWithModel(dependencies(), ['project:a'], { model, query: 'tips' });
    expect(selection.memories.map((memory) => memory.name)).toEqual(['tip-8', 'tip-7', 'tip-6', 'tip-5', 'tip-4']);
    expect(selection.warnings).toEqual([LLM_SELECTION_WARNINGS.tooManyPicks]);
  });

  it('leaves memories already surfaced in this session out of the manifest and out of the picks', async () => {
    const ids = await seed(
      ['alpha', 'beta', 'gamma'].map((name) => ({
        name,
        description: `About ${name}`,
        content: `The ${name} service.`,
      })),
    );
    const surfaced = new Set([ids[0]!, ids[1]!]);
    const handles = assignHandles(ids);
    // The model names a surfaced memory by handle and by id anyway.
    const model = new ScriptedLanguageModel({
      script: [JSON.stringify({ selected: [handles.get(ids[0]!), ids[1], handles.get(ids[2]!)] })],
    });
    const selection = await selectMemoriesWithModel(dependencies(), ['project:a'], {
      model,
      query: 'services',
      surfaced,
    });
    expect(manifestLines(model.lastRequest).map((line) => line.split(' | ')[2])).toEqual(['gamma']);
    expect(selection.memories.map((memory) => memory.id)).toEqual([ids[2]]);
    expect(selection.warnings).toContain(LLM_SELECTION_WARNINGS.unknownHandles);
  });

  it('does not ask the model when everything was already surfaced', async () => {
    const ids = await seed([{ content: 'Only fact.' }]);
    const model = new ScriptedLanguageModel({ script: [] });
    const selection = await selectMemoriesWithModel(dependencies(), ['project:a'], {
      model,
      query: 'x',
      surfaced: new Set(ids),
    });
    expect(selection).toMatchObject({ status: 'empty-manifest', memories: [] });
    expect(model.calls).toBe(0);
  });

  it('never returns a memory outside the read scopes, whatever ids or handles the model names', async () => {
    const [inside] = await seed([{ name: 'inside', content: 'Project A deploys with Helm.' }]);
    const outside = await seed([
      { scope: 'project:b', name: 'outside', content: 'Project B secret: the staging password rotates monthly.' },
      { scope: 'project:b', name: 'outside-two', content: 'Project B deploys with Nomad.' },
    ]);
    const outsideHandles = assignHandles(outside);
    const script = [
      JSON.stringify({
        selected: [...outside, ...outside.map((id) => outsideHandles.get(id)), 'global', '*', '../project:b'],
      }),
    ];
    const model = new ScriptedLanguageModel({ script, whenExhausted: 'repeat-last' });

    const selection = await selectMemoriesWithModel(dependencies(), ['project:a'], {
      model,
      query: 'how do we deploy?',
    });
    expect(selection.memories).toEqual([]);
    expect(selection.manifest.map((entry) => entry.id)).toEqual([inside]);
    expect(model.lastRequest!.messages[0]!.content).not.toContain('Project B');

    const context = await engram(['project:a']).buildMemoryContext('how do we deploy staging password', { model });
    expect(context.included.every((entry) => entry.memory.scope === 'project:a')).toBe(true);
    expect(context.block).not.toContain('Project B');
    expect(context.staticPart).not.toContain('outside');
  });

  it('falls back to ranked recall with a warning when the output is malformed, never throwing', async () => {
    await seed([{ name: 'tests', content: 'Integration tests use the real database, no mocks.', importance: 0.9 }]);
    for (const output of [
      '',
      'I think m123 is useful',
      '{"selected": "m1"}',
      '{"selected": [',
      'null',
      '```json\n{"oops": 1}\n```',
    ]) {
      const model = new ScriptedLanguageModel({ script: [output] });
      const context = await engram().buildMemoryContext('how should I write integration tests?', {
        model,
        recordAccess: false,
      });
      expect(context.warnings).toContain(LLM_SELECTION_WARNINGS.malformed);
      expect(context.selection).toMatchObject({ status: 'fallback', picked: [] });
      expect(context.included.map((entry) => entry.memory.name)).toEqual(['tests']);
      expect(context.included[0]!.source).toBe('ranked');
    }
  });

  it('falls back when the model fails, times out, or ignores its abort signal', async () => {
    await seed([{ name: 'tests', content: 'Integration tests use the real database, no mocks.' }]);
    const cases: Array<[ScriptedLanguageModel, string]> = [
      [new ScriptedLanguageModel({ script: [{ error: new Error('529 overloaded') }] }), LLM_SELECTION_WARNINGS.failed],
      [new ScriptedLanguageModel({ script: [{ hang: true }] }), LLM_SELECTION_WARNINGS.timeout],
      [
        new ScriptedLanguageModel({ script: [() => new Promise<never>(() => undefined)] }),
        LLM_SELECTION_WARNINGS.timeout,
      ],
    ];
    for (const [model, warning] of cases) {
      const selection = await selectMemoriesWithModel(dependencies(), ['project:a'], {
        model,
        query: 'integration tests',
        timeoutMs: 30,
      });
      expect(selection).toMatchObject({ status: 'fallback', memories: [], warnings: [warning] });
      expect(model.calls).toBe(1);
    }
    // A caller that aborts gets ranked recall, not an exception.
    const controller = new AbortController();
    controller.abort(new Error('user cancelled'));
    const context = await engram().buildMemoryContext('integration tests', {
      model: new ScriptedLanguageModel({ script: [{ hang: true }] }),
      signal: controller.signal,
      recordAccess: false,
    });
    expect(context.included.map((entry) => entry.memory.name)).toEqual(['tests']);
    expect(context.warnings).toContain(LLM_SELECTION_WARNINGS.failed);
  });

  it('puts the picks first, then ranked memories; a memory both picked and ranked is in once and counted as one hit', async () => {
    const [tests, deploy, style] = await seed([
      { name: 'tests', content: 'Integration tests use the real database, no mocks.', importance: 0.9 },
      { name: 'deploy', content: 'Deploys go through the release train on Tuesdays.' },
      { name: 'style', content: 'The user prefers tabs over spaces in every language.', type: 'user' },
    ]);
    const model = new ScriptedLanguageModel({
      script: [(request) => JSON.stringify({ selected: [handleOf(request, 'style'), handleOf(request, 'tests')] })],
    });
    // "deploy" and "release" make the deploy memory a clear match, above min_score however full-text weighs coverage.
    const context = await engram().buildMemoryContext('integration tests for the deploy release', { model });
    expect(context.included.map((entry) => [entry.memory.name, entry.source])).toEqual([
      ['style', 'selected'],
      ['tests', 'both'],
      ['deploy', 'ranked'],
    ]);
    expect(context.included[0]!.score).toBeNull();
    expect(context.selection).toMatchObject({ status: 'selected', picked: [style, tests], manifestSize: 3 });
    expect(context.block.match(/<memory /g)).toHaveLength(3);
    for (const id of [tests, deploy, style]) expect((await temporary.store.get(id!))!.hitCount).toBe(1);
  });

  it('keeps each memory’s handle from turn to turn, whatever else is in the manifest', async () => {
    const [first] = await seed([{ name: 'first', content: 'First fact.' }]);
    const model = new ScriptedLanguageModel({ script: ['[]'], whenExhausted: 'repeat-last' });
    const before = await selectMemoriesWithModel(dependencies(), ['project:a'], { model, query: 'q' });
    await seed(Array.from({ length: 50 }, (_, index) => ({ content: `Filler ${index}.`, createdAt: iso(0) })));
    const after = await selectMemoriesWithModel(dependencies(), ['project:a'], { model, query: 'q' });
    const handleBefore = before.manifest.find((entry) => entry.id === first)!.handle;
    expect(after.manifest.find((entry) => entry.id === first)!.handle).toBe(handleBefore);
    expect(new Set(after.manifest.map((entry) => entry.handle)).size).toBe(51);
  });

  it('cuts a 100 KB message and strips NUL before it reaches the model', async () => {
    await seed([{ content: 'A fact.' }]);
    const model = new ScriptedLanguageModel({ script: ['[]'] });
    await selectMemoriesWithModel(dependencies(), ['project:a'], { model, query: `${'x'.repeat(100_000)}\u0000🙂` });
    const prompt = messageText(model.lastRequest!.messages[0]!);
    expect(Buffer.byteLength(prompt)).toBeLessThan(DEFAULT_SETTINGS.recall.llmQueryMaxTokens * 4 + 2_000);
    expect(prompt).not.toContain('\u0000');
  });

  it('refuses a missing model or a non-string query with a clear error', async () => {
    await expect(
      selectMemoriesWithModel(dependencies(), ['project:a'], { model: {} as never, query: 'x' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const model = new ScriptedLanguageModel({ script: [] });
    await expect(
      selectMemoriesWithModel(dependencies(), ['project:a'], { model, query: 42 as never }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(engram().buildMemoryContext('x', { model: 'claude' as never })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });
});

describe('parseSelectionOutput', () => {
  it('reads a bare array, an object, a fenced block or JSON inside prose; rejects everything else', () => {
    expect(parseSelectionOutput('["a","b"]')).toEqual(['a', 'b']);
    expect(parseSelectionOutput('{"selected":["a"]}')).toEqual(['a']);
    expect(parseSelectionOutput('{"selected_memories":["a", 3, null, "b"]}')).toEqual(['a', 'b']);
    expect(parseSelectionOutput('```json\n{"selected": ["x"]}\n```')).toEqual(['x']);
    expect(parseSelectionOutput('Here you go: {"selected": ["y"]} hope it helps')).toEqual(['y']);
    for (const bad of ['', 'none', '{"selected": "a"}', '{"selected": [', '42', 'null', '{}'])
      expect(parseSelectionOutput(bad)).toBeUndefined();
  });
});

describe('ScriptedLanguageModel', () => {
  it('answers in script order, records requests, and checks them like a provider would', async () => {
    const model = new ScriptedLanguageModel({
      script: ['one', { text: 'two', usage: { inputTokens: 7, cacheReadTokens: 3 } }],
    });
    const request = {
      system: 'sys',
      messages: [{ role: 'user' as const, content: 'hello there' }],
      maxOutputTokens: 10,
    };
    expect(await model.generate(request)).toEqual({
      text: 'one',
      content: [{ type: 'text', text: 'one' }],
      stopReason: 'end',
      usage: { inputTokens: 4, outputTokens: 1 },
    });
    expect(await model.generate(request)).toEqual({
      text: 'two',
      content: [{ type: 'text', text: 'two' }],
      stopReason: 'end',
      usage: { inputTokens: 7, outputTokens: 1, cacheReadTokens: 3 },
    });
    await expect(model.generate(request)).rejects.toThrow(/script has 2 answers/);
    expect(model.calls).toBe(3);
    expect(model.requests[0]).toEqual(request);
    expect(model.requests[0]).not.toBe(request);
    await expect(model.generate({ messages: [], maxOutputTokens: 5 })).rejects.toThrow(TypeError);
    await expect(
      model.generate({ messages: [{ role: 'system' as never, content: 'x' }], maxOutputTokens: 5 }),
    ).rejects.toThrow(/role/);
    await expect(model.generate({ messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 0 })).rejects.toThrow(
      /maxOutputTokens/,
    );
  });

  it('rejects once its request is aborted', async () => {
    const model = new ScriptedLanguageModel({ script: [{ text: 'late', delayMs: 10_000 }] });
    const controller = new AbortController();
    const pending = model.generate({
      messages: [{ role: 'user', content: 'x' }],
      maxOutputTokens: 5,
      signal: controller.signal,
    });
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });
});
