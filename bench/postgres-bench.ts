import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { convertLocomo, LOCOMO_SOURCE } from '../scripts/locomo-to-jsonl.js';
import { openStore } from '../src/node/open-store.js';
import { PostgresMemoryStore } from '../src/adapters/postgres/postgres-memory-store.js';
import { parseEvalDataset } from '../src/eval/eval-dataset.js';
import { runEval, type EvalReport } from '../src/eval/node/run-eval.js';
import {
  collectStoreWriteWorker,
  spawnStoreWriteWorker,
  unexpectedStderr,
} from '../src/testing/store-write-worker-process.js';
import { TIMING_PREFIX } from '../src/testing/store-write-worker-tasks.js';
import { resolvePostgresServer } from '../test/support/postgres-server.js';
import { round } from './statistics.js';
import { benchStore, type StoreBenchRow } from './store-bench.js';

// The Postgres half of `npm run bench`: the store figures beside SQLite's, writes from several
// processes at once on both backends, and LoCoMo recall with the dataset loaded into either store.
// The server is ENGRAM_BENCH_POSTGRES_URL, else the tests' server (ENGRAM_TEST_POSTGRES_URL or a
// throwaway cluster from the local PostgreSQL binaries); without one, Postgres is skipped with a note.

/** A server the bench may create and drop schemas on. */
export interface BenchPostgres {
  url: string;
  origin: string;
  stop(): Promise<void>;
}

export interface ConcurrentWritesRow {
  backend: string;
  processes: number;
  writesPerProcess: number;
  /** Memories per transaction: 1 (`create`) or a `createMany` batch. */
  batchSize: number;
  /** Untimed writes each process made first (0: timed from the first write of a fresh process, JIT cold). */
  warmupPerProcess: number;
  /** Memories written by all processes together per second, from the agreed start to the last write. */
  memoriesPerSecond: number;
  /** Every printed id is in the store, and the store holds no more (nothing lost, nothing duplicated). */
  allStored: boolean;
}

/** The recall figures compared across backends: recall@k, nDCG@10 and the evidence share injected at the defaults. */
export type LocomoFigures = Record<string, number>;

export interface LocomoStoresResult {
  queries: number;
  /** Per conversion (with source turns; neutral: no source, no description) and backend. */
  figures: Record<'withSource' | 'neutral', Record<'sqlite' | 'postgres', LocomoFigures>>;
  /** Postgres ÷ SQLite, figure by figure. */
  ratio: Record<'withSource' | 'neutral', LocomoFigures>;
  /** The lowest of all the ratios. */
  lowestRatio: number;
  latencyP95Ms: Record<'withSource' | 'neutral', Record<'sqlite' | 'postgres', number>>;
}

/** The Postgres server for this run, or the reason there is none. */
export async function startBenchPostgres(
  env: NodeJS.ProcessEnv = process.env,
): Promise<BenchPostgres | { skipped: string }> {
  const configured = env.ENGRAM_BENCH_POSTGRES_URL;
  if (configured) return { url: configured, origin: 'ENGRAM_BENCH_POSTGRES_URL', stop: async () => undefined };
  const server = await resolvePostgresServer(env);
  if ('skipReason' in server) return { skipped: server.skipReason };
  return {
    url: server.url,
    origin: env.ENGRAM_TEST_POSTGRES_URL ? 'ENGRAM_TEST_POSTGRES_URL' : 'throwaway cluster (local PostgreSQL binaries)',
    stop: server.stop,
  };
}

/** A store URL for a new schema of the server's database, and how to drop that schema. */
function freshSchema(server: BenchPostgres, label: string): { url: string; drop: () => Promise<void> } {
  const schema = `bench_${label}_${randomBytes(4).toString('hex')}`;
  const url = new URL(server.url);
  url.searchParams.set('schema', schema);
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/** ANALYZE of a store's schema: the planner statistics full-text search reads on large stores. */
async function analyze(url: string): Promise<void> {
  const server = new URL(url);
  const schema = server.searchParams.get('schema') ?? 'engram';
  server.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: server.toString() });
  await client.connect();
  try {
    await client.query(`ANALYZE "${schema.replaceAll('"', '""')}".memories`);
  } finally {
    await client.end();
  }
}

/** The store bench (writes, recall p50/p95) on Postgres at each size, each in a fresh schema. */
export async function benchPostgresStores(server: BenchPostgres, sizes: readonly number[]): Promise<StoreBenchRow[]> {
  const rows: StoreBenchRow[] = [];
  for (const size of sizes) {
    const schema = freshSchema(server, `store_${size}`);
    const store = await openStore(schema.url);
    try {
      rows.push(await benchStore('postgres', store, size, () => analyze(schema.url)));
    } finally {
      await store.close();
      await schema.drop();
    }
  }
  return rows;
}

