import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
  ftruncateSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToTimers } from 'node:timers/promises';
import { listSessions } from '../src/session/node/session-listing.js';
import { readSessionTranscript } from '../src/session/node/session-transcript-reader.js';
import { SessionTranscriptWriter } from '../src/session/node/session-transcript-writer.js';
import type { SessionMessage } from '../src/contracts/session-message.js';

/**
 * Session transcripts (issue 5 targets): appends per second through the buffered writer (≥ 20K
 * messages/s), listing 1,000 sessions of 10 MB each (≤ 64 KB read per file, counted), and resuming
 * a 50 MB transcript (≤ 1 s). Files live in a temp folder; the 10 MB sessions are sparse (a hole,
 * then a real tail written by the writer), so the listing reads real lines but the disk holds ~100 MB.
 */

export interface TranscriptBenchResult {
  appends: { messages: number; bytes: number; seconds: number; messagesPerSecond: number; target: number };
  listing: {
    sessions: number;
    bytesPerSession: number;
    seconds: number;
    maxBytesReadPerFile: number;
    meanBytesReadPerFile: number;
    /** Bytes the process read during the listing, as the kernel counts them (/proc/self/io rchar); absent off Linux. */
    processBytesRead?: number;
    target: number;
    titlesFound: number;
  };
  resume: {
    fileBytes: number;
    linesInFile: number;
    messagesResumed: number;
    medianSeconds: number;
    runs: number[];
    target: number;
  };
}

const APPEND_TARGET = 20_000;
const LISTING_TARGET_BYTES = 64 * 1024;
const RESUME_TARGET_SECONDS = 1;

let sequence = 0;
/** A realistic mix: a user prompt, an assistant turn with a tool call, a tool result, an answer. */
function nextMessage(sessionDay: number, bytes: number): SessionMessage {
  const index = sequence++;
  const timestamp = new Date(Date.UTC(2026, 0, sessionDay, 0, 0, 0) + index).toISOString();
  const filler = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(bytes / 27)).slice(0, bytes);
  switch (index % 4) {
    case 0:
      return { uuid: `m-${index}`, role: 'user', content: `Question ${index}: ${filler}`, timestamp };
    case 1:
      return {
        uuid: `m-${index}`,
        role: 'assistant',
        content: [
          { type: 'text', text: `Looking. ${filler.slice(0, bytes / 4)}` },
          { type: 'tool_use', id: `toolu_${index}`, name: 'read_file', input: { path: `src/file-${index}.ts` } },
        ],
        timestamp,
        model: 'claude-bench',
        usage: { inputTokens: 1_000 + index, outputTokens: 50, cacheReadTokens: 900 },
      };
    case 2:
      return {
        uuid: `m-${index}`,
        role: 'user',
        content: [{ type: 'tool_result', toolUseId: `toolu_${index - 1}`, content: filler }],
        timestamp,
      };
    default:
      return {
        uuid: `m-${index}`,
        role: 'assistant',
        content: `Answer ${index}: ${filler}`,
        timestamp,
        model: 'claude-bench',
      };
  }
}

/** Appends `count` messages through the writer (yielding so its 100 ms timer flushes as in a session); returns the file size. */
async function writeTranscript(
  path: string,
  sessionId: string,
  count: number,
  bytesPerMessage: number,
  options: { title?: string; day?: number } = {},
): Promise<void> {
  const writer = new SessionTranscriptWriter({ path, sessionId, cwd: '/work/bench', gitBranch: 'main' });
  if (options.title)
    writer.append({
      kind: 'metadata',
      metadata: { sessionId, title: options.title },
      timestamp: new Date().toISOString(),
    });
  let parent: string | null = null;
  for (let index = 0; index < count; index += 1) {
    const message = nextMessage(options.day ?? 1, bytesPerMessage);
    writer.append({ kind: 'message', message, parentUuid: parent });
    parent = message.uuid;
    if (index % 1_000 === 999) await yieldToTimers();
  }
  await writer.close();
}

async function benchAppends(directory: string): Promise<TranscriptBenchResult['appends']> {
  const path = join(directory, 'appends', 'append-bench.jsonl');
  const messages = 200_000;
  const started = performance.now();
  await writeTranscript(path, 'append-bench', messages, 300);
  const seconds = (performance.now() - started) / 1_000;
  return {
    messages,
    bytes: statSync(path).size,
    seconds: round(seconds, 3),
    messagesPerSecond: Math.round(messages / seconds),
    target: APPEND_TARGET,
  };
}

