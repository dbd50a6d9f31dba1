import { describe, expect, it } from 'vitest';
import type { LanguageModelRequest } from '../../../src/contracts/language-model.js';
import { ScriptedLanguageModel } from '../../../src/testing/scripted-language-model.js';
import { converse, useTestChats, FRANKFURT_MEMORY } from '../../support/chat-support.js';
import { ninePartSummary } from '../../support/session-support.js';

const chats = useTestChats();
const chat = chats.start;

const RULE = 'Source files use named exports only.';
const FILES = { 'src/a.ts': 'export const a = 1;\n', '.claude/rules/source.md': `---\npaths: src/**\n---\n${RULE}\n` };
const sent = (request: LanguageModelRequest): string => JSON.stringify(request.messages);
const count = (text: string, part: string): number => text.split(part).length - 1;

describe('engram chat keeps the turn context through compactions', () => {
  it('injects an active path-scoped rule and a recalled memory again after /compact', async () => {
    const model = new ScriptedLanguageModel({
      script: [
        { content: [{ type: 'tool_use', id: 'toolu_read', name: 'read_file', input: { path: 'src/a.ts' } }] },
        'Read it.',
        // Long enough that a summary is smaller than the conversation (a compaction never grows it).
        `Second answer. ${'The deploy scripts live in ops/ and target one region at a time. '.repeat(60)}`,
        ninePartSummary('The user looked at a source file.'),
        'After compaction.',
      ],
    });
    const session = await chat({ model, files: FILES });
    await session.opened.engram.remember(FRANKFURT_MEMORY);
    await converse(
      session,
      ['Where do we deploy the Frankfurt service? Look at the first source file.', 'Read it.'],
      ['What else?', 'Second answer.'],
    );
    // The read made the rule active: the next turn carries it, once.
    expect(count(sent(model.requests[2]!), RULE)).toBe(1);
    expect(count(sent(model.requests[2]!), 'eu-central-1')).toBe(1);
    session.type('/compact');
    await session.waitFor(/Compacted \(summary\)/);
    session.type('Frankfurt again: what now?');
    await session.waitFor('After compaction.');
    const after = sent(model.requests[4]!);
    expect(after).not.toContain('What else?');
    expect(count(after, RULE)).toBe(1);
    expect(count(after, 'eu-central-1')).toBe(1);
    // Still listed once per turn it was injected in.
    expect(session.agent.memoryReport().recalled.map((memory) => memory.turns)).toEqual([2]);
  });

  it('injects a rule again after microcompaction dropped the meta message that held it', async () => {
    let clock = Date.parse('2025-03-01T10:00:00Z');
    const model = new ScriptedLanguageModel({ script: ['One.', 'Two.', 'Three.'] });
    const session = await chat({ model, files: FILES, now: () => new Date(clock) });
    session.type('Please look at src/a.ts with me.');
    await session.waitFor('One.');
    expect(count(sent(model.requests[0]!), RULE)).toBe(1);
    // Past session.microcompactIdleMinutes (60): the next request drops the old meta messages.
    clock += 61 * 60_000;
    session.type('Anything else?');
    await session.waitFor('Two.');
    expect(sent(model.requests[1]!)).not.toContain(RULE);
    expect(session.agent.session.stats.microcompactions).toBe(1);
    session.type('And now?');
    await session.waitFor('Three.');
    expect(count(sent(model.requests[2]!), RULE)).toBe(1);
  });
});
