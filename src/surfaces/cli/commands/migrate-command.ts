import { redactStoreUrl } from '../../../adapters/postgres/postgres-connection-url.js';
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { loadSettings } from '../../../node/load-settings.js';
import { openStore, parseStoreUrl, storeOptionsFromSettings, type StoreLocation } from '../../../node/open-store.js';
import { DEFAULT_POSTGRES_SCHEMA } from '../../../adapters/postgres/postgres-connection-url.js';
import { EngramError } from '../../../kernel/errors.js';
import { copyStore, type CopyPhase, type CopyStoreReport } from '../../../maintenance/copy-store.js';
import { holdsNoRecords, RECORD_KINDS } from '../../../maintenance/store-checksum.js';
import type { MemoryStore } from '../../../contracts/memory-store.js';
import { MAX_EXPORT_PAGE } from '../../../contracts/store-checks/record-copy-input.js';
import { integerOption, noPositionals, stringOption, type CommandDefinition } from '../cli-command.js';
import { globalSettingFlags } from '../cli-engram.js';
import { createProgressBar, type ProgressBar } from '../progress-bar.js';
import { formatFields } from '../table-format.js';

const PHASE_LABELS: Record<CopyPhase, string> = {
  checking: 'checking target',
  memories: 'memories',
  history: 'history',
  vectors: 'vectors',
  jobs: 'jobs',
  checkpoints: 'checkpoints',
  verifying: 'verifying',
};
/** Longest store URL accepted: a path or a connection string, never a document. */
const MAX_URL_LENGTH = 4_096;

/** `engram migrate`: copy a whole store into another (SQLite ↔ Postgres), verified, resumable. */
export const migrateCommand: CommandDefinition = {
  name: 'migrate',
  summary:
    'Copy every memory, its history and vectors from one store to another (SQLite or Postgres), verified by checksums',
  usage: 'migrate --from <store-url> --to <store-url> [options]',
  options: {
    from: {
      type: 'string',
      valueName: 'store-url',
      description: 'Store to copy: a SQLite path, sqlite://<path> or postgres://…',
    },
    to: {
      type: 'string',
      valueName: 'store-url',
      description: 'Store to copy into: empty, or left by an interrupted migrate from the same source',
    },
    'page-size': {
      type: 'string',
      valueName: 'n',
      description: `Records per page, each page one transaction (setting migrate.pageSize, default 500, at most ${MAX_EXPORT_PAGE})`,
    },
  },
  details: [
    'Copies memories, history and vectors verbatim (ids, times, hit counts, states, undo links), then reads both stores back',
    'and compares counts and SHA-256 checksums. Stop every writer of the source first. Interrupted? Run the same command',
    'again: what is already there is checked and skipped. A target holding anything else is refused before anything is written.',
    'Examples:',
    '  engram migrate --from ~/.engram/engram.db --to postgres://engram@db.internal/team',
    '  engram migrate --from "postgres://engram@db.internal/team?schema=engram" --to sqlite://./backup.db',
  ].join('\n'),
  async run(invocation) {
    const { values, io, global } = invocation;
    noPositionals(invocation);
    if (global.store !== undefined)
      throw new EngramError(
        'INVALID_INPUT',
        'engram migrate names both stores with --from and --to; --store is not used.',
      );
    const from = storeUrlOption(stringOption(values, 'from'), 'from');
    const to = storeUrlOption(stringOption(values, 'to'), 'to');
    const pageSizeFlag = integerOption(values, 'page-size', { min: 1, max: MAX_EXPORT_PAGE });
    const source = parseStoreUrl(from);
    const target = parseStoreUrl(to);
    if (storeIdentity(source) === storeIdentity(target)) {
      throw new EngramError(
        'INVALID_INPUT',
        `--from and --to name the same store (${redactStoreUrl(from)}): copy into another one.`,
      );
    }
    if (source.backend === 'sqlite' && !existsSync(source.path)) {
      throw new EngramError('NOT_FOUND', `No store at ${source.path} (--from): check the path.`);
    }
    const { settings } = loadSettings({ cwd: io.cwd, env: io.env, flags: globalSettingFlags(global) });
    const storeOptions = storeOptionsFromSettings(settings);
    const pageSize = pageSizeFlag ?? settings.migrate.pageSize;

    const opened: MemoryStore[] = [];
    try {
      const sourceStore = await openStore(from, storeOptions);
      opened.push(sourceStore);
      if (await holdsNoRecords(sourceStore)) {
        throw new EngramError(
          'NOT_FOUND',
          `The source store ${redactStoreUrl(from)} holds no memories, history, vectors, jobs or checkpoints: nothing to copy (check --from).`,
        );
      }
      const targetStore = await openStore(to, storeOptions);
      opened.push(targetStore);
      const progress = phaseProgress(io.stderr);
      let report: CopyStoreReport;
      try {
        report = await copyStore(sourceStore, targetStore, { pageSize, onProgress: progress.update });
      } finally {
        progress.finish();
      }
      const data = { from: redactStoreUrl(from), to: redactStoreUrl(to), verified: true, ...report };
      return { data, text: formatReport(data) };
    } finally {
      for (const store of opened.reverse()) await store.close().catch(() => undefined);
    }
  },
};

