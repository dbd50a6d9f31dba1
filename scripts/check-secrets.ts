/**
 * Re-measures the secret detector (issue 17): every case of the secrets corpus is saved through the
 * library's write path into a real SQLite file and the file's bytes are searched for the secret; every
 * line of the ordinary-text corpus must come through redaction unchanged. Exits 1 on any failure.
 * Run: npx tsx scripts/check-secrets.ts
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { redactSecrets } from '../src/privacy/secret-redaction.js';
import { SECRET_CASES } from '../test/fixtures/secrets-corpus.js';

const folder = mkdtempSync(join(tmpdir(), 'engram-check-secrets-'));
const path = join(folder, 'engram.db');
const store = new SqliteMemoryStore({ path });
await store.open();
const engram = new Engram({ store, defaultScope: 'project:check-secrets', onWarning: () => {} });
for (const [index, entry] of SECRET_CASES.entries()) {
  await engram.save({ name: `case-${index}`, content: `Case ${index}: ${entry.text}` });
}
await store.close();
const bytes = ['', '-wal'].map((suffix) => {
  try {
    return readFileSync(`${path}${suffix}`).toString('latin1');
  } catch {
    return '';
  }
});
const stored = SECRET_CASES.filter((entry) =>
  entry.secrets.some((secret) => bytes.some((file) => file.includes(secret))),
);
rmSync(folder, { recursive: true, force: true });

const lines = readFileSync(new URL('../test/fixtures/ordinary-engineering-text.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '');
const changed = lines.filter((line) => redactSecrets(line).text !== line);

console.log(
  `secret kinds stored: ${stored.length} of ${SECRET_CASES.length} (${new Set(SECRET_CASES.map((entry) => entry.kind)).size} detector kinds); false positives: ${changed.length} of ${lines.length} lines`,
);
for (const entry of stored) console.log(`  stored: ${entry.kind}: ${entry.text.slice(0, 60)}…`);
for (const line of changed) console.log(`  changed: ${line}\n       -> ${redactSecrets(line).text}`);
process.exitCode = stored.length > 0 || changed.length > 0 ? 1 : 0;
