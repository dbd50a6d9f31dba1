import { afterEach, describe, expect, it } from 'vitest';
import { Engram, WARNING_CODES, describeWarning, isWarningCode } from '../../src/index.js';
import { warningNotes } from '../../src/kernel/warnings.js';
import { SECRET_CASES } from '../fixtures/secrets-corpus.js';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.js';

let opened: TemporaryStore | undefined;
afterEach(async () => {
  await opened?.close();
  opened = undefined;
});

const aws = SECRET_CASES.find((entry) => entry.kind === 'aws-access-key-id')!.secrets[0]!;

describe('typed warnings: one list of codes, one place that words them', () => {
  it('what a write carries are codes of the list, and onWarning hears them in the shared words', async () => {
    opened = await openTemporaryStore(Date.parse('2026-03-01T00:00:00Z'));
    const heard: string[] = [];
    const engram = new Engram({ store: opened.store, onWarning: (warning) => heard.push(warning) });
    const saved = await engram.save({
      content: `The CI key is ${aws}. <private>the staging password is hunter2</private> Rotate it monthly.`,
    });
    expect(saved.warnings).toEqual(['secrets-redacted', 'private-content-removed']);
    expect(saved.warnings.every(isWarningCode)).toBe(true);
    expect(heard).toEqual([
      describeWarning({
        code: 'secrets-redacted',
        details: { subject: 'The memory', count: 1, kinds: ['aws-access-key-id'] },
      }),
      describeWarning({ code: 'private-content-removed', details: { subject: 'The memory', count: 1 } }),
    ]);
    expect(heard[0]).toBe(
      'secrets-redacted: The memory was stored with 1 secret(s) replaced by [REDACTED:<kind>] (aws-access-key-id).',
    );
    expect(heard.join('\n')).not.toContain(aws);
    const updated: string[] = [];
    const other = new Engram({ store: opened.store, onWarning: (warning) => updated.push(warning) });
    await other.update(saved.memory.id, { description: `key ${aws}` });
    expect(updated).toEqual([expect.stringMatching(new RegExp(`^secrets-redacted: Memory ${saved.memory.id} was`))]);
  });

  it('a bare code is worded from the table, an unknown string is shown as it is, details make it specific', () => {
    expect(describeWarning('vectors-missing')).toBe(
      'vectors-missing: the store has no vectors yet; run "engram reindex" (recall is full-text only)',
    );
    expect(describeWarning('recall-timed-out')).toBe('recall-timed-out');
    expect(describeWarning('made-up-warning')).toBe('made-up-warning');
    expect(describeWarning({ code: 'embedding-failed', details: { memories: 3 } })).toBe(
      'embedding-failed: 3 memories were saved without a vector; run "engram reindex" later.',
    );
    expect(describeWarning({ code: 'vectors-not-stored', details: { message: 'disk full' } })).toBe(
      'vectors-not-stored: disk full; run "engram reindex" later.',
    );
    expect(describeWarning({ code: 'extraction-queue-unavailable', details: { message: 'no jobs role' } })).toBe(
      'extraction-queue-unavailable: no jobs role',
    );
  });

  it('the codes are unique strings, and only they pass isWarningCode', () => {
    expect(new Set(WARNING_CODES).size).toBe(WARNING_CODES.length);
    for (const code of WARNING_CODES) expect(code).toMatch(/^[a-z]+(-[a-z]+)+$/);
    for (const value of ['', 'Secrets-Redacted', 42, null, undefined, {}]) expect(isWarningCode(value)).toBe(false);
  });

  it('notes for people drop full-text recall when no embedder is configured, and say each code once', () => {
    const warnings = ['vector-search-unavailable', 'embedding-failed', 'embedding-failed'];
    expect(warningNotes(warnings, { embedderConfigured: false })).toEqual([describeWarning('embedding-failed')]);
    expect(warningNotes(warnings, { embedderConfigured: true })).toEqual([
      describeWarning('vector-search-unavailable'),
      describeWarning('embedding-failed'),
    ]);
  });
});
