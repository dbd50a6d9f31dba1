import { describe, expect, it } from 'vitest';
import { Engram } from '../src/index.js';
import { engramOver, useTemporaryStore } from './support/temporary-store.js';
import { expectEngramError } from './support/expect-engram-error.js';

/** `engram.recall` with `asOf` / `includeInvalid`, and `engram.supersedeChain`: one library entry each (issue 27). */

const PROJECT = 'project:github.com/acme/api';
const DAY = 86_400_000;
const opened = useTemporaryStore(Date.parse('2026-03-01T09:00:00Z'));

/** Node 18 on March 1st, replaced by Node 22 on March 10th; the release day never changed. */
async function history(): Promise<{ engram: Engram; old: string; current: string; steady: string }> {
  const engram = engramOver(opened, { defaultScope: PROJECT, onWarning: () => {} });
  const old = await engram.remember({ content: 'The API server runs on Node 18.' });
  const steady = await engram.remember({ content: 'The API server is released on Tuesdays.' });
  opened.clock.now += 9 * DAY;
  const current = await engram.remember({ content: 'The API server runs on Node 22 since the upgrade.' });
  await engram.invalidate(old.id, { supersededBy: current.id });
  opened.clock.now += DAY;
  return { engram, old: old.id, current: current.id, steady: steady.id };
}

const ids = (result: { memories: Array<{ memory: { id: string } }> }): string[] =>
  result.memories.map((entry) => entry.memory.id).sort();

describe('engram.recall: what was true then', () => {
  it('leaves invalid memories out by default, adds them with includeInvalid, and answers as of a date', async () => {
    const { engram, old, current, steady } = await history();
    expect(ids(await engram.recall('API server Node'))).toEqual([current, steady].sort());
    expect(ids(await engram.recall('API server Node', { includeInvalid: true }))).toEqual(
      [old, current, steady].sort(),
    );
    // On March 5th Node 18 held and Node 22 was not yet known; a bare date is the end of that day.
    expect(ids(await engram.recall('API server Node', { asOf: '2026-03-05' }))).toEqual([old, steady].sort());
    expect(ids(await engram.recall('API server Node', { asOf: '2026-03-10T12:00:00Z' }))).toEqual(
      [current, steady].sort(),
    );
    // A memory that matches no word of the query does not come back just for being invalid.
    expect(ids(await engram.recall('Tuesdays release', { includeInvalid: true }))).toEqual([steady]);
  });

  it('refuses a bad date or flag before recall, so nothing is recorded as accessed', async () => {
    const { engram, steady } = await history();
    for (const asOf of ['yesterday', '2026-02-30', '2026-13-01', '']) {
      await expectEngramError(engram.recall('API server Node', { asOf }), 'INVALID_INPUT');
    }
    await expectEngramError(engram.recall('API server Node', { includeInvalid: 'yes' as never }), 'INVALID_INPUT');
    expect((await engram.get(steady)).hitCount).toBe(0);
  });
});

describe('engram.supersedeChain', () => {
  it('says what replaced a memory and what it replaced, by whom, within the scopes', async () => {
    const { engram, old, current, steady } = await history();
    const chain = await engram.supersedeChain(old);
    expect(chain.replacedBy).toEqual([
      expect.objectContaining({ from: old, to: current, by: 'library', at: expect.any(String) }),
    ]);
    expect(chain.replaces).toEqual([]);
    expect((await engram.supersedeChain(current)).replaces).toEqual([
      expect.objectContaining({ from: old, to: current }),
    ]);
    expect(await engram.supersedeChain(steady)).toEqual({ replacedBy: [], replaces: [] });
    await expectEngramError(engram.supersedeChain(old, ['global']), 'NOT_FOUND');
    await expectEngramError(engram.supersedeChain('mem_missing'), 'NOT_FOUND');
    await expectEngramError(engram.supersedeChain(old, []), 'INVALID_SCOPE');
  });
});
