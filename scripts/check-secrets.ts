/**
 * Re-measures the secret detector (issues 17 and 26): every case of the secrets corpus (the issue 26
 * formats and their neighbours included) goes through each of the library's write paths into a real
 * SQLite file and the file's bytes are searched for the secret; every
 * line of the ordinary-text corpus must come through redaction unchanged. Exits 1 on any failure.
 * Run: npx tsx scripts/check-secrets.ts
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { Extractor } from '../src/extraction/extractor.js';
import { redactSecrets } from '../src/privacy/secret-redaction.js';
import { SECRET_CASES } from '../test/fixtures/secrets-corpus.js';

/**
 * The write paths a secret can take into the store, each into a file of its own: a save, an update
 * of an existing memory, an import, and a turn queued for extraction (the job's payload, before any
 * model runs). Issue 26: new formats must be redacted on every path, not only on save.
 */
const WRITE_PATHS: Record<string, (engram: Engram, text: string, index: number) => Promise<unknown>> = {
  save: (engram, text, index) => engram.save({ name: `case-${index}`, content: `Case ${index}: ${text}` }),
  update: async (engram, text, index) => {
    const saved = await engram.save({ name: `case-${index}`, content: `Case ${index}: an ordinary note.` });
    return engram.update(saved.memory.id, { content: `Case ${index}: ${text}` });
  },
  import: (engram, text, index) =>
    engram.importMemories([
      { scope: 'project:check-secrets', name: `case-${index}`, content: `Case ${index}: ${text}` },
    ]),
  'extraction-queue': (engram, text, index) =>
    new Extractor({ engram, autoStart: false, onWarning: () => {} }).afterTurn({
      sessionId: `case-${index}`,
      messages: [
        { id: 'u1', role: 'user', text: `Here is what I use: ${text}` },
        { id: 'a1', role: 'assistant', text: `Noted: ${text}` },
      ],
    }),
};

const stored: Array<{ path: string; entry: (typeof SECRET_CASES)[number] }> = [];
for (const [pathName, write] of Object.entries(WRITE_PATHS)) {
  const folder = mkdtempSync(join(tmpdir(), 'engram-check-secrets-'));
  const path = join(folder, 'engram.db');
  const store = new SqliteMemoryStore({ path });
  await store.open();
  const engram = new Engram({ store, defaultScope: 'project:check-secrets', onWarning: () => {} });
  for (const [index, entry] of SECRET_CASES.entries()) await write(engram, entry.text, index);
  await store.close();
  const bytes = ['', '-wal'].map((suffix) => {
    try {
      return readFileSync(`${path}${suffix}`).toString('latin1');
    } catch {
      return '';
    }
  });
  for (const entry of SECRET_CASES)
    if (entry.secrets.some((secret) => bytes.some((file) => file.includes(secret))))
      stored.push({ path: pathName, entry });
  rmSync(folder, { recursive: true, force: true });
}

const lines = readFileSync(new URL('../test/fixtures/ordinary-engineering-text.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '');
const changed = lines.filter((line) => redactSecrets(line).text !== line);

console.log(
  `secrets stored: ${stored.length} of ${SECRET_CASES.length} cases × ${Object.keys(WRITE_PATHS).length} write paths (${Object.keys(WRITE_PATHS).join(', ')}; ${new Set(SECRET_CASES.map((entry) => entry.kind)).size} detector kinds); false positives: ${changed.length} of ${lines.length} lines`,
);
for (const { path, entry } of stored) console.log(`  stored by ${path}: ${entry.kind}: ${entry.text.slice(0, 60)}…`);
for (const line of changed) console.log(`  changed: ${line}\n       -> ${redactSecrets(line).text}`);
process.exitCode = stored.length > 0 || changed.length > 0 ? 1 : 0;