/**
 * `processes` writer processes start at one agreed instant and each creates `writesPerProcess`
 * memories, one transaction each (the write worker of the store tests).
 */
export async function benchConcurrentWrites(
  backend: 'sqlite' | 'postgres',
  url: string,
  options: { processes: number; writesPerProcess: number; batchSize?: number; warmup?: number },
): Promise<ConcurrentWritesRow> {
  const warmup = options.warmup ?? 0;
  // Room for every process to start and open its store before the agreed instant.
  const startAt = Date.now() + 5_000;
  // Each writer reports its ids and when its first and last writes returned at the end, so the
  // figure times the store's writes, not one pipe write per memory to this process.
  const workers = Array.from({ length: options.processes }, (_, index) =>
    collectStoreWriteWorker(
      spawnStoreWriteWorker({
        url,
        scope: `project:bench-writer-${index}`,
        count: options.writesPerProcess,
        tag: `writer-${index}`,
        startAt,
        report: 'end',
        warmup,
        ...(options.batchSize && { batchSize: options.batchSize }),
      }),
    ),
  );
  const results = await Promise.all(workers);
  for (const result of results) {
    if (result.exitCode !== 0)
      throw new Error(`A ${backend} writer failed (exit ${result.exitCode}): ${unexpectedStderr(result.stderr)}`);
  }
  const timings = results.map((result) => {
    const [first, last] = (result.ids.find((line) => line.startsWith(TIMING_PREFIX)) ?? '')
      .slice(TIMING_PREFIX.length)
      .split(':')
      .map(Number);
    if (!Number.isFinite(first) || !Number.isFinite(last))
      throw new Error(`A ${backend} writer reported no timing line.`);
    return { first: first!, last: last! };
  });
  const lastWrite = Math.max(...timings.map((timing) => timing.last));
  const lateStartMs = Math.max(...timings.map((timing) => timing.first)) - startAt;
  if (lateStartMs > 1_000)
    console.log(
      `(a ${backend} writer wrote its first memory ${lateStartMs} ms after the agreed start: the machine is busy, the figure is pessimistic)`,
    );
  for (const result of results) result.ids = result.ids.filter((line) => !line.startsWith(TIMING_PREFIX));
  const ids = results.flatMap((result) => result.ids);
  const store = await openStore(url);
  let allStored: boolean;
  try {
    const stats = await store.stats();
    const found = await Promise.all(ids.map((id) => store.get(id)));
    allStored =
      found.every((memory) => memory !== undefined) &&
      stats.total === ids.length + warmup * options.processes &&
      new Set(ids).size === ids.length;
  } finally {
    await store.close();
  }
  return {
    backend,
    processes: options.processes,
    writesPerProcess: options.writesPerProcess,
    batchSize: options.batchSize ?? 1,
    warmupPerProcess: warmup,
    memoriesPerSecond: Math.round((ids.length / Math.max(1, lastWrite - startAt)) * 1_000),
    allStored,
  };
}

/** Concurrent writers on a fresh SQLite file and, when a server is given, a fresh Postgres schema. */
export async function benchConcurrentWritesOnBoth(
  server: BenchPostgres | undefined,
  options: { processes: number; writesPerProcess: number; batchSize?: number; warmup?: number },
): Promise<ConcurrentWritesRow[]> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-writers-'));
  const rows: ConcurrentWritesRow[] = [];
  try {
    // The schema is made before the writers start, so four processes do not race to create it.
    const sqlitePath = join(directory, 'writers.db');
    await (await openStore(sqlitePath)).close();
    rows.push(await benchConcurrentWrites('sqlite', sqlitePath, options));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  if (server) {
    const schema = freshSchema(server, 'writers');
    try {
      await (await openStore(schema.url)).close();
      rows.push(await benchConcurrentWrites('postgres', schema.url, options));
    } finally {
      await schema.drop();
    }
  }
  return rows;
}

/**
 * `engram eval` on LoCoMo, with source turns and neutral, with the turns loaded into SQLite and
 * into Postgres: recall@k, nDCG@10 and injected recall side by side.
 */
