import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { benchLocomo } from './locomo-bench.js';
import { benchRecallProcess, benchSqlite, type ProcessBenchRow } from './store-bench.js';
import { benchMaintenance } from './maintenance-bench.js';
import { benchPostgresPart } from './postgres-bench.js';
import { compareWithDriverBaseline, readDriverBaseline } from './driver-comparison.js';
import { benchInstall } from './install-bench.js';
import { benchBaselinePart } from './baseline-bench.js';

/**
 * `npm run bench`: store throughput and recall latency at 1K/10K/100K memories, and CLI start-up.
 * ENGRAM_BENCH_PARTS (comma-separated, default all: the names in BENCH_PARTS below) runs some parts
 * only; such a partial run does not replace results/latest.json.
 */
async function main(): Promise<void> {
  const sizes = (process.env.ENGRAM_BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number);
  const parts = new Set(
    (process.env.ENGRAM_BENCH_PARTS ?? BENCH_PARTS.join(',')).split(',').map((part) => part.trim()),
  );
  const unknownParts = [...parts].filter((part) => !BENCH_PARTS.includes(part));
  if (unknownParts.length > 0)
    throw new Error(`Unknown ENGRAM_BENCH_PARTS ${unknownParts.join(', ')}: use ${BENCH_PARTS.join(', ')}.`);
  const root = resolve(import.meta.dirname, '..');
  const started = new Date();

  const { rows, directory } = parts.has('store') ? await benchSqlite(sizes) : { rows: [], directory: '' };
  let processRow: ProcessBenchRow | undefined;
  if (parts.has('store')) {
    console.log('\nStore (in-process, SQLite)');
    console.table(
      rows.map((row) => ({
        memories: row.size,
        'single writes/s': row.singleWritesPerSecond,
        'batched writes/s': row.batchedWritesPerSecond,
        'recall p50 ms': row.recallP50Ms,
        'recall p95 ms': row.recallP95Ms,
        'recall + hits p95 ms': row.recallWithHitsP95Ms,
      })),
    );

    const recorded = readDriverBaseline(root);
    console.log(`\nBeside ${recorded.driver}, recorded ${recorded.recordedAt} (another day: see the baseline part)`);
    console.table(compareWithDriverBaseline(rows, recorded));

    const processSize = sizes.includes(10_000) ? 10_000 : sizes[0]!;
    processRow = benchRecallProcess(
      join(root, 'dist/surfaces/cli/main.js'),
      join(directory, `${processSize}.db`),
      processSize,
    );
    console.log(`\n\`engram recall\` as a process at ${processSize} memories`);
    console.table([
      { command: "node -e ''", 'median ms': processRow.baselineMedianMs },
      { command: 'engram recall', 'median ms': processRow.recallMedianMs, ratio: processRow.ratio },
    ]);
    rmSync(directory, { recursive: true, force: true });
  }

  const baselineSizes = (process.env.ENGRAM_BENCH_BASELINE_SIZES ?? '10000,100000').split(',').map(Number);
  const baselineRounds = Number(process.env.ENGRAM_BENCH_BASELINE_ROUNDS ?? 2);
  const baseline = parts.has('baseline') ? benchBaselinePart(root, baselineSizes, baselineRounds) : undefined;
  if (baseline) {
    if ('skipped' in baseline) console.log(`\nBaseline skipped: ${baseline.skipped}`);
    else {
      console.log(
        `\nSame run, alternating rounds (${baseline.rounds} each, medians): engram ${baseline.commit.slice(0, 7)} on ${baseline.driver} before, this tree now (target: within 15%)`,
      );
      console.table(baseline.rows);
    }
  }

  const install = parts.has('install') ? benchInstall(root, readDriverBaseline(root).commit) : undefined;
  if (install) {
    console.log('\n`npm install` in a clean clone (npm cache as it is)');
    console.table([{ now: install.seconds, before: install.secondsBefore, 'before was': install.before }]);
  }

  const locomo = parts.has('locomo') ? await benchLocomo() : undefined;
  const longMemEval = parts.has('longmemeval')
    ? await (await import('./longmemeval-bench.js')).benchLongMemEval()
    : undefined;
  const questions = parts.has('questions')
    ? await (await import('./question-latency-bench.js')).benchQuestionLatency()
    : undefined;
  const ablation = parts.has('ablation')
    ? await (await import('./recall-ablation.js')).benchRecallAblation()
    : undefined;
  const fusion = parts.has('fusion') ? await (await import('./fusion-bench.js')).benchFusionPart() : undefined;

  const maintenance = parts.has('maintenance') ? await benchMaintenance(sizes) : undefined;
  if (maintenance) {
    console.log('\nDedupe on write and maintenance (in-process, SQLite)');
    console.table(maintenance);
  }

  const postgres = parts.has('postgres') ? await benchPostgresPart(sizes, rows) : undefined;

  const results = {
    date: started.toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    store: rows,
    recallProcess: processRow,
    install,
    baseline,
    locomo: locomo ?? {
      skipped: parts.has('locomo') ? 'LoCoMo data absent (../shared/data/locomo)' : 'not run (ENGRAM_BENCH_PARTS)',
    },
    longMemEval: longMemEval ?? {
      skipped: parts.has('longmemeval')
        ? 'LongMemEval data absent (../shared/data/longmemeval)'
        : 'not run (ENGRAM_BENCH_PARTS)',
    },
    questions,
    ablation,
    fusion,
    maintenance,
    postgres,
    extraction: parts.has('extraction')
      ? await (await import('./extraction-bench.js')).benchExtractionPart()
      : undefined,
    transcripts: parts.has('transcripts')
      ? await (await import('./session-transcript-bench.js')).benchSessionTranscriptsPart()
      : undefined,
    session: parts.has('session') ? await (await import('./session-bench.js')).benchSessionPart() : undefined,
    wrappers: parts.has('wrappers') ? await (await import('./wrappers-bench.js')).benchWrappersPart() : undefined,
    wrappersLocked: parts.has('wrappers-locked')
      ? await (await import('./wrappers-lock-bench.js')).benchWrappersLockedPart()
      : undefined,
    mcpStart: parts.has('mcp-start') ? await (await import('./mcp-start-bench.js')).benchMcpStartPart() : undefined,
    viewer: parts.has('viewer') ? await (await import('./viewer-bench.js')).benchViewerPart() : undefined,
    dream: parts.has('dream') ? await (await import('./dream-bench.js')).benchDreamPart() : undefined,
    claudeCode: parts.has('claude-code')
      ? await (await import('./claude-code-extraction-bench.js')).benchClaudeCodeExtractionPart()
      : undefined,
    hooks: parts.has('hooks') ? await (await import('./hooks-bench.js')).benchHooksPart() : undefined,
    sync: parts.has('sync') ? await (await import('./sync-bench.js')).benchSyncPart() : undefined,
    parts: [...parts],
  };
  const folder = join(root, 'bench/results');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  if (BENCH_PARTS.every((part) => parts.has(part)))
    writeFileSync(join(folder, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}

const BENCH_PARTS = [
  'store',
  'locomo',
  'longmemeval',
  'questions',
  'ablation',
  'fusion',
  'maintenance',
  'postgres',
  'extraction',
  'transcripts',
  'session',
  'wrappers',
  'wrappers-locked',
  'mcp-start',
  'viewer',
  'dream',
  'install',
  'baseline',
  'claude-code',
  'hooks',
  'sync',
];

await main();
