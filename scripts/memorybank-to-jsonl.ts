/**
 * Converts MemoryBank (`../shared/data/memorybank/`, MIT) to engram's evaluation format: each user
 * a `user:` scope, each exchange (the user's message and the companion's answer) a memory with its
 * day and source turn, each probing question a query. MemoryBank ships no evidence, so the
 * exchanges that answer each question were labelled by hand (`memorybank-evidence.json`, one list
 * of `"<day>#<exchange>"` per question, in the order of `probing_questions_en.jsonl`; an empty list
 * where the history holds no answer). The labels were written by reading the conversations, before
 * any ranking was looked at; they are one reader's judgement, not the authors'.
 *
 *   npx tsx scripts/memorybank-to-jsonl.ts [--out bench/.data/memorybank.jsonl]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { capitalized, MONTHS } from '../src/kernel/calendar-words.js';

/** What the conversion found. */
export interface MemoryBankConversionReport {
  users: number;
  days: number;
  exchanges: number;
  questions: number;
  /** Questions whose label list is empty (the history does not answer them): skipped by the evaluation. */
  questionsWithoutEvidence: number;
}

interface Exchange {
  query: string;
  response: string;
}

/**
 * Converts parsed `memory_bank_en.json`, the lines of `probing_questions_en.jsonl` and the evidence
 * labels to evaluation lines (memory lines, then query lines) and a report. Throws on a label that
 * names no exchange or a question count that does not match.
 */
export function convertMemoryBank(
  histories: unknown,
  questionLines: readonly string[],
  evidence: Readonly<Record<string, ReadonlyArray<readonly string[]>>>,
): { lines: string[]; report: MemoryBankConversionReport } {
  if (histories === null || typeof histories !== 'object' || Array.isArray(histories))
    throw new Error('MemoryBank histories are a JSON object keyed by user.');
  const questions = new Map<string, string[]>();
  for (const line of questionLines) {
    if (line.trim() === '') continue;
    for (const [user, list] of Object.entries(JSON.parse(line) as Record<string, string[]>))
      questions.set(user.trim(), list);
  }
  const lines: string[] = [];
  const report: MemoryBankConversionReport = {
    users: 0,
    days: 0,
    exchanges: 0,
    questions: 0,
    questionsWithoutEvidence: 0,
  };
  for (const [rawUser, record] of Object.entries(
    histories as Record<string, { history?: Record<string, Exchange[]> }>,
  )) {
    const user = rawUser.trim();
    const slug = user.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    const scope = `user:memorybank-${slug}`;
    const known = new Set<string>();
    report.users += 1;
    for (const [day, exchanges] of Object.entries(record.history ?? {})) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`${user}: unexpected day ${JSON.stringify(day)}.`);
      report.days += 1;
      exchanges.forEach((exchange, index) => {
        const turn = index + 1;
        known.add(`${day}#${turn}`);
        report.exchanges += 1;
        lines.push(
          JSON.stringify({
            kind: 'memory',
            id: `${slug}:${day}:${turn}`,
            scope,
            description: `${user} and the AI companion, ${spokenDay(day)}`,
            content: `${user}: ${exchange.query.trim()}\nAI companion: ${exchange.response.trim()}`,
            // Exchanges of a day are a minute apart from noon: the order they were said in.
            created_at: new Date(Date.parse(`${day}T12:00:00.000Z`) + index * 60_000).toISOString(),
            source: { sessionId: `${slug}:${day}`, turnId: String(turn) },
          }),
        );
      });
    }
    const asked = questions.get(user) ?? [];
    const labels = evidence[user] ?? [];
    if (labels.length !== asked.length)
      throw new Error(`${user}: ${asked.length} probing questions but ${labels.length} evidence lists.`);
    asked.forEach((question, index) => {
      report.questions += 1;
      const relevant = labels[index]!.map((label) => {
        if (!known.has(label)) throw new Error(`${user}: evidence ${JSON.stringify(label)} names no exchange.`);
        const [day, turn] = label.split('#');
        return `${slug}:${day}:${turn}`;
      });
      if (relevant.length === 0) report.questionsWithoutEvidence += 1;
      lines.push(
        JSON.stringify({
          kind: 'query',
          id: `${slug}:q${index + 1}`,
          scope,
          query: question.replace(/^"|"$/g, ''),
          relevant,
          tags: [questionKind(question)],
        }),
      );
    });
  }
  return { lines, report };
}

/** "2023-04-27" → "27 April 2023": the day as people write it in questions. */
function spokenDay(day: string): string {
  const [year, month, date] = day.split('-').map(Number);
  return `${date} ${capitalized(MONTHS[month! - 1]!)} ${year}`;
}

/** A coarse tag: questions that name a day, that check a claim ("…, right?"), or the rest. */
function questionKind(question: string): string {
  if (
    /\b(on|of)\s+(january|february|march|april|may|june|july|august|september|october|november|december)\s+\d/i.test(
      question,
    )
  )
    return 'dated';
  if (/right\?\W*$/i.test(question)) return 'verification';
  return 'recall';
}

export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const MEMORYBANK_SOURCE = resolve(
  REPOSITORY_ROOT,
  process.env.ENGRAM_BENCH_DATA ?? '../shared/data',
  'memorybank',
);
export const MEMORYBANK_EVIDENCE = resolve(REPOSITORY_ROOT, 'scripts/memorybank-evidence.json');
export const MEMORYBANK_OUTPUT = resolve(REPOSITORY_ROOT, 'bench/.data/memorybank.jsonl');

/** Reads MemoryBank from its folder and converts it, or undefined when the folder is absent. */
export function readMemoryBank(
  source: string = MEMORYBANK_SOURCE,
  evidenceFile: string = MEMORYBANK_EVIDENCE,
): ReturnType<typeof convertMemoryBank> | undefined {
  const historiesFile = resolve(source, 'memory_bank_en.json');
  const questionsFile = resolve(source, 'probing_questions_en.jsonl');
  if (!existsSync(historiesFile) || !existsSync(questionsFile)) return undefined;
  return convertMemoryBank(
    JSON.parse(readFileSync(historiesFile, 'utf8')),
    readFileSync(questionsFile, 'utf8').split('\n'),
    JSON.parse(readFileSync(evidenceFile, 'utf8')) as Record<string, string[][]>,
  );
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { input: { type: 'string' }, out: { type: 'string' } } });
  const converted = readMemoryBank(resolve(values.input ?? MEMORYBANK_SOURCE));
  if (!converted) throw new Error(`MemoryBank is absent from ${values.input ?? MEMORYBANK_SOURCE}.`);
  const output = resolve(values.out ?? MEMORYBANK_OUTPUT);
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, `${converted.lines.join('\n')}\n`);
  const { report } = converted;
  console.log(
    `${report.users} users, ${report.days} days, ${report.exchanges} exchanges, ${report.questions} questions (${report.questionsWithoutEvidence} without evidence).`,
  );
  console.log(`wrote ${output}`);
}
