import { resolve } from 'node:path';
import {
  readTranscriptFile,
  TRANSCRIPT_FORMATS,
  type TranscriptFormat,
} from '../../../extraction/node/read-transcript.js';
import { EngramError, errorKind } from '../../../kernel/errors.js';
import type { DroppedItem } from '../../../extraction/extraction-output.js';
import type { ExtractionRunReport, WrittenMemory, JobOutcome } from '../../../extraction/extraction-report.js';
import { Extractor } from '../../../extraction/extractor.js';
import { singlePositional, stringOption, type CommandDefinition, type CommandInvocation } from '../cli-command.js';
import { withEngram } from '../cli-engram.js';
import { oneLine } from '../table-format.js';
import { createExtractor } from '../../../node/create-extractor.js';
import { createExtractProgress } from '../extract-progress.js';

const MODES = ['cheap', 'agent'] as const;
const MODEL_HINT =
  'Set ANTHROPIC_API_KEY, or OPENAI_API_KEY / OPENAI_BASE_URL (Ollama, vLLM, LM Studio), and run engram extract again to extract the rest.';

/** `engram extract <file>`: extract long-term memories from a transcript now. */
export const extractCommand: CommandDefinition = {
  name: 'extract',
  summary:
    'Extract long-term memories from a transcript (Claude Code, Codex, Gemini CLI, Copilot CLI, Qwen Code, engram, chat messages or plain text)',
  usage:
    'extract <file> [--format claude|engram|text|chat|codex|gemini|copilot|qwen] [--mode cheap|agent] [--session <id>] [options]',
  options: {
    format: {
      type: 'string',
      valueName: TRANSCRIPT_FORMATS.join('|'),
      description: 'How to read the file (default: detected)',
    },
    mode: {
      type: 'string',
      valueName: MODES.join('|'),
      description:
        'cheap: one model call a turn, JSON out (default); agent: a helper with the memory tool and sandboxed read-only tools',
    },
    progress: {
      type: 'boolean',
      description: 'Tell on stderr how far it got (messages read, memories written); the default on a terminal',
    },
    quiet: { type: 'boolean', description: 'No progress on stderr, even on a terminal' },
    session: {
      type: 'string',
      valueName: 'id',
      description: 'Session id the cursor is kept under (default: the one the file names, else one made from its path)',
    },
  },
  details:
    'Only messages after the last extracted one are read (the cursor of the session), so running it again on a grown transcript reads what is new. ' +
    'The turns are queued in the store and run at once; memories are deduplicated on write. ' +
    'With no model configured (ANTHROPIC_API_KEY, or OPENAI_API_KEY / OPENAI_BASE_URL), only explicit statements ("remember that …", "from now on …") are written, the command says what a model would add, and it exits 0 (exit 2 is for bad input). ' +
    'Formats: Claude Code and engram JSON Lines, chat messages ({"role","content"} lines, a JSON array of them or {"messages":[…]}, OpenAI or Anthropic style), plain text.',
  async run(invocation) {
    const { values, io } = invocation;
    const { path, format, mode, session } = extractArguments(invocation);
    // The file is read and checked before the store opens: a bad file changes nothing.
    const transcript = await readTranscriptFile(path, {
      ...(format && { format }),
      ...(session !== undefined && { sessionId: session }),
    });
    if (session !== undefined) transcript.conversation.sessionId = session;
    return withEngram(invocation, async (opened) => {
      const model = opened.engram.model;
      const progress = createExtractProgress(
        io.stderr,
        values.quiet !== true && (values.progress === true || io.stderr.isTTY === true),
      );
      const extractor = createExtractor({
        onProgress: (read) => progress.read(read),
        onOutcome: (outcome) => progress.outcome(outcome),
        engram: opened.engram,
        mode,
        projectRoot: opened.loaded.project.root,
        autoStart: false,
        ...(model && { model }),
      });
      const read = { path, transcript, extractor };
      if (!model) return extractOffline(read);
      const done = await extractWithModel(read, model, mode, progress);
      if (done.failure) {
        if (!invocation.global.json) io.stdout.write(`${done.text}\n`);
        const { failure } = done;
        const next =
          failure.state === 'failed'
            ? `it is marked failed; "engram queue retry ${failure.job.id}" puts it back`
            : `it stays queued and is retried${failure.retryAt ? ` from ${failure.retryAt}` : ''} ("engram queue run --force" runs it now)`;
        throw new EngramError(
          isKnownCode(failure.code) ? failure.code : 'INTERNAL',
          `Extraction of ${path} did not finish: ${failure.error}. The job is kept: ${next}.`,
          { details: done.data },
        );
      }
      return { data: done.data, text: done.text };
    });
  },
};