function storeUrlOption(value: string | undefined, name: 'from' | 'to'): string {
  if (value === undefined || value.trim() === '') {
    throw new EngramError(
      'INVALID_INPUT',
      `Missing --${name} <store-url>: engram migrate --from <store-url> --to <store-url>.`,
    );
  }
  if (value.length > MAX_URL_LENGTH)
    throw new EngramError(
      'INVALID_INPUT',
      `--${name} is ${value.length} characters long; a store URL has at most ${MAX_URL_LENGTH}.`,
    );
  if (value.includes('\u0000'))
    throw new EngramError('INVALID_INPUT', `--${name} holds a NUL character: not a store URL.`);
  if (value.trim() === ':memory:')
    throw new EngramError(
      'INVALID_INPUT',
      `--${name} :memory: is a store that vanishes on exit: name a file or a server.`,
    );
  return value;
}

/**
 * What makes two URLs the same store: the SQLite file behind every symlink, or the Postgres
 * server, database and schema (user, password and connection options do not change the store).
 */
function storeIdentity(location: StoreLocation): string {
  if (location.backend === 'sqlite') return `sqlite:${realPath(location.path)}`;
  let url: URL;
  try {
    url = new URL(location.url);
  } catch {
    // The store itself will say what is wrong with the URL when it is opened.
    return `postgres-unparsed:${location.url}`;
  }
  const user = decodeURIComponent(url.username) || 'postgres';
  const database = decodeURIComponent(url.pathname.slice(1)) || user;
  const schema = url.searchParams.get('schema') ?? DEFAULT_POSTGRES_SCHEMA;
  return `postgres:${(url.hostname || 'localhost').toLowerCase()}:${url.port || '5432'}/${database}#${schema}`;
}

/** The path behind every symlink, for a file that may not exist yet (then its folder's real path). */
function realPath(path: string): string {
  if (existsSync(path)) return realpathSync(path);
  const folder = dirname(path);
  return join(existsSync(folder) ? realpathSync(folder) : folder, basename(path));
}

/** One progress bar per phase on a terminal; nothing on a pipe. */
function phaseProgress(stream: Parameters<typeof createProgressBar>[0]): {
  update: (progress: { phase: CopyPhase; done: number; total: number }) => void;
  finish: () => void;
} {
  let phase: CopyPhase | undefined;
  let bar: ProgressBar | undefined;
  return {
    update(progress) {
      if (progress.phase !== phase) {
        bar?.finish();
        phase = progress.phase;
        bar = createProgressBar(stream, PHASE_LABELS[progress.phase].padEnd(15));
      }
      bar!.update(progress.done, progress.total);
    },
    finish: () => bar?.finish(),
  };
}

function formatReport(report: CopyStoreReport & { from: string; to: string }): string {
  const fields: Array<[string, string]> = [
    ['from', report.from],
    ['to', report.to],
    [
      'resumed',
      report.resumed
        ? 'yes (an earlier copy had been interrupted)'
        : report.alreadyComplete
          ? 'no (the target already held a complete copy: nothing written)'
          : 'no',
    ],
  ];
  for (const kind of RECORD_KINDS) {
    fields.push([
      kind,
      `${report.target.counts[kind]} (copied ${report.written[kind]}, already there ${report.skipped[kind]})`,
    ]);
  }
  fields.push([
    'vector space',
    report.vectorSpace ? `${report.vectorSpace.model} (${report.vectorSpace.dimensions} dimensions)` : 'none',
  ]);
  for (const kind of RECORD_KINDS) fields.push([`checksum ${kind}`, report.target.checksums[kind]]);
  fields.push(['verified', 'counts and checksums of both stores are equal']);
  return formatFields(fields);
}
