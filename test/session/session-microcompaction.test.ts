import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/node/load-settings.js';
import { EngramError } from '../../src/kernel/errors.js';
import {
  contextEditingFor,
  microcompact,
  OLD_TOOL_RESULT_PLACEHOLDER,
  type MicrocompactionInput,
} from '../../src/session/microcompaction.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { ContentBlock, ToolResultBlock } from '../../src/contracts/language-model.js';
import type { SessionMessage } from '../../src/contracts/session-message.js';

const START = Date.parse('2026-03-01T09:00:00.000Z');
const MINUTE = 60_000;

/** A session: a compaction summary, then `rounds` of user text (with a meta memory context before it), tool use, tool result, answer. */
function session(rounds: number, options: { toolName?: (round: number) => string } = {}): SessionMessage[] {
  const messages: SessionMessage[] = [];
  let clock = START;
  const add = (message: Omit<SessionMessage, 'uuid' | 'timestamp'>): void => {
    clock += 1_000;
    messages.push({ uuid: `m${messages.length}`, timestamp: new Date(clock).toISOString(), ...message });
  };
  add({ role: 'user', content: 'Summary of the work so far.', meta: true, compactSummary: true });
  for (let round = 1; round <= rounds; round += 1) {
    add({ role: 'user', content: `<memory_context>memories for round ${round}</memory_context>`, meta: true });
    add({ role: 'user', content: `Please look at file ${round}.` });
    add({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading it.' },
        {
          type: 'tool_use',
          id: `toolu_${round}`,
          name: options.toolName?.(round) ?? 'read_file',
          input: { path: `f${round}` },
        },
      ],
    });
    add({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          toolUseId: `toolu_${round}`,
          content: `content of file ${round} `.repeat(50),
          ...(round === 2 ? { isError: true } : {}),
        },
      ],
    });
    add({ role: 'assistant', content: `File ${round} is fine.` });
  }
  return messages;
}

function lastAssistantTime(messages: readonly SessionMessage[]): number {
  return Date.parse([...messages].reverse().find((message) => message.role === 'assistant')!.timestamp);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

function toolResults(messages: readonly SessionMessage[]): ToolResultBlock[] {
  return messages.flatMap((message) =>
    typeof message.content === 'string'
      ? []
      : message.content.filter((block): block is ToolResultBlock => block.type === 'tool_result'),
  );
}

/** Every tool_use is answered by a tool_result with its id in the very next message, and every tool_result answers the tool_use just before it. */
function expectPairing(messages: readonly SessionMessage[]): void {
  for (const [index, message] of messages.entries()) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content) {
      if (block.type === 'tool_use') {
        const next = messages[index + 1];
        expect(
          next &&
            typeof next.content !== 'string' &&
            next.content.some((candidate) => candidate.type === 'tool_result' && candidate.toolUseId === block.id),
        ).toBe(true);
      }
      if (block.type === 'tool_result') {
        const previous = messages[index - 1];
        expect(
          previous &&
            typeof previous.content !== 'string' &&
            previous.content.some((candidate) => candidate.type === 'tool_use' && candidate.id === block.toolUseId),
        ).toBe(true);
      }
    }
  }
}

function run(messages: readonly SessionMessage[], overrides: Partial<MicrocompactionInput> = {}) {
  return microcompact(messages, {
    now: new Date(lastAssistantTime(messages) + 61 * MINUTE),
    idleMinutes: 60,
    keepRecent: 5,
    ...overrides,
  });
}