/** The file and the flags, checked: a bad one is refused before anything is read. */
function extractArguments(invocation: CommandInvocation): {
  path: string;
  format: TranscriptFormat | undefined;
  mode: (typeof MODES)[number];
  session: string | undefined;
} {
  const { values, io } = invocation;
  const path = resolve(io.cwd, singlePositional(invocation, 'file'));
  const format = stringOption(values, 'format') as TranscriptFormat | undefined;
  if (format !== undefined && !TRANSCRIPT_FORMATS.includes(format)) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid --format ${JSON.stringify(String(format).slice(0, 40))}: use ${TRANSCRIPT_FORMATS.join(', ')}.`,
    );
  }
  const mode = (stringOption(values, 'mode') ?? 'cheap') as (typeof MODES)[number];
  if (!MODES.includes(mode))
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid --mode ${JSON.stringify(String(mode).slice(0, 40))}: use ${MODES.join(' or ')}.`,
    );
  if (values.progress === true && values.quiet === true)
    throw new EngramError('INVALID_INPUT', '--progress and --quiet contradict each other: give one.');
  return { path, format, mode, session: stringOption(values, 'session') };
}

/** A transcript read and checked, and the extractor that will take it. */
interface ReadTranscript {
  path: string;
  transcript: Awaited<ReturnType<typeof readTranscriptFile>>;
  extractor: ReturnType<typeof createExtractor>;
}

function reportHead({ path, transcript }: ReadTranscript, mode: string) {
  return {
    file: path,
    format: transcript.format,
    sessionId: transcript.conversation.sessionId,
    mode,
    transcriptWarnings: transcript.warnings,
  };
}

/** No model: the explicit statements only, and what a model would add (offline is not a failure: exit 0). */
async function extractOffline(read: ReadTranscript): Promise<{ data: unknown; text: string }> {
  const { path, transcript, extractor } = read;
  const explicit = await extractor.applyExplicitOnly(transcript.conversation);
  const modelWouldAdd = {
    messages: explicit.messages,
    what: 'facts, preferences, decisions and procedures stated without "remember", and the updates and contradictions of what is stored',
    configure: MODEL_HINT,
  };
  const data = {
    ...reportHead(read, 'offline'),
    messages: explicit.messages,
    appliedBefore: explicit.appliedBefore,
    written: explicit.written,
    dropped: [],
    modelNeeded: true,
    modelWouldAdd,
    warnings: explicit.warnings,
  };
  const before =
    explicit.appliedBefore > 0
      ? ` ${explicit.appliedBefore} of them were read for explicit statements before, so not again.`
      : '';
  const text = [
    `Read ${path} (${transcript.format}, session ${transcript.conversation.sessionId}): ${explicit.messages} new message(s).${before}`,
    ...formatWritten(explicit.written),
    `No language model is configured, so only explicit statements ("remember that …", "from now on …") were applied (${explicit.written.length} written).`,
    ...(explicit.messages > 0
      ? [`A model would also read the ${explicit.messages} message(s) for ${modelWouldAdd.what}. ${MODEL_HINT}`]
      : []),
    ...explicit.warnings.map((warning) => `warning: ${warning}`),
    ...transcript.warnings.map((warning) => `warning: ${warning}`),
  ].join('\n');
  return { data, text };
}

