import type { JobOutcome } from '../../extraction/extraction-report.js';
import type { ExtractionProgress } from '../../extraction/extraction-run-dependencies.js';

/** What `engram extract` tells while it runs: messages read of all, memories written. */
export interface ExtractProgress {
  start(messages: number, model: string): void;
  read(progress: ExtractionProgress): void;
  outcome(outcome: JobOutcome): void;
  finish(): void;
}

const SILENT: ExtractProgress = { start() {}, read() {}, outcome() {}, finish() {} };

/**
 * Progress on stderr, never stdout (which may carry --json): redrawn in place on a terminal, one
 * line per step in a log. `enabled` false draws nothing.
 */
export function createExtractProgress(
  stream: { isTTY?: boolean; write(text: string): unknown },
  enabled: boolean,
): ExtractProgress {
  if (!enabled) return SILENT;
  const terminal = stream.isTTY === true;
  const readByJob = new Map<string, { read: number; of: number }>();
  let total = 0;
  let written = 0;
  let drawn = false;
  const draw = (): void => {
    let read = 0;
    let of = 0;
    for (const entry of readByJob.values()) {
      read += entry.read;
      of += entry.of;
    }
    const line = `engram: extract: ${Math.min(read, Math.max(total, of))}/${Math.max(total, of)} messages read, ${written} ${written === 1 ? 'memory' : 'memories'} written`;
    stream.write(terminal ? `\r\u001b[K${line}` : `${line}\n`);
    drawn = true;
  };
  return {
    start(messages, model) {
      total = messages;
      stream.write(`engram: extract: ${messages} new message(s) to read with ${model}\n`);
    },
    read(progress) {
      readByJob.set(progress.jobId, { read: progress.messagesRead, of: progress.messages });
      draw();
    },
    outcome(outcome) {
      if (outcome.state !== 'done') return;
      written += outcome.report.written.length;
      const known = readByJob.get(outcome.job.id);
      if (known) known.read = known.of;
      draw();
    },
    finish() {
      if (terminal && drawn) stream.write('\n');
    },
  };
}
