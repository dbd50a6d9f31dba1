import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLanguageModel } from '../../src/adapters/models/create-language-model.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { Conversation } from '../../src/contracts/conversation.js';
import { Extractor } from '../../src/extraction/extractor.js';
import type { ExtractionRunReport, JobOutcome } from '../../src/extraction/extraction-report.js';
import type { LanguageModel } from '../../src/contracts/language-model.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import { answer, openExtractionFixture, PROJECT, turn, type ExtractionFixture } from '../support/extraction-support.js';
import { createExtractor } from '../../src/node/create-extractor.js';

let fixture: ExtractionFixture;
let server: LanguageModelServer;

afterEach(async () => {
  await server?.close();
  await fixture?.close();
});

/** The model the settings configure, through the real SDK, pointed at the loopback server. */
function modelFor(provider: 'anthropic' | 'openai-compatible', url: string): LanguageModel {
  const model: Settings['model'] =
    provider === 'anthropic'
      ? { ...DEFAULT_SETTINGS.model, provider, anthropicApiKey: 'sk-ant-test', anthropicBaseUrl: url, maxRetries: 0 }
      : {
          ...DEFAULT_SETTINGS.model,
          provider,
          openaiApiKey: 'sk-test',
          openaiBaseUrl: url,
          model: 'llama3.1',
          maxRetries: 0,
        };
  return createLanguageModel({ model }, { purpose: 'side' })!;
}

function reportsOf(outcomes: readonly JobOutcome[]): ExtractionRunReport[] {
  return outcomes.map((outcome) => {
    if (outcome.state !== 'done') throw new Error(`job ${outcome.job.key} ${outcome.state}: ${outcome.error}`);
    return outcome.report;
  });
}

const conversation = (messages: Conversation['messages']): Conversation => ({ sessionId: 'chat-42', messages });