export async function benchLocomoOnStores(
  server: BenchPostgres,
  source: string = LOCOMO_SOURCE,
): Promise<LocomoStoresResult | undefined> {
  if (!existsSync(source)) {
    console.log(`\nLoCoMo on both stores: skipped, ${source} is absent (see ../shared/data/README.md).`);
    return undefined;
  }
  const data: unknown = JSON.parse(readFileSync(source, 'utf8'));
  const datasets = {
    withSource: parseEvalDataset(convertLocomo(data).lines.join('\n')),
    neutral: parseEvalDataset(convertLocomo(data, { neutral: true }).lines.join('\n')),
  };
  const ks = [5, 10, 25];
  const figuresOf = (report: EvalReport): LocomoFigures => ({
    ...Object.fromEntries(ks.map((k) => [`R@${k}`, round(report.overall.recall[k]!)])),
    'nDCG@10': round(report.overall.ndcg[10]!),
    injected: round(report.defaults.meanRecall),
  });
  const figures = {} as LocomoStoresResult['figures'];
  const ratio = {} as LocomoStoresResult['ratio'];
  const latencyP95Ms = {} as LocomoStoresResult['latencyP95Ms'];
  for (const conversion of ['withSource', 'neutral'] as const) {
    const sqlite = await runEval(datasets[conversion], { ks });
    const schema = freshSchema(server, 'locomo');
    let postgres: EvalReport;
    try {
      postgres = await runEval(datasets[conversion], {
        ks,
        createStore: ({ settings, now }) =>
          new PostgresMemoryStore({
            url: schema.url,
            limits: settings.memory,
            now,
            fullText: {
              k1: settings.recall.fullTextK1,
              b: settings.recall.fullTextB,
              coverage: settings.recall.fullTextCoverage,
            },
          }),
      });
    } finally {
      await schema.drop();
    }
    figures[conversion] = { sqlite: figuresOf(sqlite), postgres: figuresOf(postgres) };
    ratio[conversion] = Object.fromEntries(
      Object.entries(figures[conversion].sqlite).map(([name, value]) => [
        name,
        round(figures[conversion].postgres[name]! / value),
      ]),
    );
    latencyP95Ms[conversion] = { sqlite: sqlite.latency.p95Ms, postgres: postgres.latency.p95Ms };
  }
  return {
    queries: datasets.withSource.queries.length,
    figures,
    ratio,
    lowestRatio: Math.min(...Object.values(ratio).flatMap((entry) => Object.values(entry))),
    latencyP95Ms,
  };
}

export interface PostgresBenchResult {
  server: string;
  /** Version and durability settings: write figures mean little without them. */
  serverSettings: Record<string, string>;
  store: StoreBenchRow[];
  concurrentWrites: ConcurrentWritesRow[];
  locomo: LocomoStoresResult | { skipped: string };
  targets: Record<string, { value: number | null; target: string; met: boolean | null }>;
}

const WRITERS = { processes: 4, writesPerProcess: 1_000 };
// Writers are long-lived processes (a service, an agent): the figure that counts is their sustained
// rate, 5,000 timed writes each after 500 untimed ones (the JIT's warm-up). The first 1,000 writes
// of fresh processes are shown beside it.
const WRITER_WARMUP = 500;
const SUSTAINED_WRITES = 5_000;
// An agent's writes come one at a time (a remember, a merge) or as a batch (an extraction run, an import).
const WRITER_BATCH = 50;

/**
 * The Postgres part of the bench, printed as it goes: store figures beside SQLite's (`sqliteRows`,
 * measured in the same run when the store part ran), 4 concurrent writer processes on both
 * backends, LoCoMo recall on both stores, and the issue's targets. Skipped, with a note, without a server.
 */