describe('microcompact: when it fires', () => {
  it('fires only when more than idleMinutes passed since the last assistant message (injected clock)', () => {
    const messages = deepFreeze(session(8));
    const last = lastAssistantTime(messages);
    for (const elapsed of [0, 30 * MINUTE, 60 * MINUTE]) {
      const result = microcompact(messages, { now: new Date(last + elapsed), idleMinutes: 60, keepRecent: 5 });
      expect(result.changed).toBe(false);
      expect(result.messages).toEqual(messages);
      expect(result.messages).not.toBe(messages);
    }
    const fired = microcompact(messages, { now: new Date(last + 60 * MINUTE + 1), idleMinutes: 60, keepRecent: 5 });
    expect(fired.changed).toBe(true);
  });

  it('uses lastAssistantAt when given, and does nothing before any assistant message', () => {
    const messages = deepFreeze(session(8));
    const now = new Date(lastAssistantTime(messages) + 2 * MINUTE);
    expect(microcompact(messages, { now, idleMinutes: 60, keepRecent: 5 }).changed).toBe(false);
    expect(
      microcompact(messages, {
        now,
        lastAssistantAt: new Date(now.getTime() - 61 * MINUTE),
        idleMinutes: 60,
        keepRecent: 5,
      }).changed,
    ).toBe(true);
    const onlyUser = deepFreeze([session(1)[1]!]);
    expect(
      microcompact(onlyUser, { now: new Date(START + 1_000 * MINUTE), idleMinutes: 60, keepRecent: 0 }),
    ).toMatchObject({ changed: false, droppedMeta: 0 });
  });
});

describe('microcompact: what it clears', () => {
  it('drops meta messages first, keeps the compaction summary, and clears tool results older than the most recent keepRecent', () => {
    const messages = deepFreeze(session(8));
    const result = run(messages);
    expect(result.droppedMeta).toBe(8);
    expect(result.clearedToolResults).toBe(3);
    expect(result.messages[0]).toBe(messages[0]);
    expect(result.messages.filter((message) => message.meta && !message.compactSummary)).toEqual([]);
    const results = toolResults(result.messages);
    expect(results.map((block) => block.toolUseId)).toEqual([
      'toolu_1',
      'toolu_2',
      'toolu_3',
      'toolu_4',
      'toolu_5',
      'toolu_6',
      'toolu_7',
      'toolu_8',
    ]);
    expect(results.slice(0, 3).map((block) => block.content)).toEqual([
      OLD_TOOL_RESULT_PLACEHOLDER,
      OLD_TOOL_RESULT_PLACEHOLDER,
      OLD_TOOL_RESULT_PLACEHOLDER,
    ]);
    expect(results[1]!.isError).toBe(true);
    expect(results.slice(3)).toEqual(toolResults(messages).slice(3));
    expectPairing(result.messages);
  });

  it('keeps exactly keepRecent tool results', () => {
    const messages = deepFreeze(session(8));
    for (const keepRecent of [0, 1, 5, 8, 20]) {
      const results = toolResults(run(messages, { keepRecent }).messages);
      const kept = results.filter((block) => block.content !== OLD_TOOL_RESULT_PLACEHOLDER);
      expect(kept.length).toBe(Math.min(8, keepRecent));
      expect(kept).toEqual(toolResults(messages).slice(8 - Math.min(8, keepRecent)));
    }
  });

  it('drops meta messages even when no tool result is old enough to clear', () => {
    const result = run(deepFreeze(session(3)), { keepRecent: 5 });
    expect(result).toMatchObject({ changed: true, droppedMeta: 3, clearedToolResults: 0 });
  });

  it('keeps a meta message that carries tool blocks, and the one that keeps the list opening with the user', () => {
    const base = session(2);
    const withToolMeta = deepFreeze(
      base.map((message) => (message.uuid === 'm4' ? { ...message, meta: true } : message)),
    );
    const result = run(withToolMeta, { keepRecent: 0 });
    expect(result.messages.some((message) => message.uuid === 'm4')).toBe(true);
    expectPairing(result.messages);

    const opening = deepFreeze([
      { uuid: 'a', role: 'user', content: 'reminder', meta: true, timestamp: new Date(START).toISOString() },
      { uuid: 'b', role: 'assistant', content: 'ok', timestamp: new Date(START + 1_000).toISOString() },
    ] satisfies SessionMessage[]);
    const kept = microcompact(opening, { now: new Date(START + 120 * MINUTE), idleMinutes: 60, keepRecent: 0 });
    expect(kept.messages.map((message) => message.uuid)).toEqual(['a', 'b']);
    expect(kept.changed).toBe(false);
  });

  it('never clears the results of excluded tools, and leaves tool results alone when the provider clears them', () => {
    const messages = deepFreeze(session(6, { toolName: (round) => (round === 1 ? 'memory' : 'read_file') }));
    const excluded = run(messages, { keepRecent: 0, excludeTools: ['memory'] });
    expect(toolResults(excluded.messages)[0]).toEqual(toolResults(messages)[0]);
    expect(excluded.clearedToolResults).toBe(5);
    const serverSide = run(messages, { keepRecent: 0, clearToolResults: false });
    expect(serverSide).toMatchObject({ clearedToolResults: 0, droppedMeta: 6, changed: true });
    expect(toolResults(serverSide.messages)).toEqual(toolResults(messages));
  });
});

