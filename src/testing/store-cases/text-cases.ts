import { expect } from 'vitest';
import { expectEngramError, fingerprint, SUITE_ACTOR, storeCaseGroup } from '../store-suite-support.js';

// Text that has no UTF-8 form (a lone UTF-16 surrogate) is refused by every backend alike, on every
// write; well-formed text outside the BMP (emoji, rare CJK) round-trips exactly.

const LONE = ['\uD83D', '\uDE00', 'a\uD800b', 'end \uDBFF', '\uDC00 start'];

export const textCases = storeCaseGroup({
  title: 'text encoding',
  roles: [],
  cases: [
    {
      name: 'a lone surrogate is refused on create, update and import; well-formed astral text round-trips',
      async run({ store }) {
        const kept = await store.create(
          { scope: 'project:text', content: 'Deploy 🚀 with 𠮷 and é.', description: 'Emoji 😀 ok' },
          SUITE_ACTOR,
        );
        expect(await store.get(kept.id)).toMatchObject({
          content: 'Deploy 🚀 with 𠮷 and é.',
          description: 'Emoji 😀 ok',
        });
        const before = await fingerprint(store, ['project:text']);
        for (const text of LONE) {
          await expectEngramError(
            () => store.create({ scope: 'project:text', content: `x ${text}` }, SUITE_ACTOR),
            'INVALID_INPUT',
          );
          await expectEngramError(
            () => store.create({ scope: 'project:text', content: 'ok', description: `d ${text}` }, SUITE_ACTOR),
            'INVALID_INPUT',
          );
          await expectEngramError(() => store.update(kept.id, { content: `x ${text}` }, SUITE_ACTOR), 'INVALID_INPUT');
          await expectEngramError(
            () =>
              store.importMany(
                [{ id: 'mem_text_import', scope: 'project:text', content: `x ${text}` }],
                { onExisting: 'fail' },
                SUITE_ACTOR,
              ),
            'INVALID_INPUT',
          );
        }
        expect(await fingerprint(store, ['project:text'])).toEqual(before);
      },
    },
  ],
});