describe('cheap mode through the Anthropic SDK', () => {
  beforeEach(async () => {
    fixture = await openExtractionFixture();
    server = await startAnthropicMessagesServer();
  });

  it('turns a scripted conversation into the expected memories, never re-extracts recalled ones, and replays add nothing', async () => {
    const tabs = await fixture.engram.remember({
      content: 'The user prefers tabs over spaces.',
      type: 'user',
      scope: 'global',
    });
    const model = modelFor('anthropic', server.url);
    const extractor = new Extractor({ engram: fixture.engram, model, autoStart: false });
    const turns = [
      ...turn(
        1,
        'We deploy on Fridays after the code freeze. Integration tests must hit the real database, no mocks. Tabs, as always.',
        'Understood.',
      ),
    ];
    server.script({
      message: {
        text: answer(
          { content: 'Deploys happen on Fridays, after the code freeze.', name: 'deploy-day' },
          {
            content: 'Integration tests use the real database, never mocks.',
            name: 'integration-tests-real-db',
            type: 'feedback',
            importance: 0.8,
          },
          { content: 'The user prefers tabs over spaces.', name: 'tabs', type: 'user', scope: 'user' },
        ),
      },
    });
    await extractor.afterTurn(conversation(turns), { recalled: [{ id: tabs.id }] });
    const [report] = reportsOf(await extractor.drain());

    expect(server.requests).toHaveLength(1);
    const wire = server.requests[0]!.body as Record<string, any>;
    expect(wire.max_tokens).toBe(2_000);
    expect(wire.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(wire.system[0].text).toContain('Answer with ONLY a JSON object {"memories": [...]}');
    const userMessage = wire.messages[0].content as string;
    expect(userMessage).toContain('<already_known>\n- [user] ');
    expect(userMessage).toContain('The user prefers tabs over spaces.');
    expect(userMessage).toContain('We deploy on Fridays');

    expect(report!.written.map((memory) => [memory.name, memory.action, memory.turnId])).toEqual([
      ['deploy-day', 'created', 'a1'],
      ['integration-tests-real-db', 'created', 'a1'],
    ]);
    expect(report!.dropped).toEqual([expect.objectContaining({ reason: 'already-known', knownId: tabs.id })]);
    expect(report!.usage.inputTokens + report!.usage.cacheWriteTokens).toBeGreaterThan(0);
    const stored = await fixture.engram.list({ scopes: [PROJECT] });
    expect(stored.map((memory) => memory.source)).toEqual([
      { sessionId: 'chat-42', turnId: 'a1', origin: 'extraction' },
      { sessionId: 'chat-42', turnId: 'a1', origin: 'extraction' },
    ]);
    expect(await fixture.engram.count({ scopes: ['global'] })).toBe(1);

    // Replaying the same turns: nothing queued, no request, no duplicate, in this process or a new one.
    expect(await extractor.afterTurn(conversation(turns))).toMatchObject({ status: 'nothing-new' });
    const restarted = new Extractor({
      engram: fixture.engram,
      model: modelFor('anthropic', server.url),
      autoStart: false,
    });
    expect(await restarted.afterTurn(conversation(turns))).toMatchObject({ status: 'nothing-new' });
    expect(await restarted.drain()).toEqual([]);
    expect(server.requests).toHaveLength(1);
    expect(await fixture.engram.count({ scopes: [PROJECT, 'global'] })).toBe(3);

    // The next turn restates a fact: dedupe on write updates it; the fixed prefix is read from the prompt cache.
    server.script({
      message: { text: answer({ content: 'Deploys happen on Fridays, after the code freeze.', name: 'deploy-day' }) },
    });
    await restarted.afterTurn(conversation([...turns, ...turn(2, 'Reminder: Friday deploys, after the freeze.')]));
    const [second] = reportsOf(await restarted.drain());
    expect(second!.written).toEqual([expect.objectContaining({ name: 'deploy-day', action: 'merged', turnId: 'a2' })]);
    expect(second!.usage.cacheReadTokens).toBeGreaterThan(1_000);
    expect((server.requests[1]!.body as any).messages[0].content).not.toContain('Integration tests must hit');
    expect(await fixture.engram.count({ scopes: [PROJECT, 'global'] })).toBe(3);
  });

  it('repairs or drops malformed answers with reasons, and the job still completes', async () => {
    const extractor = new Extractor({
      engram: fixture.engram,
      model: modelFor('anthropic', server.url),
      autoStart: false,
    });
    server.script(
      { message: { text: 'I looked carefully and found nothing worth remembering.' } },
      {
        message: {
          text: JSON.stringify([
            {
              type: 'project',
              content: 'Another project stores data in MongoDB.',
              scope: 'project:github.com/acme/other',
            },
            { kind: 'oops' },
            { type: 'wisdom', content: 'The mobile app targets iOS 17 and later.', importance: 7 },
          ]),
        },
      },
    );
    await extractor.afterTurn(conversation(turn(1, 'First.')));
    await extractor.afterTurn(conversation([...turn(1, 'First.'), ...turn(2, 'Docs use Docusaurus.')]));
    const first = reportsOf(await extractor.drain());
    await extractor.afterTurn(
      conversation([...turn(1, 'First.'), ...turn(2, 'Docs use Docusaurus.'), ...turn(3, 'iOS 17+.')]),
    );
    const second = reportsOf(await extractor.drain());
    const reports = [...first, ...second].filter((report) => report.status === 'extracted');
    expect(reports).toHaveLength(2);
    expect(reports[0]!.dropped).toEqual([expect.objectContaining({ reason: 'not-json' })]);
    expect(reports[0]!.written).toEqual([]);
    expect(reports[1]!.dropped.map((item) => item.reason)).toEqual(['scope-not-allowed', 'no-content']);
    expect(reports[1]!.written.map((memory) => memory.name)).toEqual(['the-mobile-app-targets-ios-17']);
    expect(reports[1]!.repairs).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/unknown-type-defaulted/),
        expect.stringMatching(/importance-scaled/),
      ]),
    );
    // Turns 1 and 2 were queued before the worker ran: one run, one request.
    expect(server.requests).toHaveLength(2);
    expect(first.map((report) => report.status)).toEqual(['extracted', 'already-done']);
  });
});

