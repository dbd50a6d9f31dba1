import { describe, expect, it } from 'vitest';
import { Engram } from '../src/engram.js';
import { isEngramError } from '../src/kernel/errors.js';
import { openEngram } from '../src/node/open-engram.js';
import { openMemoryFolder } from './support/with-memory-support.js';
import { useClosedAfterTest } from './support/per-test.js';

const closeAfterTest = useClosedAfterTest();

describe('the Engram facade as a front door', () => {
  it('opens, remembers, recalls, injects, forgets, and closes by Symbol.asyncDispose', async () => {
    const folder = closeAfterTest(await openMemoryFolder());
    const opened = await openEngram({ cwd: folder.directory, env: folder.env, flags: { 'store.url': folder.store } });
    const { engram } = opened;
    expect(engram).toBeInstanceOf(Engram);
    const memory = await engram.remember({
      name: 'test-style',
      description: 'How tests are written',
      content: 'Integration tests use the real database, no mocks.',
      type: 'feedback',
    });
    const { memories } = await engram.recall('how do we write integration tests?');
    expect(memories.map((entry) => entry.memory.id)).toContain(memory.id);
    const context = await engram.inject('integration tests with the real database');
    expect(context.staticPart).toContain('test-style');
    expect(context.block).toContain('no mocks');
    await engram.forget(memory.id);
    expect((await engram.recall('integration tests real database')).memories).toHaveLength(0);
    await opened[Symbol.asyncDispose]();
    const error = await engram.list().catch((caught: unknown) => caught);
    expect(isEngramError(error)).toBe(true);
  });

  it('Engram.close() closes its store, twice without harm', async () => {
    const folder = closeAfterTest(await openMemoryFolder());
    const { engram } = await openEngram({
      cwd: folder.directory,
      env: folder.env,
      flags: { 'store.url': folder.store },
    });
    await engram.close();
    await engram[Symbol.asyncDispose]();
    await expect(engram.count()).rejects.toSatisfy(isEngramError);
  });
});
