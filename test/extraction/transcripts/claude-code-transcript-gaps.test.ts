import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseClaudeCodeTranscript } from '../../../src/extraction/transcripts/claude-code-transcript.js';
import { readTranscriptFile } from '../../../src/extraction/node/read-transcript.js';

/**
 * A Claude Code transcript with lines missing (torn, never written, a compact boundary whose logical
 * parent is gone) is read to its start: each link to a line not in the file is bridged to the line
 * before it in the file, and every line left out is counted (`skippedLines` for lines that cannot be
 * used, `offBranchLines` for messages off the latest branch) with a warning, never dropped silently.
 * Fixtures: test/fixtures/claude-code-gaps/ (hand-written), and the real Claude Code 2.1.332 compact
 * transcript with its boundary's logical parent removed.
 */

const fixture = (name: string): string =>
  fileURLToPath(new URL(`../../fixtures/claude-code-gaps/${name}`, import.meta.url));
const parse = (name: string) => parseClaudeCodeTranscript(readFileSync(fixture(name), 'utf8'));
const ids = (parsed: ReturnType<typeof parse>): string[] => parsed.conversation.messages.map((message) => message.id);

describe('Claude Code transcripts with missing lines', () => {
  it('a torn line in the middle and a torn last line: both counted, the chain goes on across the torn one', async () => {
    const parsed = parse('torn-lines.jsonl');
    expect(ids(parsed)).toEqual(['u1', 'a1', 'u2', 'a3']);
    expect(parsed.skippedLines).toBe(2);
    expect(parsed.offBranchLines).toBe(0);
    const warnings = parsed.warnings.join('\n');
    expect(warnings).toMatch(/line 3 is not JSON: skipped/);
    expect(warnings).toMatch(/line 6 \(the last\) is cut off/);
    expect(warnings).toMatch(/line 4 names a parent "a2" that is not in the file .*goes on from line 2/);
    // The file reader gives the same report.
    const read = await readTranscriptFile(fixture('torn-lines.jsonl'));
    expect(read.format).toBe('claude');
    expect(read.skippedLines).toBe(2);
    expect(read.conversation.messages.map((message) => message.id)).toEqual(ids(parsed));
  });

  it('a compact boundary whose logical parent is not in the file: the lines before it are still read', () => {
    const parsed = parse('boundary-parent-missing.jsonl');
    expect(ids(parsed)).toEqual(['u1', 'a1', 'cs', 'u2', 'a2']);
    expect(parsed.conversation.messages.map((message) => message.text)).toContain('Use pnpm, never npm.');
    expect(parsed.warnings).toEqual([
      expect.stringMatching(
        /^line 3, a compact boundary, names a logical parent "gone-before-compaction" that is not in the file .*goes on from line 2/,
      ),
    ]);
    expect(parsed.offBranchLines).toBe(0);
  });

  it('a compact boundary with no logical parent at all goes on from the line before it', () => {
    const parsed = parse('boundary-no-logical-parent.jsonl');
    expect(ids(parsed)).toEqual(['u1', 'a1', 'cs', 'u2', 'a2']);
    expect(parsed.warnings.join('\n')).toMatch(/line 3, a compact boundary, names no logical parent: .*line 2/);
  });

  it('a chain with two gaps, a message line without a uuid and a rewound branch: all read or counted', () => {
    const parsed = parse('chain-gaps.jsonl');
    expect(ids(parsed)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3', 'u4', 'a4']);
    expect(parsed.skippedLines).toBe(1);
    expect(parsed.offBranchLines).toBe(2);
    const warnings = parsed.warnings.join('\n');
    expect(warnings).toMatch(/line 7 is a user line without a usable uuid: skipped/);
    expect(warnings).toMatch(/line 8 names a parent "lost-1" .*goes on from line 6/);
    expect(warnings).toMatch(/line 10 names a parent "lost-2" .*goes on from line 9/);
    expect(warnings).toMatch(/2 user or assistant lines are not on the latest branch/);
    // Every message line of the file is in the conversation or counted.
    const messageLines = readFileSync(fixture('chain-gaps.jsonl'), 'utf8').trim().split('\n').length;
    expect(ids(parsed).length + parsed.skippedLines + parsed.offBranchLines!).toBe(messageLines);
  });

  it('the real Claude Code compact transcript with its boundary parent gone keeps the words said before compaction', () => {
    const real = readFileSync(
      fileURLToPath(new URL('../../fixtures/claude-code-2.1.332-compact.jsonl', import.meta.url)),
      'utf8',
    );
    const whole = parseClaudeCodeTranscript(real);
    const lines = real.split('\n');
    const boundary = lines.findIndex((line) => line.includes('"compact_boundary"'));
    const logicalParent = (JSON.parse(lines[boundary]!) as { logicalParentUuid: string }).logicalParentUuid;
    const cut = lines.filter((line) => !line.includes(`"uuid": "${logicalParent}"`));
    expect(cut).toHaveLength(lines.length - 1);
    const parsed = parseClaudeCodeTranscript(cut.join('\n'));
    expect(parsed.warnings.join('\n')).toMatch(/a compact boundary, names a logical parent .* goes on from line \d+/);
    // Only the removed line is missing from the conversation (when it was a message at all).
    const missing = whole.conversation.messages.filter(
      (message) => !parsed.conversation.messages.some((other) => other.id === message.id),
    );
    expect(missing.map((message) => message.id).filter((id) => id !== logicalParent)).toEqual([]);
    expect(parsed.conversation.messages.map((message) => message.text).join('\n')).toContain('my name is Ada');
  });

  it('a gap in every line: bounded warnings, the whole file read', () => {
    const lines = Array.from({ length: 200 }, (_, index) =>
      JSON.stringify({
        type: index % 2 === 0 ? 'user' : 'assistant',
        uuid: `m${index}`,
        parentUuid: `lost-${index}`,
        sessionId: 's',
        message: { id: `msg_${index}`, role: index % 2 === 0 ? 'user' : 'assistant', content: `message ${index}` },
      }),
    );
    const parsed = parseClaudeCodeTranscript(lines.join('\n'));
    expect(parsed.conversation.messages).toHaveLength(200);
    expect(parsed.warnings.length).toBeLessThanOrEqual(12);
    expect(parsed.warnings.at(-1)).toMatch(/and 190 more links to lines not in the file/);
  });
});