describe('cheap mode through the OpenAI SDK', () => {
  beforeEach(async () => {
    fixture = await openExtractionFixture();
    server = await startOpenAiChatCompletionsServer();
  });

  it('asks for an object in JSON mode (OpenAI allows no array at the root) and reads {"memories": [...]} as is', async () => {
    const extractor = new Extractor({
      engram: fixture.engram,
      model: modelFor('openai-compatible', server.url),
      autoStart: false,
    });
    const memories = JSON.parse(
      answer({ content: 'Pipeline bugs are tracked in the Linear project INGEST.', type: 'reference' }),
    );
    server.script({ message: { text: JSON.stringify({ memories }) } });
    await extractor.afterTurn(conversation(turn(1, 'File pipeline bugs in Linear, project INGEST.')));
    const [report] = reportsOf(await extractor.drain());
    expect(report!.written.map((memory) => memory.type)).toEqual(['reference']);
    expect(report!.repairs).toEqual([]);
    const wire = server.requests[0]!.body as Record<string, any>;
    expect(wire.response_format).toEqual({ type: 'json_object' });
    expect(wire.messages[0].content).toContain('{"memories": []}');
  });

  it('extracts from a scripted conversation and repairs a fenced answer', async () => {
    const extractor = new Extractor({
      engram: fixture.engram,
      model: modelFor('openai-compatible', server.url),
      autoStart: false,
    });
    server.script({
      message: {
        text:
          '```json\n' +
          answer({ content: 'Pipeline bugs are tracked in the Linear project INGEST.', type: 'reference' }) +
          '\n```',
      },
    });
    await extractor.afterTurn(conversation(turn(1, 'File pipeline bugs in Linear, project INGEST.')));
    const [report] = reportsOf(await extractor.drain());
    expect(report!.written.map((memory) => memory.type)).toEqual(['reference']);
    const wire = server.requests[0]!.body as Record<string, any>;
    expect(wire.max_tokens ?? wire.max_completion_tokens).toBe(2_000);
    expect(wire.messages[0].role).toBe('system');
    expect(JSON.stringify(wire.messages)).toContain('File pipeline bugs in Linear');
  });
});

