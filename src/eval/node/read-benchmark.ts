import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { BenchmarkReadReport } from '../benchmark-text.js';
import { readLocomo } from '../locomo-dataset.js';
import { convertLongMemEval, type LongMemEvalLevel } from '../longmemeval-dataset.js';

/** The dataset formats `engram eval` reads: its own JSON Lines, and two benchmarks as published. */
export const EVAL_FORMATS = ['jsonl', 'locomo', 'longmemeval'] as const;
export type EvalFormat = (typeof EVAL_FORMATS)[number];

/** Larger files are refused before they are read whole into memory. */
export const MAX_DATASET_BYTES = 512 * 1024 * 1024;

export interface ReadBenchmarkOptions {
  format: EvalFormat;
  /** LongMemEval: a memory per user turn (default) or per session. */
  level?: LongMemEvalLevel;
  maxContentBytes?: number;
}

/** The dataset as evaluation lines, and what reading a published benchmark found (absent for jsonl). */
export interface ReadDataset {
  text: string;
  benchmark?: BenchmarkReadReport;
}

/**
 * Reads a dataset from `path`: a JSON Lines file as it is; LoCoMo's `locomo10.json`; LongMemEval's
 * JSON (an array of questions, or one question) or a folder of such files (one question per file, as
 * development splits are kept). A file of a folder that is not JSON is left out and reported.
 */
export async function readBenchmark(path: string, options: ReadBenchmarkOptions): Promise<ReadDataset> {
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw new EngramError(
      error.code === 'ENOENT' ? 'NOT_FOUND' : 'INVALID_INPUT',
      `Cannot read the dataset ${path} (${error.code ?? 'error'}).`,
      { cause: error },
    );
  });
  if (info.isDirectory()) {
    if (options.format !== 'longmemeval')
      throw new EngramError(
        'INVALID_INPUT',
        `The dataset ${path} is not a file but a folder: only --format longmemeval reads a folder (one question per .json file).`,
      );
    return readLongMemEvalFolder(path, options);
  }
  if (!info.isFile()) throw new EngramError('INVALID_INPUT', `The dataset ${path} is not a file.`);
  const text = await readText(path, info.size);
  if (options.format === 'jsonl') return { text };
  const data = parseJson(text, path);
  const converted =
    options.format === 'locomo'
      ? readLocomo(data, { ...(options.maxContentBytes !== undefined && { maxContentBytes: options.maxContentBytes }) })
      : convertLongMemEval(data, longMemEvalOptions(options));
  return { text: converted.lines.join('\n'), benchmark: converted.report };
}

async function readLongMemEvalFolder(path: string, options: ReadBenchmarkOptions): Promise<ReadDataset> {
  const names = (await readdir(path)).filter((name) => name.toLowerCase().endsWith('.json')).sort();
  if (names.length === 0) throw new EngramError('INVALID_INPUT', `The folder ${path} holds no .json file.`);
  const questions: unknown[] = [];
  const unread: string[] = [];
  let bytes = 0;
  for (const name of names) {
    const file = join(path, name);
    const info = await stat(file);
    bytes += info.size;
    if (bytes > MAX_DATASET_BYTES)
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `The files of ${path} hold more than ${MAX_DATASET_BYTES} bytes; at most that is read.`,
      );
    try {
      const data = JSON.parse(withoutByteOrderMark(await readText(file, info.size))) as unknown;
      questions.push(...(Array.isArray(data) ? data : [data]));
    } catch (error) {
      unread.push(`${name} (${error instanceof EngramError ? error.message : 'not JSON'})`);
    }
  }
  if (questions.length === 0)
    throw new EngramError(
      'INVALID_INPUT',
      `No file of ${path} could be read as JSON: ${unread.slice(0, 5).join('; ')}.`,
    );
  const converted = convertLongMemEval(questions, longMemEvalOptions(options));
  const report = converted.report;
  if (unread.length > 0) {
    report.counts.unreadFiles = unread.length;
    report.notes.unshift(
      `${unread.length} file(s) of the folder left out: ${unread.slice(0, 5).join('; ')}${unread.length > 5 ? '; …' : ''}.`,
    );
  }
  return { text: converted.lines.join('\n'), benchmark: report };
}

function longMemEvalOptions(options: ReadBenchmarkOptions): Parameters<typeof convertLongMemEval>[1] {
  return {
    ...(options.level !== undefined && { level: options.level }),
    ...(options.maxContentBytes !== undefined && { maxContentBytes: options.maxContentBytes }),
  };
}

async function readText(path: string, size: number): Promise<string> {
  if (size > MAX_DATASET_BYTES)
    throw new EngramError(
      'PAYLOAD_TOO_LARGE',
      `The dataset ${path} is ${size} bytes; at most ${MAX_DATASET_BYTES} are read.`,
    );
  const buffer = await readFile(path);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw new EngramError('INVALID_INPUT', `The dataset ${path} is not UTF-8 text.`);
  }
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(withoutByteOrderMark(text)) as unknown;
  } catch (error) {
    throw new EngramError(
      'INVALID_INPUT',
      `The dataset ${path} is not JSON (${error instanceof Error ? error.message.slice(0, 120) : 'parse error'}): the published benchmark file is one JSON document.`,
    );
  }
}

function withoutByteOrderMark(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}
