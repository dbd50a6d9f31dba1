import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import type { Conversation, ConversationMessage } from '../../src/contracts/conversation.js';
import { Extractor, type ExtractorOptions } from '../../src/extraction/extractor.js';
import { ScriptedLanguageModel, type ScriptedAnswer } from '../../src/testing/scripted-language-model.js';
import { perTest } from './per-test.js';
import { openTemporaryStore } from './temporary-store.js';

export const PROJECT = 'project:github.com/acme/app';

/** A real SQLite store and an Engram over it, on a clock the test moves. */
export interface ExtractionFixture {
  directory: string;
  path: string;
  store: SqliteMemoryStore;
  engram: Engram;
  settings: Settings;
  clock: { now: number };
  close(): Promise<void>;
}

/** Opens a fresh store in a temp folder; `settings` overrides parts of the defaults. */
export async function openExtractionFixture(
  overrides: { extraction?: Partial<Settings['extraction']>; jobs?: Partial<Settings['jobs']> } = {},
): Promise<ExtractionFixture> {
  const settings: Settings = {
    ...DEFAULT_SETTINGS,
    extraction: {
      ...DEFAULT_SETTINGS.extraction,
      retryBaseDelayMs: 1_000,
      retryMaxDelayMs: 60_000,
      ...overrides.extraction,
    },
    jobs: { ...DEFAULT_SETTINGS.jobs, ...overrides.jobs },
  };
  const opened = await openTemporaryStore(Date.UTC(2026, 0, 5, 10, 0, 0), {
    prefix: 'engram-extraction-',
    file: 'engram.db',
    jobs: settings.jobs,
  });
  const { store, clock } = opened;
  const now = (): Date => new Date(clock.now);
  const engram = new Engram({
    store,
    settings,
    defaultScope: PROJECT,
    readScopes: [PROJECT, 'global'],
    now,
    actor: 'test',
  });
  return { directory: opened.directory, path: opened.path, store, engram, settings, clock, close: opened.close };
}

/**
 * Opens a fresh {@link openExtractionFixture} before each test of the enclosing `describe` and
 * closes it after.
 */
export function useExtractionFixture(overrides: Parameters<typeof openExtractionFixture>[0] = {}): ExtractionFixture {
  return perTest(
    'useExtractionFixture: the fixture',
    () => openExtractionFixture(overrides),
    (fixture) => fixture.close(),
  );
}

/** A user message and the assistant's answer: one turn. */
export function turn(index: number, userText: string, assistantText = 'Noted.'): ConversationMessage[] {
  return [
    { id: `u${index}`, role: 'user', text: userText },
    { id: `a${index}`, role: 'assistant', text: assistantText },
  ];
}

/** A cheap-mode answer holding these memories (project scope, type project unless given). */
export function answer(
  ...memories: Array<{ content: string; name?: string; type?: string; scope?: string; importance?: number }>
): string {
  return JSON.stringify(
    memories.map((memory) => ({
      type: memory.type ?? 'project',
      name:
        memory.name ??
        memory.content
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '')
          .slice(0, 40),
      description: memory.content.slice(0, 100),
      content: memory.content,
      importance: memory.importance ?? 0.6,
      scope: memory.scope ?? 'project',
    })),
  );
}

/** An assistant message `id` saying `text` and calling the memory tool (call `t1`) with `input`: the main agent writing memory itself. */
export function memoryToolCall(id: string, text: string, input: Record<string, unknown>): ConversationMessage {
  return { id, role: 'assistant', text, toolCalls: [{ id: 't1', name: 'memory', input }] };
}

/** An extractor over the fixture's engram and clock, not started, whose model answers from `script`; and that model. */
export function scriptedExtractor(
  fixture: ExtractionFixture,
  script: readonly ScriptedAnswer[],
  options: Partial<ExtractorOptions> = {},
): { extractor: Extractor; model: ScriptedLanguageModel } {
  const model = new ScriptedLanguageModel({ script });
  return {
    model,
    extractor: new Extractor({
      engram: fixture.engram,
      model,
      autoStart: false,
      now: () => new Date(fixture.clock.now),
      ...options,
    }),
  };
}

/** A conversation of these messages, by default the session `chat-1`. */
export const session = (messages: Conversation['messages'], sessionId = 'chat-1'): Conversation => ({
  sessionId,
  messages,
});
