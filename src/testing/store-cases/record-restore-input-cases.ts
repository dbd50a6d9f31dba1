// records.restore fed malformed, oversized and hostile records: the malformed ones are refused
// and change nothing; hostile text is stored verbatim and never run.
import { expect } from 'vitest';
import type { Memory } from '../../memory/memory.js';
import type { StoreRecords } from '../../contracts/memory-store-records.js';
import type { VectorEntry } from '../../contracts/memory-store-vectors.js';
import type { HistoryEntry } from '../../memory/memory-history.js';
import {
  everything,
  outcomeOf,
  SUITE_ACTOR,
  type StoreCaseDefinition,
  unexpectedOutcomes,
} from '../store-suite-support.js';
import { exportsAndFingerprint, SPACE, vectorFor } from './record-copy-fixture.js';

/** Hostile restores; the record-copy group runs them last. */
export const recordRestoreInputCases: ReadonlyArray<StoreCaseDefinition<'records' | 'vectors'>> = [
  {
    name: 'records.restore refuses malformed and oversized records and changes nothing; hostile text is stored verbatim, never run',
    async run({ store }) {
      await store.create({ scope: 'project:copy', content: 'Already here.' }, SUITE_ACTOR);
      const memory: Memory = {
        id: 'restored-1',
        scope: 'project:copy',
        type: 'reference',
        name: 'restored-fact',
        description: 'A restored fact',
        content: 'A restored fact with every field.',
        importance: 0.75,
        source: { sessionId: 's-1' },
        createdAt: '2024-01-02T03:04:05.006Z',
        updatedAt: '2024-02-02T03:04:05.006Z',
        lastAccessedAt: null,
        hitCount: 0,
        validFrom: '2024-01-02T03:04:05.006Z',
        invalidAt: null,
        supersededBy: null,
        archived: false,
      };
      const entry: HistoryEntry = {
        id: 'chg-restored-1',
        memoryId: 'restored-1',
        action: 'create',
        actor: 'importer',
        at: memory.createdAt,
        before: null,
        after: memory,
        undoOf: null,
      };
      const vector: VectorEntry = { id: 'restored-1', vector: vectorFor(0), updatedAt: memory.updatedAt };
      const { id: _id, ...withoutId } = memory;
      const before = await exportsAndFingerprint(store);

      // Vectors need a space; until one is set they are refused.
      expect(await outcomeOf(() => store.records.restore({ memories: [memory], vectors: [vector] }))).toBe(
        'INVALID_INPUT',
      );
      await store.vectors.setSpace(SPACE);

      const cases: Array<[string, unknown, string]> = [
        ['null', null, 'INVALID_INPUT'],
        ['an array', [memory], 'INVALID_INPUT'],
        ['memories not an array', { memories: memory }, 'INVALID_INPUT'],
        ['an unknown kind', { memories: [memory], locks: [] }, 'INVALID_INPUT'],
        ['a memory that is null', { memories: [null] }, 'INVALID_INPUT'],
        ['a memory without id', { memories: [withoutId] }, 'INVALID_INPUT'],
        ['a memory without hitCount', { memories: [{ ...memory, hitCount: undefined }] }, 'INVALID_INPUT'],
        ['a memory with an unknown field', { memories: [{ ...memory, rowid: 1 }] }, 'INVALID_INPUT'],
        ['a bad id', { memories: [{ ...memory, id: 'has space' }] }, 'INVALID_INPUT'],
        ['a bad scope', { memories: [{ ...memory, scope: 'project:' }] }, 'INVALID_SCOPE'],
        ['a bad type', { memories: [{ ...memory, type: 'secret' }] }, 'INVALID_INPUT'],
        ['a name that is not a slug', { memories: [{ ...memory, name: 'Not A Slug' }] }, 'INVALID_INPUT'],
        ['a date that is not one', { memories: [{ ...memory, updatedAt: 'yesterday' }] }, 'INVALID_INPUT'],
        ['a negative hit count', { memories: [{ ...memory, hitCount: -1 }] }, 'INVALID_INPUT'],
        ['importance above 1', { memories: [{ ...memory, importance: 2 }] }, 'INVALID_INPUT'],
        ['archived as a string', { memories: [{ ...memory, archived: 'yes' }] }, 'INVALID_INPUT'],
        ['a control character in content', { memories: [{ ...memory, content: 'bell \u0007' }] }, 'INVALID_INPUT'],
        [
          'content over the size limit',
          { memories: [{ ...memory, content: 'x'.repeat(1024 * 1024) }] },
          'PAYLOAD_TOO_LARGE',
        ],
        [
          'more memories than one call takes',
          { memories: Array.from({ length: 10_001 }, (_, index) => ({ ...memory, id: `bulk-${index}` })) },
          'PAYLOAD_TOO_LARGE',
        ],
        [
          'history with an unknown action',
          { memories: [memory], history: [{ ...entry, action: 'drop' }] },
          'INVALID_INPUT',
        ],
        ['history without actor', { memories: [memory], history: [{ ...entry, actor: '' }] }, 'INVALID_INPUT'],
        ['history with a bad time', { memories: [memory], history: [{ ...entry, at: 'soon' }] }, 'INVALID_INPUT'],
        ['history with a bad id', { memories: [memory], history: [{ ...entry, id: '../../etc' }] }, 'INVALID_INPUT'],
        ['history without undoOf', { memories: [memory], history: [{ ...entry, undoOf: undefined }] }, 'INVALID_INPUT'],
        [
          'history whose snapshot is not an object',
          { memories: [memory], history: [{ ...entry, after: 'a memory' }] },
          'INVALID_INPUT',
        ],
        [
          'history whose snapshot is another memory',
          { memories: [memory], history: [{ ...entry, after: { ...memory, id: 'other' } }] },
          'INVALID_INPUT',
        ],
        [
          'history whose snapshot lacks fields',
          { memories: [memory], history: [{ ...entry, after: { id: 'restored-1', content: 'x' } }] },
          'INVALID_INPUT',
        ],
        [
          'a vector of the wrong length',
          { memories: [memory], vectors: [{ ...vector, vector: Float32Array.from([1, 2]) }] },
          'INVALID_INPUT',
        ],
        [
          'a vector holding NaN',
          { memories: [memory], vectors: [{ ...vector, vector: Float32Array.from([1, Number.NaN, 0, 0]) }] },
          'INVALID_INPUT',
        ],
        [
          'a vector of zeros',
          { memories: [memory], vectors: [{ ...vector, vector: new Float32Array(4) }] },
          'INVALID_INPUT',
        ],
        [
          'a vector as a plain array',
          { memories: [memory], vectors: [{ ...vector, vector: [1, 2, 3, 4] }] },
          'INVALID_INPUT',
        ],
        [
          'a vector without updatedAt',
          { memories: [memory], vectors: [{ id: vector.id, vector: vector.vector }] },
          'INVALID_INPUT',
        ],
      ];
      const restores = cases.map(
        ([label, records, code]) => [label, () => store.records.restore(records as StoreRecords), code] as const,
      );
      expect(await unexpectedOutcomes(restores)).toEqual([]);
      expect(await exportsAndFingerprint(store)).toEqual(before);

      // SQL and markup in every text field are data.
      const hostileMemory: Memory = {
        ...memory,
        id: 'hostile-1',
        name: 'drop-table',
        description: "x'); DROP TABLE memories; -- 100% _ * \\",
        content: "Robert'); DROP TABLE memories; --\n$1 $$ :name ? %s \\x00 <script>alert(1)</script>",
        source: { sessionId: "'; DELETE FROM memory_history; --", origin: '" OR ""="' },
      };
      const hostileEntry: HistoryEntry = {
        ...entry,
        id: 'chg-hostile-1',
        memoryId: 'hostile-1',
        actor: "x'); DROP TABLE memory_history; --",
        after: hostileMemory,
      };
      const report = await store.records.restore({
        memories: [hostileMemory],
        history: [hostileEntry],
        vectors: [{ ...vector, id: 'hostile-1' }],
      });
      expect(report.written).toEqual({ memories: 1, history: 1, vectors: 1, jobs: 0, checkpoints: 0 });
      expect(await store.get('hostile-1')).toEqual(hostileMemory);
      expect(await store.history('hostile-1')).toEqual([hostileEntry]);
      expect(await store.count(everything(['project:copy']))).toBe(2);
      expect(
        (await store.searchText({ scopes: ['project:copy'], terms: ['robert'], limit: 5 })).map((hit) => hit.memory.id),
      ).toEqual(['hostile-1']);
    },
  },
];
