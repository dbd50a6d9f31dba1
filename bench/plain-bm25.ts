import { immediateTransaction } from '../src/adapters/sqlite/sqlite-database.js';
import { closeSqlite, openSqlite } from '../src/adapters/sqlite/sqlite-driver.js';
import type { EvalDataset } from '../src/eval/eval-dataset.js';

/**
 * The baseline: SQLite FTS5's bm25 over each memory's raw content (for LoCoMo: speaker, words, image caption), the
 * question's words OR-ed as they are: no stop words, no engram ranking, no expansion.
 */
export function plainBm25Rankings(
  dataset: EvalDataset,
  limit: number,
): Array<{ ranking: string[]; relevant: Set<string>; tags: string[] }> {
  const db = openSqlite(':memory:');
  try {
    db.exec(
      "CREATE VIRTUAL TABLE turns USING fts5(id UNINDEXED, scope UNINDEXED, text, tokenize = 'porter unicode61 remove_diacritics 2')",
    );
    const insert = db.prepare('INSERT INTO turns (id, scope, text) VALUES (?, ?, ?)');
    immediateTransaction(db, () => {
      for (const memory of dataset.memories) insert.run(memory.id, memory.scope, memory.content);
    });
    const search = db.prepare(
      `SELECT id FROM turns WHERE turns MATCH ? AND scope = ? ORDER BY bm25(turns) LIMIT ${limit}`,
    );
    return dataset.queries.map((query) => {
      const words = [...new Set(query.query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
      const match = words.map((word) => `"${word}"`).join(' OR ');
      const ranking =
        match === '' ? [] : (search.all(match, query.scope) as Array<{ id: string }>).map((row) => row.id);
      return { ranking, relevant: new Set(query.relevant), tags: query.tags };
    });
  } finally {
    closeSqlite(db);
  }
}