export async function benchPostgresPart(
  sizes: readonly number[],
  sqliteRows: readonly StoreBenchRow[],
): Promise<PostgresBenchResult | { skipped: string }> {
  const server = await startBenchPostgres();
  if ('skipped' in server) {
    console.log(
      `\nPostgres: skipped (${server.skipped}). Set ENGRAM_BENCH_POSTGRES_URL to a server engram may create schemas on.`,
    );
    return server;
  }
  try {
    const settings = await serverSettings(server);
    console.log(
      `\nPostgres: ${server.origin}; ${Object.entries(settings)
        .map(([name, value]) => `${name} ${value}`)
        .join(', ')}`,
    );
    // Writers first, on an idle server: the fills below leave it vacuuming and checkpointing for minutes.
    const concurrentWrites = [
      ...(await benchConcurrentWritesOnBoth(server, WRITERS)),
      ...(await benchConcurrentWritesOnBoth(server, {
        ...WRITERS,
        writesPerProcess: SUSTAINED_WRITES,
        warmup: WRITER_WARMUP,
      })),
      ...(await benchConcurrentWritesOnBoth(server, { ...WRITERS, warmup: WRITER_WARMUP, batchSize: WRITER_BATCH })),
    ];
    console.log(
      `\nWrites from ${WRITERS.processes} processes at once, one memory per transaction (${WRITERS.writesPerProcess} each from fresh processes; ${SUSTAINED_WRITES} each after ${WRITER_WARMUP} untimed), then ${WRITER_BATCH} per transaction`,
    );
    console.table(
      concurrentWrites.map((row) => ({
        backend: row.backend,
        'memories per transaction': row.batchSize,
        'timed writes per process': row.writesPerProcess,
        'warm-up writes per process': row.warmupPerProcess,
        'memories/s in total': row.memoriesPerSecond,
        'all stored once': row.allStored,
      })),
    );

    const store = await benchPostgresStores(server, sizes);
    console.log('\nStore (in-process): SQLite beside Postgres');
    console.table(
      [...sqliteRows, ...store]
        .sort((left, right) => left.size - right.size || left.backend.localeCompare(right.backend))
        .map((row) => ({
          backend: row.backend,
          memories: row.size,
          'single writes/s': row.singleWritesPerSecond,
          'batched writes/s': row.batchedWritesPerSecond,
          'recall p50 ms': row.recallP50Ms,
          'recall p95 ms': row.recallP95Ms,
          'recall + hits p95 ms': row.recallWithHitsP95Ms,
        })),
    );

    const locomo = (await benchLocomoOnStores(server)) ?? { skipped: 'LoCoMo data absent' };
    if (!('skipped' in locomo)) {
      console.log(
        `\nLoCoMo evidence recall (${locomo.queries} questions), engram eval with the turns in each store (injected: evidence share in the block at the defaults)`,
      );
      console.table(
        (['withSource', 'neutral'] as const).flatMap((conversion) =>
          (['sqlite', 'postgres'] as const).map((backend) => ({
            conversion: conversion === 'withSource' ? 'with source' : 'neutral',
            store: backend,
            ...locomo.figures[conversion][backend],
            'recall p95 ms': locomo.latencyP95Ms[conversion][backend],
          })),
        ),
      );
    }

    const largest = store.find((row) => row.size === 100_000);
    const postgresColdWrites = concurrentWrites.find(
      (row) => row.backend === 'postgres' && row.batchSize === 1 && row.warmupPerProcess === 0,
    );
    const postgresWrites = concurrentWrites.find(
      (row) => row.backend === 'postgres' && row.batchSize === 1 && row.warmupPerProcess > 0,
    );
    const postgresBatchedWrites = concurrentWrites.find((row) => row.backend === 'postgres' && row.batchSize > 1);
    const lowestRatio = 'skipped' in locomo ? null : locomo.lowestRatio;
    const targets: PostgresBenchResult['targets'] = {
      fullTextRecallP95At100kMs: {
        value: largest?.recallP95Ms ?? null,
        target: '<= 30',
        met: largest ? largest.recallP95Ms <= 30 : null,
      },
      concurrentWritesPerSecond: {
        value: postgresWrites?.memoriesPerSecond ?? null,
        target: '>= 2000',
        met: postgresWrites ? postgresWrites.memoriesPerSecond >= 2_000 : null,
      },
      concurrentColdWritesPerSecond: {
        value: postgresColdWrites?.memoriesPerSecond ?? null,
        target: '(shown: the first writes of fresh processes)',
        met: null,
      },
      concurrentBatchedWritesPerSecond: {
        value: postgresBatchedWrites?.memoriesPerSecond ?? null,
        target: '>= 2000',
        met: postgresBatchedWrites ? postgresBatchedWrites.memoriesPerSecond >= 2_000 : null,
      },
      locomoLowestRecallRatio: {
        value: lowestRatio,
        target:
          '>= 0.95 (every LoCoMo figure within 5% of SQLite: R@5/10/25, nDCG@10, injected; with source and neutral)',
        met: lowestRatio === null ? null : lowestRatio >= 0.95,
      },
    };
    console.log('\nIssue 6 targets on Postgres');
    console.table(
      Object.entries(targets).map(([name, entry]) => ({
        figure: name,
        value: entry.value,
        target: entry.target,
        met: entry.met,
      })),
    );
    return { server: server.origin, serverSettings: settings, store, concurrentWrites, locomo, targets };
  } finally {
    await server.stop();
  }
}

/** The server's version and the settings that decide what a commit costs. */
async function serverSettings(server: BenchPostgres): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    const settings: Record<string, string> = {};
    for (const name of ['server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers']) {
      settings[name] = String((await client.query(`SHOW ${name}`)).rows[0][name]);
    }
    const vector = await client.query("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'");
    settings.pgvector = vector.rows[0]?.default_version ?? 'not installed';
    return settings;
  } finally {
    await client.end();
  }
}