async function benchListing(
  directory: string,
  sessions: number,
  bytesPerSession: number,
): Promise<TranscriptBenchResult['listing']> {
  const project = join(directory, 'listing');
  mkdirSync(project, { recursive: true, mode: 0o700 });
  // One real tail (~100 KB of lines from the writer), reused with each session's own metadata line at the end.
  const templatePath = join(directory, 'template.jsonl');
  await writeTranscript(templatePath, 'template', 240, 400);
  const template = readFileSync(templatePath);
  const tail = template.subarray(template.indexOf(10, template.length - 100 * 1024) + 1);
  for (let index = 0; index < sessions; index += 1) {
    const sessionId = `session-${String(index).padStart(4, '0')}`;
    const metadata = {
      type: 'engram-metadata',
      sessionId,
      timestamp: new Date().toISOString(),
      metadata: {
        sessionId,
        title: `Bench session ${index}`,
        updatedAt: new Date(Date.UTC(2026, 0, 1) + index * 60_000).toISOString(),
        messageCount: 10_000,
      },
    };
    const ending = Buffer.concat([tail, Buffer.from(`${JSON.stringify(metadata)}\n`)]);
    const descriptor = openSync(join(project, `${sessionId}.jsonl`), 'w', 0o600);
    try {
      // Sparse: the hole costs no disk and is never read.
      ftruncateSync(descriptor, bytesPerSession - ending.length);
      writeSync(descriptor, ending, 0, ending.length, bytesPerSession - ending.length);
    } finally {
      closeSync(descriptor);
    }
  }
  const before = processBytesRead();
  const started = performance.now();
  const summaries = await listSessions({ projectDirectory: project });
  const seconds = (performance.now() - started) / 1_000;
  const after = processBytesRead();
  const bytesRead = summaries.map((summary) => summary.bytesRead);
  return {
    sessions: summaries.length,
    bytesPerSession,
    seconds: round(seconds, 3),
    maxBytesReadPerFile: Math.max(...bytesRead),
    meanBytesReadPerFile: Math.round(bytesRead.reduce((sum, value) => sum + value, 0) / bytesRead.length),
    ...(before !== undefined && after !== undefined && { processBytesRead: after - before }),
    target: LISTING_TARGET_BYTES,
    titlesFound: summaries.filter((summary) => summary.title?.startsWith('Bench session')).length,
  };
}

async function benchResume(directory: string): Promise<TranscriptBenchResult['resume']> {
  const path = join(directory, 'resume', 'resume-bench.jsonl');
  // ~1 KB a message: 50,000 messages make ~50 MB.
  await writeTranscript(path, 'resume-bench', 50_000, 900, { title: 'Resume bench' });
  const fileBytes = statSync(path).size;
  const linesInFile = readFileSync(path, 'utf8').split('\n').length - 1;
  const runs: number[] = [];
  let messagesResumed = 0;
  for (let run = 0; run < 3; run += 1) {
    const started = performance.now();
    const resumed = await readSessionTranscript(path);
    runs.push(round((performance.now() - started) / 1_000, 3));
    messagesResumed = resumed.messages.length;
  }
  const sorted = [...runs].sort((a, b) => a - b);
  return { fileBytes, linesInFile, messagesResumed, medianSeconds: sorted[1]!, runs, target: RESUME_TARGET_SECONDS };
}

/** Runs the three measures in a temp folder and removes it. */
export async function benchSessionTranscripts(
  options: { sessions?: number; bytesPerSession?: number } = {},
): Promise<TranscriptBenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-transcript-bench-'));
  try {
    const appends = await benchAppends(directory);
    const listing = await benchListing(
      directory,
      options.sessions ?? 1_000,
      options.bytesPerSession ?? 10 * 1024 * 1024,
    );
    const resume = await benchResume(directory);
    return { appends, listing, resume };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The `transcripts` part of `npm run bench`: runs and prints. */
export async function benchSessionTranscriptsPart(): Promise<TranscriptBenchResult> {
  const result = await benchSessionTranscripts();
  const { appends, listing, resume } = result;
  console.log('\nSession transcripts (buffered writer, tail listing, resume)');
  console.table([
    {
      measure: `appends/s, ${appends.messages} messages incl. final flush (target ≥ ${appends.target})`,
      value: appends.messagesPerSecond,
    },
    { measure: 'append MB written', value: round(appends.bytes / 1e6, 1) },
    {
      measure: `listing ${listing.sessions} sessions × ${listing.bytesPerSession / 1024 / 1024} MB: seconds`,
      value: listing.seconds,
    },
    { measure: `max bytes read per file (target ≤ ${listing.target})`, value: listing.maxBytesReadPerFile },
    { measure: 'mean bytes read per file', value: listing.meanBytesReadPerFile },
    { measure: 'bytes the process read while listing (/proc/self/io)', value: listing.processBytesRead ?? 'n/a' },
    { measure: 'titles found from the tails', value: listing.titlesFound },
    {
      measure: `resume ${round(resume.fileBytes / 1e6, 1)} MB (${resume.linesInFile} lines): median s (target ≤ ${resume.target})`,
      value: resume.medianSeconds,
    },
    { measure: 'resume runs s', value: resume.runs.join(' / ') },
    { measure: 'messages resumed', value: resume.messagesResumed },
  ]);
  return result;
}

function processBytesRead(): number | undefined {
  try {
    const match = /rchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

// `npx tsx bench/session-transcript-bench.ts` runs this part alone.
if (import.meta.url === `file://${process.argv[1]}`) await benchSessionTranscriptsPart();
