import { resolve } from 'node:path';
import { loadSettings } from '../../../node/load-settings.js';
import { EngramError } from '../../../kernel/errors.js';
import { parseEvalDataset } from '../../../eval/eval-dataset.js';
import type { MetricSummary } from '../../../eval/retrieval-metrics.js';
import { checkKs, runEval, type EvalReport } from '../../../eval/node/run-eval.js';
import { EVAL_FORMATS, readBenchmark, type EvalFormat } from '../../../eval/node/read-benchmark.js';
import type { BenchmarkReadReport } from '../../../eval/benchmark-text.js';
import { LONGMEMEVAL_LEVELS, type LongMemEvalLevel } from '../../../eval/longmemeval-dataset.js';
import { noPositionals, stringOption, type CommandDefinition } from '../cli-command.js';
import { globalSettingFlags } from '../cli-engram.js';
import { formatTable, type TableColumn } from '../table-format.js';

const DEFAULT_KS = '5,10,25';

/** `engram eval`: measure recall on a dataset of memories and queries with known answers. */
export const evalCommand: CommandDefinition = {
  name: 'eval',
  summary: 'Measure recall@k and nDCG@k on a dataset of memories and queries with known answers',
  usage: 'eval --dataset <file> [--format jsonl|locomo|longmemeval] [--k 5,10,25] [--no-embedder] [options]',
  options: {
    dataset: {
      type: 'string',
      valueName: 'file',
      description:
        'The dataset: JSON Lines (memory lines as `engram export` writes them, plus query lines), or a benchmark file as published (see --format)',
    },
    format: {
      type: 'string',
      valueName: 'name',
      description:
        'jsonl (default); locomo (locomo10.json as published); longmemeval (its JSON, or a folder of one-question .json files)',
    },
    level: {
      type: 'string',
      valueName: 'turn|session',
      description: 'LongMemEval: a memory per user turn (default) or per session, the benchmark’s two levels',
    },
    k: {
      type: 'string',
      valueName: 'list',
      description: `Cut-offs to report, comma-separated (default ${DEFAULT_KS})`,
    },
    strict: {
      type: 'boolean',
      description:
        'Refuse the dataset when any line is invalid (default: leave those lines out, list them, score the rest)',
    },
    'no-embedder': {
      type: 'boolean',
      description: 'Measure full-text recall alone, even when an embedder is configured (embedding.provider)',
    },
    'no-source': {
      type: 'boolean',
      description:
        'Ignore the memories’ source fields (session, turn), as imported and hand-written memories have none',
    },
  },
  details: [
    'Query line: {"kind":"query","id":"q1","scope":"project:app","query":"which database do we use?","relevant":["mem-1"],"tags":["single-hop"]}',
    'The memories are loaded into a fresh temporary store (your own store is not touched), the clock is set just after the newest',
    'created_at, and each query is recalled in its scope with top_k at the largest k and no min_score cut-off. recall@k is the share',
    'of a query’s relevant ids in its first k results. One more recall per query at your settings reports what an agent would be given.',
    'With an embedder configured (embedding.provider), the memories are embedded into the temporary store first (the dataset goes to',
    'your embedder, as a reindex would send it) and recall fuses its vectors with full text, as in use; --no-embedder measures full text alone.',
    'Invalid lines (not JSON, an empty memory, an unknown id) are left out and listed, and the rest is scored; control characters in',
    'text are replaced with a warning. --strict refuses the dataset instead.',
    'A query line may carry "at" (ISO-8601): the question is recalled with the clock there, as when it was asked.',
    '--format locomo and --format longmemeval read the published files by the benchmarks’ own retrieval rules, written as an import',
    'would (content and date, no source, no description): LoCoMo, each dialog turn a memory (with its image caption), the evidence',
    'turns relevant, malformed evidence ids normalized or dropped; LongMemEval, user turns only, a memory per turn or per session',
    '(--level), has_answer turns relevant, each question its own scope asked at its question_date, abstention questions and those',
    'without user-side evidence left out. What was cleaned or left out (control characters, empty turns, evidence) is reported.',
  ].join('\n'),
  async run(invocation) {
    const { values, io, global } = invocation;
    noPositionals(invocation);
    const datasetOption = stringOption(values, 'dataset');
    if (datasetOption === undefined || datasetOption.trim() === '')
      throw new EngramError('INVALID_INPUT', 'Missing --dataset <file.jsonl>.');
    const ks = checkKs(parseKs(stringOption(values, 'k') ?? DEFAULT_KS));
    const format = parseFormat(stringOption(values, 'format'));
    const level = parseLevel(stringOption(values, 'level'), format);
    const path = resolve(io.cwd, datasetOption);
    const { settings } = loadSettings({ cwd: io.cwd, env: io.env, flags: globalSettingFlags(global) });
    const read = await readBenchmark(path, {
      format,
      ...(level && { level }),
      maxContentBytes: settings.memory.maxContentBytes,
    });
    const dataset = parseEvalDataset(read.text, { limits: settings.memory });
    if (values.strict === true && dataset.invalidLines.length > 0) {
      const listed = dataset.invalidLines.slice(0, 20).map((entry) => `  line ${entry.line}: ${entry.message}`);
      throw new EngramError(
        'INVALID_INPUT',
        [`The dataset has ${dataset.invalidLines.length} invalid line(s) (--strict):`, ...listed].join('\n'),
        { details: { problems: dataset.invalidLines.slice(0, 1_000) } },
      );
    }
    // Your setup as configured: with an embedder, recall fuses its vectors with full text, as in use.
    const embedder =
      values['no-embedder'] === true || settings.embedding.provider === 'none'
        ? undefined
        : (await import('../../../adapters/embedding/create-embedder.js')).createEmbedder(settings);
    const report = await runEval(dataset, {
      ks,
      settings,
      ignoreSource: values['no-source'] === true,
      ...(embedder && { embedder }),
    });
    return {
      data: { path, format, ...(level && { level }), ...(read.benchmark && { benchmark: read.benchmark }), ...report },
      text: formatReport(path, report, io.columns, io.color, read.benchmark),
    };
  },
};