describe('microcompact: what it never does', () => {
  it('is idempotent: a second run changes nothing and gives the same bytes', () => {
    const messages = deepFreeze(session(10));
    const first = run(messages);
    const second = microcompact(deepFreeze(first.messages), {
      now: new Date(lastAssistantTime(messages) + 61 * MINUTE),
      idleMinutes: 60,
      keepRecent: 5,
    });
    expect(second).toMatchObject({ changed: false, clearedToolResults: 0, droppedMeta: 0 });
    expect(JSON.stringify(second.messages)).toBe(JSON.stringify(first.messages));
    // Later, with more turns added, the earlier placeholders stay byte-identical.
    const later = run(
      deepFreeze([
        ...first.messages,
        ...session(2)
          .slice(1)
          .map((message) => ({
            ...message,
            uuid: `late-${message.uuid}`,
            timestamp: new Date(START + 500 * MINUTE).toISOString(),
          })),
      ]),
    );
    expect(JSON.stringify(later.messages.slice(0, 5))).toBe(JSON.stringify(first.messages.slice(0, 5)));
  });

  it('never mutates its input (deep-frozen) and reuses the messages it leaves alone', () => {
    const messages = deepFreeze(session(8));
    const before = JSON.stringify(messages);
    const result = run(messages, { keepRecent: 2 });
    expect(JSON.stringify(messages)).toBe(before);
    const untouched = result.messages.filter((message) => messages.includes(message));
    expect(untouched.length).toBe(result.messages.length - result.clearedToolResults);
  });

  it('never touches messages at or after protectFrom', () => {
    const messages = deepFreeze(session(8));
    const protectFrom = messages.findIndex((message) => message.uuid === 'm26'); // the meta message of round 6
    const result = run(messages, { keepRecent: 0, protectFrom });
    const tail = messages.slice(protectFrom);
    expect(result.messages.slice(result.messages.length - tail.length)).toEqual(tail);
    for (const message of tail) expect(result.messages).toContain(message);
    expect(result.clearedToolResults).toBe(5);
    expect(result.droppedMeta).toBe(5);
    expectPairing(result.messages);
    // protectFrom 0 protects everything.
    expect(run(messages, { keepRecent: 0, protectFrom: 0 })).toMatchObject({ changed: false });
  });

  it("keeps tool_use / tool_result pairs and the results' ids over many random sessions", () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let trial = 0; trial < 200; trial += 1) {
      const messages: SessionMessage[] = [];
      let clock = START;
      let toolId = 0;
      const push = (role: 'user' | 'assistant', content: string | ContentBlock[], meta = false): void => {
        clock += 1_000;
        messages.push({
          uuid: `u${messages.length}`,
          role,
          content,
          timestamp: new Date(clock).toISOString(),
          ...(meta ? { meta } : {}),
        });
      };
      push('user', 'start');
      for (let step = Math.floor(random() * 12); step > 0; step -= 1) {
        if (random() < 0.3) push('user', 'injected', true);
        const calls = Math.floor(random() * 3);
        const ids = Array.from({ length: calls }, () => `toolu_${(toolId += 1)}`);
        push('assistant', [
          { type: 'text', text: 'x' },
          ...ids.map((id) => ({ type: 'tool_use' as const, id, name: random() < 0.2 ? 'memory' : 'read', input: {} })),
        ]);
        if (calls > 0)
          push(
            'user',
            ids.map((id) => ({ type: 'tool_result' as const, toolUseId: id, content: `result ${id}` })),
            random() < 0.1,
          );
        else push('user', 'go on');
      }
      deepFreeze(messages);
      const input = {
        now: new Date(clock + 61 * MINUTE),
        idleMinutes: 60,
        keepRecent: Math.floor(random() * 4),
        protectFrom: Math.floor(random() * (messages.length + 1)),
        excludeTools: random() < 0.5 ? ['memory'] : [],
      };
      const result = microcompact(messages, input);
      expectPairing(result.messages);
      expect(toolResults(result.messages).map((block) => block.toolUseId)).toEqual(
        toolResults(messages).map((block) => block.toolUseId),
      );
      expect(result.messages.slice(result.messages.length - (messages.length - input.protectFrom))).toEqual(
        messages.slice(input.protectFrom),
      );
      expect(result.messages[0]?.role).toBe('user');
      // The protected tail moved up by the meta messages dropped before it.
      expect(
        microcompact(result.messages, { ...input, protectFrom: input.protectFrom - result.droppedMeta }).changed,
      ).toBe(false);
    }
  });
});

