import { expect } from 'vitest';
import type { ChangeFeed, FeedChange } from '../../contracts/memory-store-changes.js';
import { expectEngramError, SUITE_ACTOR, storeCaseGroup } from '../store-suite-support.js';

const SCOPE = 'project:feed';

/** Every change after `cursor`, page by page, and the cursor after the last. */
async function readAll(
  feed: ChangeFeed,
  cursor: string,
  limit = 1_000,
): Promise<{ changes: FeedChange[]; cursor: string }> {
  const changes: FeedChange[] = [];
  for (let pages = 0; pages < 10_000; pages += 1) {
    const page = await feed.read(cursor, limit);
    changes.push(...page.changes);
    cursor = page.cursor;
    if (!page.more) return { changes, cursor };
  }
  throw new Error('The feed never said it was done.');
}

export const changeFeedCases = storeCaseGroup({
  title: 'change feed',
  roles: ['changes'],
  cases: [
    {
      name: 'the feed lists every change after a cursor in commit order, and none from before it',
      async run({ store }) {
        const early = await store.create({ scope: SCOPE, content: 'Written before the cursor.' }, SUITE_ACTOR);
        const head = await store.changes.head();
        const first = await store.create({ scope: SCOPE, content: 'The build runs on Node 22.' }, SUITE_ACTOR);
        await store.update(first.id, { importance: 0.9 }, SUITE_ACTOR);
        await store.recordAccess([first.id], new Date().toISOString());
        const second = await store.create(
          { scope: 'global', content: 'The user writes British English.' },
          SUITE_ACTOR,
        );
        await store.archive(second.id, SUITE_ACTOR);
        await store.delete(early.id, SUITE_ACTOR);
        const { changes, cursor } = await readAll(store.changes, head);
        // At least once: a change may come again, never out of order, never one from before the cursor.
        const distinct = changes.filter(
          (change, index) => changes.findIndex((other) => other.changeId === change.changeId) === index,
        );
        expect(distinct.map((change) => [change.memoryId, change.action])).toEqual([
          [first.id, 'create'],
          [first.id, 'update'],
          [second.id, 'create'],
          [second.id, 'archive'],
          [early.id, 'delete'],
        ]);
        for (const change of distinct) {
          expect(change.actor).toBe(SUITE_ACTOR.actor);
          expect(await store.getChange(change.changeId)).toMatchObject({
            memoryId: change.memoryId,
            action: change.action,
          });
        }
        const later = await store.create({ scope: SCOPE, content: 'Deploys go out on Tuesdays.' }, SUITE_ACTOR);
        const after = await readAll(store.changes, cursor);
        expect(after.changes.map((change) => change.memoryId)).toContain(later.id);
        expect(after.changes.map((change) => change.memoryId)).not.toContain(early.id);
      },
    },
    {
      name: 'the feed pages by limit and says when more follows; a bad limit or cursor is refused',
      async run({ store }) {
        const head = await store.changes.head();
        const created = await store.createMany(
          Array.from({ length: 25 }, (_, index) => ({ scope: SCOPE, content: `Paged fact number ${index}.` })),
          SUITE_ACTOR,
        );
        const pages: number[] = [];
        const seen: string[] = [];
        let cursor = head;
        for (;;) {
          const page = await store.changes.read(cursor, 10);
          pages.push(page.changes.length);
          seen.push(...page.changes.map((change) => change.memoryId));
          cursor = page.cursor;
          if (!page.more) break;
        }
        expect(pages.slice(0, 2)).toEqual([10, 10]);
        expect(new Set(seen)).toEqual(new Set(created.map((memory) => memory.id)));
        for (const limit of [0, -1, 1.5, 10_001, Number.NaN])
          await expectEngramError(() => store.changes.read(head, limit), 'INVALID_INPUT');
        for (const bad of ['', 'not-a-cursor', 'sqlite:abc', 'postgres:-1', '../../etc'])
          await expectEngramError(() => store.changes.read(bad, 10), 'CONFLICT');
      },
    },
    {
      name: 'a purge of the newest entries leaves no later change unseen: listed, or the cursor refused as stale',
      async run({ store }) {
        const memory = await store.create({ scope: SCOPE, content: 'The staging token rotates weekly.' }, SUITE_ACTOR);
        await store.update(memory.id, { importance: 0.8 }, SUITE_ACTOR);
        const { cursor } = await readAll(store.changes, await store.changes.head());
        await store.purge(memory.id, SUITE_ACTOR);
        const next = await store.create(
          { scope: SCOPE, content: 'The release branch is cut on Fridays.' },
          SUITE_ACTOR,
        );
        let listed: string[] | undefined;
        try {
          listed = (await readAll(store.changes, cursor)).changes.map(
            (change) => `${change.memoryId}:${change.action}`,
          );
        } catch (error) {
          expect((error as { code?: string }).code).toBe('CONFLICT');
        }
        if (listed !== undefined)
          expect(listed).toEqual(expect.arrayContaining([`${memory.id}:purge`, `${next.id}:create`]));
      },
    },
    {
      name: 'writers committing at once in any order: a reader following the feed sees every change',
      async run({ store }) {
        let cursor = await store.changes.head();
        const seen = new Set<string>();
        let writing = true;
        const reader = (async () => {
          while (writing) {
            const page = await readAll(store.changes, cursor, 50);
            for (const change of page.changes) seen.add(change.memoryId);
            cursor = page.cursor;
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        })();
        const written = (
          await Promise.all(
            Array.from({ length: 8 }, async (_, writer) => {
              const ids: string[] = [];
              for (let index = 0; index < 15; index += 1)
                ids.push(
                  (await store.create({ scope: SCOPE, content: `Writer ${writer} fact ${index}.` }, SUITE_ACTOR)).id,
                );
              return ids;
            }),
          )
        ).flat();
        writing = false;
        await reader;
        for (const change of (await readAll(store.changes, cursor)).changes) seen.add(change.memoryId);
        expect(written.filter((id) => !seen.has(id))).toEqual([]);
      },
      timeoutMs: 60_000,
    },
  ],
});