function parseKs(raw: string): number[] {
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^\d{1,7}$/.test(part))) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid --k ${JSON.stringify(raw.slice(0, 40))}: whole numbers separated by commas, e.g. 5,10,25.`,
    );
  }
  return parts.map(Number);
}

function parseFormat(raw: string | undefined): EvalFormat {
  if (raw === undefined) return 'jsonl';
  const format = raw.trim().toLowerCase();
  if (!(EVAL_FORMATS as readonly string[]).includes(format))
    throw new EngramError(
      'INVALID_INPUT',
      `Unknown --format ${JSON.stringify(raw.slice(0, 40))}: use ${EVAL_FORMATS.join(', ')}.`,
    );
  return format as EvalFormat;
}

function parseLevel(raw: string | undefined, format: EvalFormat): LongMemEvalLevel | undefined {
  if (raw === undefined) return undefined;
  if (format !== 'longmemeval') throw new EngramError('INVALID_INPUT', '--level applies to --format longmemeval only.');
  const level = raw.trim().toLowerCase();
  if (!(LONGMEMEVAL_LEVELS as readonly string[]).includes(level))
    throw new EngramError('INVALID_INPUT', `Unknown --level ${JSON.stringify(raw.slice(0, 40))}: use turn or session.`);
  return level as LongMemEvalLevel;
}

/** What recall was measured with: full text alone, or fused with the embedder and how it fared. */
function formatEmbedding(embedding: EvalReport['embedding'], memories: number): string {
  if (embedding === null) return 'Recall: full text alone (no embedder configured, or --no-embedder).';
  const failed =
    embedding.failedQuestions > 0
      ? `; ${embedding.failedQuestions} question(s) recalled on full text alone: embedding them failed or gave vectors of another length`
      : '';
  return `Recall: full text fused with the embedder ${embedding.model} (${embedding.dimensions} dimensions), ${embedding.embedded} of ${memories} memories embedded${failed}.`;
}

const MAX_LISTED_INVALID_LINES = 20;

function formatInvalidLines(invalidLines: EvalReport['invalidLines']): string[] {
  if (invalidLines.length === 0) return [];
  const more = invalidLines.length - MAX_LISTED_INVALID_LINES;
  return [
    `${invalidLines.length} invalid line(s) left out, the rest scored:`,
    ...invalidLines.slice(0, MAX_LISTED_INVALID_LINES).map((entry) => `  line ${entry.line}: ${entry.message}`),
    ...(more > 0 ? [`  … and ${more} more (all in --json)`] : []),
  ];
}

function formatReport(
  path: string,
  report: EvalReport,
  width: number,
  color: boolean,
  benchmark: BenchmarkReadReport | undefined,
): string {
  const rows: Array<{ label: string; summary: MetricSummary }> = [
    { label: 'overall', summary: report.overall },
    ...Object.entries(report.byTag).map(([tag, summary]) => ({ label: tag, summary })),
  ];
  const columns: Array<TableColumn<(typeof rows)[number]>> = [
    { header: 'TAG', value: (row) => row.label, minWidth: 8 },
    { header: 'QUERIES', value: (row) => String(row.summary.queries), align: 'right' },
    ...report.ks.map((k) => ({
      header: `R@${k}`,
      value: (row: (typeof rows)[number]) => row.summary.recall[k]!.toFixed(3),
      align: 'right' as const,
    })),
    ...report.ks.map((k) => ({
      header: `nDCG@${k}`,
      value: (row: (typeof rows)[number]) => row.summary.ndcg[k]!.toFixed(3),
      align: 'right' as const,
    })),
  ];
  const { dataset, defaults } = report;
  const read = benchmark
    ? [
        `Read as ${benchmark.format === 'locomo' ? 'LoCoMo' : 'LongMemEval'} (the benchmark’s retrieval rules, memories written as an import would)${benchmark.notes.length > 0 ? ':' : '; the text needed no cleaning.'}`,
        ...benchmark.notes.map((note) => `  ${note}`),
        '',
      ]
    : [];
  const lines = [
    ...read,
    `Dataset ${path}: ${dataset.memories} memories in ${dataset.scopes} scope(s)${report.ignoredSource ? ' (source fields ignored)' : ''}, ${dataset.queries} queries scored${dataset.skipped > 0 ? `, ${dataset.skipped} skipped (no relevant ids)` : ''}.`,
    formatEmbedding(report.embedding, dataset.memories),
    '',
    formatTable(columns, rows, { width, color }),
    '',
    `At your settings (top_k ${defaults.topK}, min_score ${defaults.minScore}): ${defaults.meanResults.toFixed(2)} memories and ${Math.round(defaults.meanInjectedTokens)} tokens in the <memory_context> block per query (estimated at 4 bytes per token), holding ${defaults.meanRecall.toFixed(3)} of the relevant memories.`,
    `Recall latency: p50 ${report.latency.p50Ms} ms, p95 ${report.latency.p95Ms} ms.`,
    ...formatInvalidLines(report.invalidLines),
    ...report.warnings.map((warning) => `warning: ${warning}`),
  ];
  return lines.join('\n');
}