describe('microcompact: bad input', () => {
  const messages = deepFreeze(session(3));
  const now = new Date(START + 1_000 * MINUTE);
  const bad: Array<[string, unknown, Partial<MicrocompactionInput> | undefined]> = [
    ['messages not a list', 'nope', {}],
    ['no input', messages, undefined],
    ['invalid now', messages, { now: new Date(Number.NaN) }],
    ['now not a Date', messages, { now: '2026-03-01' as never }],
    ['invalid lastAssistantAt', messages, { lastAssistantAt: new Date('garbage') }],
    ['negative idleMinutes', messages, { idleMinutes: -1 }],
    ['NaN idleMinutes', messages, { idleMinutes: Number.NaN }],
    ['fractional keepRecent', messages, { keepRecent: 1.5 }],
    ['negative keepRecent', messages, { keepRecent: -1 }],
    ['protectFrom past the end', messages, { protectFrom: messages.length + 1 }],
    ['negative protectFrom', messages, { protectFrom: -1 }],
    ['message without content', [{ uuid: 'x', role: 'user', timestamp: 'x' }], {}],
  ];
  for (const [name, list, overrides] of bad) {
    it(`refuses ${name} with INVALID_INPUT and changes nothing`, () => {
      const before = JSON.stringify(list);
      const input = overrides === undefined ? undefined : { now, idleMinutes: 60, keepRecent: 5, ...overrides };
      let caught: unknown;
      try {
        microcompact(list as SessionMessage[], input as MicrocompactionInput);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(EngramError);
      expect((caught as EngramError).code).toBe('INVALID_INPUT');
      expect(JSON.stringify(list)).toBe(before);
    });
  }
});

describe('contextEditingFor', () => {
  const on = (session: Partial<Settings['session']>): Settings => ({
    ...DEFAULT_SETTINGS,
    session: { ...DEFAULT_SETTINGS.session, ...session },
  });

  it('is off by default and asks for clear_tool_uses keeping microcompactKeepRecent, never clearing the memory tool, when on', () => {
    expect(contextEditingFor(DEFAULT_SETTINGS)).toBeUndefined();
    expect(contextEditingFor(on({ serverContextEditing: true }))).toEqual({
      clearToolUses: { keepToolUses: 5, excludeTools: ['memory'] },
    });
    expect(
      contextEditingFor(on({ serverContextEditing: true, microcompactKeepRecent: 2 }))?.clearToolUses.keepToolUses,
    ).toBe(2);
    // Only a real boolean true turns it on (the loader passes config values through as they are).
    expect(contextEditingFor(on({ serverContextEditing: 'yes' as never }))).toBeUndefined();
  });

  it('is turned on from a config file', async () => {
    const home = await mkdtemp(join(tmpdir(), 'engram-microcompaction-'));
    try {
      await writeFile(join(home, 'config.json'), JSON.stringify({ session: { serverContextEditing: true } }));
      const { settings } = loadSettings({ cwd: home, env: { ENGRAM_HOME: home } });
      expect(contextEditingFor(settings)?.clearToolUses.excludeTools).toEqual(['memory']);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