describe('agent mode through the Anthropic SDK', () => {
  beforeEach(async () => {
    fixture = await openExtractionFixture();
    server = await startAnthropicMessagesServer();
  });

  function project(): string {
    const root = join(fixture.directory, 'project');
    mkdirSync(join(root, 'docs'), { recursive: true });
    writeFileSync(join(root, 'docs', 'deploy.md'), 'Deploys: Fridays after the freeze.\n');
    return root;
  }

  /** An agent-mode extractor over the Anthropic SDK, its tools sandboxed to `projectRoot`. */
  function agentExtractor(projectRoot: string) {
    return createExtractor({
      engram: fixture.engram,
      model: modelFor('anthropic', server.url),
      mode: 'agent',
      projectRoot,
      autoStart: false,
    });
  }

  const toolUse = (id: string, name: string, input: Record<string, unknown>) => ({
    message: { content: [{ type: 'tool_use' as const, id, name, input }] },
  });

  it('updates memory through the memory tool with sandboxed tools, given the manifest, within its turns', async () => {
    await fixture.engram.remember({
      content: 'Deploys happen on Thursdays.',
      name: 'deploy-day',
      description: 'When deploys happen',
      type: 'project',
    });
    const root = project();
    const extractor = agentExtractor(root);
    server.script(
      toolUse('toolu_1', 'read_file', { path: 'docs/deploy.md' }),
      toolUse('toolu_2', 'run_command', { command: 'cat ../../etc/passwd' }),
      toolUse('toolu_3', 'memory', {
        command: 'str_replace',
        path: '/memories/deploy-day.md',
        old_str: 'Deploys happen on Thursdays.',
        new_str: 'Deploys happen on Fridays, after the code freeze.',
      }),
      toolUse('toolu_4', 'memory', {
        command: 'create',
        path: '/memories/release-notes.md',
        file_text:
          '---\nname: release-notes\ndescription: Every release gets notes in CHANGELOG.md\ntype: feedback\n---\nEvery release gets notes in CHANGELOG.md.',
      }),
      { message: { text: 'Updated deploy-day and added release-notes.' } },
    );
    await extractor.afterTurn(
      conversation(
        turn(1, 'We moved deploys to Fridays, after the freeze. And every release needs notes in the changelog.'),
      ),
    );
    const [report] = reportsOf(await extractor.drain());

    expect(server.requests).toHaveLength(5);
    const first = server.requests[0]!.body as Record<string, any>;
    expect(first.tools.map((tool: { name: string }) => tool.name)).toEqual(
      expect.arrayContaining(['memory', 'read_file', 'search_files', 'run_command']),
    );
    expect(first.system[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(first.messages[0].content).toContain('/memories/deploy-day.md [project] When deploys happen');
    const results = (server.requests[2]!.body as any).messages.at(-1).content;
    expect(results[0]).toMatchObject({ type: 'tool_result', is_error: true });
    expect(JSON.stringify(results[0].content)).toMatch(/SANDBOX_DENIED/);
    expect(report!.agent).toEqual({
      stoppedBy: 'final-answer',
      toolCalls: [
        expect.objectContaining({ name: 'read_file', isError: false }),
        expect.objectContaining({ name: 'run_command', isError: true }),
        expect.objectContaining({ name: 'memory', command: 'str_replace', isError: false }),
        expect.objectContaining({ name: 'memory', command: 'create', isError: false }),
      ],
    });
    const memories = await fixture.engram.list({ scopes: [PROJECT] });
    expect(memories.map((memory) => memory.content).sort()).toEqual([
      'Deploys happen on Fridays, after the code freeze.',
      'Every release gets notes in CHANGELOG.md.',
    ]);
    const created = memories.find((memory) => memory.name === 'release-notes')!;
    expect(created.source).toMatchObject({ sessionId: 'chat-42', turnId: 'a1' });
  });

  it('refuses writes outside memory and tools it does not have, and changes nothing in the project', async () => {
    const root = project();
    const extractor = agentExtractor(root);
    server.script(
      toolUse('toolu_1', 'write_file', { path: 'docs/deploy.md', content: 'pwned' }),
      toolUse('toolu_2', 'run_command', { command: 'rm -rf docs' }),
      toolUse('toolu_3', 'run_command', { command: 'echo pwned > docs/deploy.md' }),
      toolUse('toolu_4', 'memory', { command: 'create', path: '/memories/../../docs/deploy.md', file_text: 'pwned' }),
      { message: { text: 'Nothing to keep.' } },
    );
    await extractor.afterTurn(conversation(turn(1, 'Anything?')));
    const [report] = reportsOf(await extractor.drain());
    expect(report!.agent!.toolCalls.map((call) => call.isError)).toEqual([true, true, true, true]);
    expect(readFileSync(join(root, 'docs', 'deploy.md'), 'utf8')).toBe('Deploys: Fridays after the freeze.\n');
    expect(await fixture.engram.count()).toBe(0);
  });

  it('stops at the turn cap', async () => {
    const extractor = new Extractor({
      engram: fixture.engram,
      model: modelFor('anthropic', server.url),
      mode: 'agent',
      autoStart: false,
    });
    server.script(
      ...Array.from({ length: 8 }, (_, index) => ({
        message: {
          content: [
            {
              type: 'tool_use' as const,
              id: `toolu_${index}`,
              name: 'memory',
              input: { command: 'view', path: '/memories' },
            },
          ],
        },
      })),
    );
    await extractor.afterTurn(conversation(turn(1, 'Anything?')));
    const [report] = reportsOf(await extractor.drain());
    expect(server.requests).toHaveLength(DEFAULT_SETTINGS.extraction.agentMaxTurns);
    expect(report!.agent!.stoppedBy).toBe('turn-cap');
    expect(report!.warnings.join(' ')).toMatch(/stopped after 5 turns/);
  });
});
