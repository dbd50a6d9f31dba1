import { afterEach, describe, expect, it } from 'vitest';
import { Engram } from '../../src/index.js';
import { checkMemoryPrivacy, isPrivacyChecked, privacyPassCount } from '../../src/privacy/memory-privacy.js';
import { SECRET_CASES } from '../fixtures/secrets-corpus.js';
import { openTemporaryStore, type TemporaryStore } from '../support/temporary-store.js';

/**
 * Issue 27: a memory goes through the privacy pass once between `Engram` and the row, and the
 * report of that pass is what the result and onWarning say. The store's own check stays the last
 * guard for a caller that writes to a store directly.
 */

let opened: TemporaryStore | undefined;
afterEach(async () => {
  await opened?.close();
  opened = undefined;
});

const aws = SECRET_CASES.find((entry) => entry.kind === 'aws-access-key-id')!.secrets[0]!;
const PROJECT = 'project:github.com/acme/app';

async function openEngram(): Promise<{ engram: Engram; heard: string[] }> {
  opened = await openTemporaryStore(Date.parse('2026-03-01T00:00:00Z'));
  const heard: string[] = [];
  const engram = new Engram({
    store: opened.store,
    defaultScope: PROJECT,
    onWarning: (warning) => heard.push(warning),
  });
  return { engram, heard };
}

/** How many privacy passes `write` ran. */
async function passesOf<T>(write: () => Promise<T>): Promise<{ passes: number; result: T }> {
  const before = privacyPassCount();
  const result = await write();
  return { passes: privacyPassCount() - before, result };
}

describe('privacy is checked once on the write path', () => {
  it('save, a restated save (merge), save without dedupe, update and import each scan a memory once', async () => {
    const { engram, heard } = await openEngram();
    const created = await passesOf(() => engram.save({ content: `The CI deploy key is ${aws}, kept in Vault.` }));
    expect(created.passes).toBe(1);
    expect(created.result.action).toBe('created');
    expect(created.result.memory.content).toContain('[REDACTED:aws-access-key-id]');
    expect(created.result.warnings).toContain('secrets-redacted');
    expect(created.result.redacted).toEqual(['aws-access-key-id']);
    expect(heard).toHaveLength(1);

    const merged = await passesOf(() =>
      engram.save({ content: `The CI deploy key is ${aws}, kept in Vault.`, description: 'Where the CI key lives' }),
    );
    expect(merged.result.action).toBe('merged');
    expect(merged.passes).toBe(1);
    expect(merged.result.memory.description).toBe('Where the CI key lives');

    const unmerged = await passesOf(() =>
      engram.save({ content: 'Release notes go in CHANGELOG.md.', name: 'release-notes' }, { dedupe: false }),
    );
    expect(unmerged.passes).toBe(1);

    const updated = await passesOf(() =>
      engram.update(unmerged.result.memory.id, { content: `Release notes go in CHANGELOG.md; token ${aws}.` }),
    );
    expect(updated.passes).toBe(1);
    expect(updated.result.content).not.toContain(aws);

    const inputs = [1, 2, 3].map((index) => ({
      id: `mem_imported_${index}`,
      scope: PROJECT,
      content: `Imported note ${index}: the key ${aws} rotates monthly.`,
    }));
    const imported = await passesOf(() => engram.importMemories(inputs));
    expect(imported.passes).toBe(3);
    expect(imported.result.created).toBe(3);
    expect(imported.result.redacted).toEqual(['aws-access-key-id']);
    for (const memory of await engram.list()) expect(JSON.stringify(memory)).not.toContain(aws);
    for (const memory of await engram.list())
      for (const entry of await engram.history(memory.id)) expect(JSON.stringify(entry)).not.toContain(aws);
  });

  it('a store written directly still checks every write itself (the last guard)', async () => {
    await openEngram();
    const store = opened!.store;
    const created = await passesOf(() =>
      store.create({ scope: PROJECT, content: `Direct write with ${aws} inside.` }, { actor: 'test' }),
    );
    expect(created.passes).toBe(1);
    expect(created.result.content).toContain('[REDACTED:aws-access-key-id]');
    const updated = await passesOf(() =>
      store.update(created.result.id, { description: `the key ${aws}` }, { actor: 'test' }),
    );
    expect(updated.passes).toBe(1);
    expect(updated.result.description).not.toContain(aws);
  });

  it('only the value the pass returned counts as checked: frozen, not its copies, not a value left unscanned', () => {
    const { value, report } = checkMemoryPrivacy({ content: `key ${aws}`, name: 'ci-key' });
    expect(report.secrets).toBe(1);
    expect(isPrivacyChecked(value)).toBe(true);
    expect(Object.isFrozen(value)).toBe(true);
    expect(isPrivacyChecked({ ...value })).toBe(false);
    expect(isPrivacyChecked({ content: value.content })).toBe(false);
    // Content over the limit is not scanned here (the store refuses it), so it is not marked.
    const long = checkMemoryPrivacy({ content: 'x'.repeat(50) }, { maxContentChars: 10 });
    expect(isPrivacyChecked(long.value)).toBe(false);
    expect(isPrivacyChecked(checkMemoryPrivacy({ content: 42 } as never).value)).toBe(false);
  });
});
