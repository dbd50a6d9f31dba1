import { EngramError } from '../../../kernel/errors.js';
import { JOB_STATES, type JobState } from '../../../contracts/memory-store-jobs.js';
import { DEFAULT_JOB_STATES, type JobJson } from '../../../extraction/engram-jobs.js';
import {
  integerOption,
  stringOptions,
  type CommandDefinition,
  type CommandInvocation,
  type CommandOutput,
} from '../cli-command.js';
import { withEngram } from '../cli-engram.js';
import { formatAge, formatTable } from '../table-format.js';
import { createExtractor } from '../../../node/create-extractor.js';
import { countSpooled } from '../../claude-code/hook-spool.js';

const DEFAULT_LIMIT = 50;
const ACTIONS = ['list', 'retry', 'run'] as const;

/** `engram queue`: the durable background jobs (extraction), their states, retries. */
export const queueCommand: CommandDefinition = {
  name: 'queue',
  summary: 'Show background jobs (pending, running, failed); retry a failed one; run due ones now',
  usage:
    'queue [list] [--state pending,running,failed,done] [--limit n]   |   queue retry <id>   |   queue run [--force] [--failed]',
  options: {
    state: {
      type: 'string',
      multiple: true,
      valueName: JOB_STATES.join(','),
      description: 'Only jobs in these states (default pending, running, failed)',
    },
    limit: { type: 'string', valueName: 'n', description: `How many jobs at most (default ${DEFAULT_LIMIT})` },
    force: {
      type: 'boolean',
      description: 'queue run: also the jobs waiting for a retry (their wait skipped, attempts kept)',
    },
    failed: {
      type: 'boolean',
      description: 'queue run: also the failed jobs (put back with attempts reset, as queue retry does)',
    },
  },
  details:
    'Extraction queues one job per turn in the store, so a job accepted before a crash runs after the restart. A job that keeps failing ' +
    'is retried with growing waits, then marked failed (with its last error) and left for you: "engram queue retry <id>" puts it back, ' +
    '"engram queue run" runs every due extraction job now with the configured model; with --force also the ones waiting for a retry, ' +
    'with --failed also the failed ones.',
  async run(invocation) {
    const { values, positionals } = invocation;
    const action = (positionals[0] ?? 'list') as (typeof ACTIONS)[number];
    if (!ACTIONS.includes(action))
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown queue action ${JSON.stringify(String(action).slice(0, 40))}: use list, retry <id> or run.`,
      );
    const rest = positionals.slice(1);
    const runOptions = (['force', 'failed'] as const).filter((name) => values[name] === true);
    if (action !== 'run' && runOptions.length > 0)
      throw new EngramError(
        'INVALID_INPUT',
        `--${runOptions[0]} applies to "engram queue run", not to queue ${action}.`,
      );
    if (action === 'retry') {
      if (rest.length !== 1)
        throw new EngramError('INVALID_INPUT', 'Missing job id: engram queue retry <id> (engram queue lists the ids).');
      return withEngram(invocation, async (opened) => {
        const job = await opened.engram.jobs.retry(rest[0]!);
        return {
          data: { job },
          text: `Job ${job.id} (${job.key}) is pending again; "engram queue run" runs it now, or the next extraction will.`,
        };
      });
    }
    if (rest.length > 0)
      throw new EngramError(
        'INVALID_INPUT',
        `engram queue ${action} takes no arguments (got ${JSON.stringify(rest[0]!.slice(0, 40))}).`,
      );
    if (action === 'run') return withEngram(invocation, (opened) => runQueue(invocation, opened));
    const states = parseStates(stringOptions(values, 'state'));
    const limit = integerOption(values, 'limit', { min: 1, max: 10_000 }) ?? DEFAULT_LIMIT;
    return withEngram(invocation, (opened) => listQueue(invocation, opened, states, limit));
  },
};

type Opened = Parameters<Parameters<typeof withEngram>[1]>[0];

/** `engram queue run`: the hooks' spool queued, then every due job run (with --force and --failed, more). */
async function runQueue(invocation: CommandInvocation, opened: Opened): Promise<CommandOutput> {
  const { values } = invocation;
  // The Claude Code hooks' spool first: its events become jobs this run runs.
  const { drainSpool } = await import('../../claude-code/spool-drain.js');
  const spool = await drainSpool({ home: opened.loaded.home, env: invocation.io.env, opened });
  const model = opened.engram.model;
  const extractor = createExtractor({
    engram: opened.engram,
    projectRoot: opened.loaded.project.root,
    autoStart: false,
    ...(model && { model }),
  });
  const report = await opened.engram.jobs.run({
    extractor,
    ...(values.force === true && { force: true }),
    ...(values.failed === true && { failed: true }),
  });
  const { outcomes, hastened, revived, handledElsewhere = 0, left } = report;
  const data = { offline: !model, spool, ...report };
  const done = outcomes.filter((outcome) => outcome.state === 'done').length;
  const lines = [
    ...(spool.claimed > 0
      ? [
          `Queued ${spool.queued} hook event(s) from the spool (${spool.jobs} new job(s))${spool.putBack > 0 ? `, ${spool.putBack} left for later` : ''}.`,
        ]
      : []),
    ...(hastened !== undefined ? [`${hastened} job(s) waiting for a retry made due now.`] : []),
    ...(revived !== undefined
      ? [
          `${revived} failed job(s) put back.${handledElsewhere > 0 ? ` ${handledElsewhere} other(s) were put back or removed by another process first.` : ''}`,
        ]
      : []),
    `Ran ${outcomes.length} due job(s): ${done} done, ${outcomes.length - done} failed or waiting for a retry.${model ? '' : ' No model is configured: only explicit statements were applied.'}`,
    ...outcomes.flatMap((outcome) =>
      outcome.state === 'done' ? [] : [`  ${outcome.job.id} ${outcome.state}: ${outcome.error}`],
    ),
  ];
  if (left.pending > 0 && values.force !== true)
    lines.push(
      `${left.pending} job(s) still pending (waiting for a retry, or queued meanwhile): "engram queue run --force" runs them now.`,
    );
  if (left.failed > 0 && values.failed !== true)
    lines.push(`${left.failed} failed job(s) left: "engram queue run --failed" (or queue retry <id>) runs them again.`);
  return { data, text: lines.join('\n') };
}

/** `engram queue` (list): the counts, the spool's waiting events, and a table of the jobs in the states asked. */
async function listQueue(
  invocation: CommandInvocation,
  opened: Opened,
  states: JobState[],
  limit: number,
): Promise<CommandOutput> {
  const list = await opened.engram.jobs.list({ states, limit });
  const { counts, jobs } = list;
  const spooled = countSpooled(opened.loaded.home);
  // The shape of GET /v1/jobs (engram.jobs.list), and the hook events not yet queued.
  const data = { ...list, spooled };
  const summary = `Extraction queue: ${JOB_STATES.map((state) => `${counts[state]} ${state}`).join(', ')}.${spooled > 0 ? ` ${spooled} Claude Code hook event(s) in the spool, not yet queued ("engram queue run" queues them).` : ''}`;
  if (jobs.length === 0) return { data, text: `${summary}\nNo ${states.join(', ')} jobs.` };
  const now = Date.now();
  const table = formatTable(
    [
      { header: 'ID', value: (job: JobJson) => job.id },
      { header: 'STATE', value: (job: JobJson) => job.state },
      { header: 'TRIES', value: (job: JobJson) => `${job.attempts}/${job.maxAttempts}`, align: 'right' },
      { header: 'QUEUED', value: (job: JobJson) => formatAge(job.createdAt, now), align: 'right' },
      { header: 'KEY', value: (job: JobJson) => job.key, minWidth: 12 },
      {
        header: 'LAST ERROR',
        value: (job: JobJson) =>
          job.lastError ?? (job.state === 'pending' && Date.parse(job.runAt) > now ? `retry at ${job.runAt}` : ''),
        minWidth: 12,
      },
    ],
    jobs,
    { width: invocation.io.columns, color: invocation.io.color },
  );
  return { data, text: `${summary}\n${table}` };
}

function parseStates(raw: readonly string[]): JobState[] {
  if (raw.length === 0) return [...DEFAULT_JOB_STATES];
  const states = raw.flatMap((value) => value.split(',')).map((state) => state.trim());
  for (const state of states) {
    if (!JOB_STATES.includes(state as JobState))
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid --state ${JSON.stringify(state.slice(0, 40))}: use ${JOB_STATES.join(', ')}.`,
      );
  }
  return [...new Set(states as JobState[])];
}