/** With the model: the new turns queued and run now; a job of this transcript that did not finish is returned beside the report. */
async function extractWithModel(
  read: ReadTranscript,
  model: { provider: string; modelId: string },
  mode: string,
  progress: ReturnType<typeof createExtractProgress>,
) {
  const { path, transcript, extractor } = read;
  const { conversation } = transcript;
  const queued = await extractor.afterTurn(conversation);
  if (queued.messages > 0) progress.start(queued.messages, `${model.provider} ${model.modelId}`);
  const outcomes = await extractor.drain().finally(() => progress.finish());
  const reports = Extractor.reports(outcomes);
  const mine = reports.filter((report) => report.sessionId === conversation.sessionId);
  const data = {
    ...reportHead(read, mode),
    queued,
    runs: reports,
    failures: outcomes.filter((outcome) => outcome.state !== 'done').map(describeFailure),
    written: mine.flatMap((report) => report.written),
    dropped: mine.flatMap((report) => report.dropped),
    modelCalls: mine.reduce((sum, report) => sum + report.modelCalls, 0),
    usage: sumUsage(mine),
  };
  const failure = outcomes.find(
    (outcome): outcome is Exclude<JobOutcome, { state: 'done' }> =>
      outcome.state !== 'done' && queued.jobs.some((job) => job.id === outcome.job.id),
  );
  const text = formatReport(
    path,
    transcript.format,
    conversation.sessionId,
    queued.messages,
    mine,
    transcript.warnings,
  );
  return { data, text, failure };
}

function formatReport(
  path: string,
  format: string,
  sessionId: string,
  messages: number,
  reports: readonly ExtractionRunReport[],
  warnings: readonly string[],
): string {
  if (messages === 0 && reports.length === 0)
    return `Nothing new in ${path} (${format}, session ${sessionId}): every message was extracted before.`;
  const calls = reports.reduce((sum, report) => sum + report.modelCalls, 0);
  const statuses = [...new Set(reports.map((report) => report.status))].filter((status) => status !== 'already-done');
  return [
    `Extracted from ${path} (${format}, session ${sessionId}): ${messages} new message(s), ${calls} model call(s)${statuses.length > 0 ? `, ${statuses.join(', ')}` : ''}.`,
    ...formatWritten(reports.flatMap((report) => report.written)),
    ...reports.flatMap((report) => report.dropped).map(formatDropped),
    ...[...warnings, ...reports.flatMap((report) => report.warnings)].map((warning) => `warning: ${warning}`),
  ].join('\n');
}

function formatWritten(written: readonly WrittenMemory[]): string[] {
  if (written.length === 0) return ['  no memory written'];
  return written.map(
    (memory) =>
      `  ${memory.action.padEnd(8)} ${memory.id} ${oneLine(memory.name)} (${memory.type}, ${memory.scope}${memory.origin === 'explicit' ? ', explicit' : ''})`,
  );
}

function formatDropped(item: DroppedItem): string {
  return `  dropped  ${item.reason}: ${oneLine(item.excerpt ?? item.name ?? '')} (${oneLine(item.detail)})`;
}

function describeFailure(outcome: JobOutcome): Record<string, unknown> {
  if (outcome.state === 'done') return {};
  return {
    id: outcome.job.id,
    key: outcome.job.key,
    state: outcome.state,
    error: outcome.error,
    ...(outcome.retryAt && { retryAt: outcome.retryAt }),
  };
}

function sumUsage(reports: readonly ExtractionRunReport[]): ExtractionRunReport['usage'] {
  const total = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  for (const report of reports)
    for (const key of Object.keys(total) as Array<keyof typeof total>) total[key] += report.usage[key];
  return total;
}

function isKnownCode(code: string | undefined): code is EngramError['code'] {
  return typeof code === 'string' && errorKind(new EngramError(code as EngramError['code'], '')) !== undefined;
}
