import { redactStoreUrl } from '../../adapters/postgres/postgres-connection-url.js';
import type { Writable } from 'node:stream';
import type { Engram } from '../../engram.js';
import type { AgingReport } from '../../maintenance/age-memories.js';
import { startAgingSchedule, type AgingSchedule, type IntervalTimers } from '../../maintenance/aging-schedule.js';
import { openEngram, type OpenedEngram } from '../../node/open-engram.js';
import { drainSpool, SPOOL_POLL_MS } from '../claude-code/spool-drain.js';
import { packageVersion } from '../../kernel/node/package-version.js';
import { stopOnSignals } from '../../kernel/node/stop-signals.js';
import { startServer, type RunningServer } from './http-server.js';
import { createExtractor } from '../../node/create-extractor.js';
import type { JobOutcome } from '../../extraction/extraction-report.js';
import { startDreamSchedule, type DreamSchedule } from '../../consolidation/dream-schedule.js';
import type { DreamReport } from '../../consolidation/dream-report.js';
import type { SyncSchedule } from '../../sync/sync-schedule.js';
import { librarySyncCalls } from './http-sync-route.js';

/** How many finished extraction runs the service keeps for the viewer. */
const RECENT_EXTRACTIONS = 50;

export interface ServeCommandOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Flag values by dotted setting path (`server.port`, `server.host`), as the CLI passes them. */
  flags?: Record<string, unknown>;
  version?: string;
  /** Where the URL is printed; default stdout. */
  stdout?: Writable;
  /** Where shutdown notes and unexpected errors go; default stderr. */
  stderr?: Writable;
  /** Stops the service like SIGTERM does (tests, embedding). */
  signal?: AbortSignal;
  /** `json` prints one line `{"url","port","project","store"}` for programs; default text. */
  format?: 'text' | 'json';
  /** Called once the server listens. */
  onListening?: (server: RunningServer) => void;
  /** The clock of the store and of aging (tests). */
  now?: () => Date;
  /** Timers of the daily aging run (tests pass fakes); default Node's, unref'd. */
  agingTimers?: IntervalTimers;
  /** Called after each aging run. */
  onAging?: (report: AgingReport) => void;
  /** Timers of the consolidation gate checks (tests pass fakes); default Node's, unref'd. */
  dreamTimers?: IntervalTimers;
  /** Called after each automatic consolidation check (run or skipped). */
  onDream?: (report: DreamReport) => void;
}

/**
 * `engram serve`: opens the store the effective settings name, serves REST and MCP until SIGINT
 * or SIGTERM, then stops accepting connections, finishes in-flight requests and closes the store.
 */
export async function runServeCommand(options: ServeCommandOptions = {}): Promise<void> {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const opened = await openEngram({
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.flags !== undefined && { flags: options.flags }),
    ...(options.now !== undefined && { now: options.now }),
    actor: 'http',
    onNotice: (notice) => stderr.write(`engram: ${notice}\n`),
  });
  const { settings, project } = opened.loaded;
  // Extraction runs in the service: POST /v1/turns queues a turn, and this worker also drains
  // jobs other processes (hooks, the CLI) queued in the same store. Offline it applies explicit
  // statements only.
  // The viewer's Activity page shows what the latest runs wrote and dropped: the store keeps them
  // (extraction/recent-extractions.ts); this list is for a store without checkpoints.
  const recent: JobOutcome[] = [];
  const extractor = createExtractor({
    engram: opened.engram,
    onOutcome: (outcome) => {
      recent.unshift(outcome);
      recent.length = Math.min(recent.length, RECENT_EXTRACTIONS);
    },
    ...(opened.engram.model && { model: opened.engram.model }),
    projectRoot: options.cwd ?? process.cwd(),
    ...(options.now && { now: options.now }),
    onWarning: (warning) => stderr.write(`engram: extraction: ${warning}\n`),
  });
  let server: RunningServer;
  try {
    server = await startServer({
      engram: opened.engram,
      host: settings.server.host,
      port: settings.server.port,
      token: settings.server.token,
      maxBodyBytes: settings.server.maxBodyBytes,
      // In-flight requests get half the stop's grace: the rest is for the worker, the schedules and the store.
      shutdownGraceMs: Math.floor(settings.server.stopGraceMs / 2),
      version: options.version ?? packageVersion(),
      mcpScopes: [...new Set([project.scope, 'global'])],
      extractor,
      recentExtractions: () => recent,
      sync: librarySyncCalls(opened, options.cwd ?? process.cwd()),
      log: (message) => stderr.write(`${message}\n`),
    });
  } catch (error) {
    await opened.close();
    throw error;
  }

  let stop: (reason: string) => void = () => undefined;
  const stopped = new Promise<string>((resolve) => {
    stop = resolve;
  });
  const onAbort = (): void => stop('abort');
  const signals = stopOnSignals({
    graceMs: settings.server.stopGraceMs,
    log: (message) => stderr.write(`${message}\n`),
    onStop: stop,
  });
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stop('abort');

  if (options.format === 'json') {
    stdout.write(
      `${JSON.stringify({ url: server.url, port: server.port, project: project.scope, store: redactStoreUrl(settings.store.url) })}\n`,
    );
  } else {
    stdout.write(
      `engram listening on ${server.url} (project ${project.scope}, store ${redactStoreUrl(settings.store.url)}); Ctrl-C stops.\n`,
    );
    stdout.write(`MCP endpoint: ${server.url}/mcp\n`);
    stdout.write(`Viewer: ${server.url}/\n`);
  }
  options.onListening?.(server);
  let aging: AgingSchedule | undefined;
  let dreams: DreamSchedule | undefined;
  let spool: { stop: () => Promise<void> } | undefined;
  let sync: SyncSchedule | undefined;
  try {
    aging = startDailyAging(opened.engram, settings.aging.intervalHours, options, stderr);
    dreams = startDreamChecks(opened.engram, options.cwd ?? process.cwd(), options, stderr);
    extractor.start();
    spool = startSpoolDrain(opened, options.env ?? process.env, () => extractor.worker.nudge());
    // Sync with the git remotes in the background: after writes and on an interval (docs/sync.md).
    const { startBackgroundSync } = await import('../../sync/node/sync-background.js');
    sync = startBackgroundSync(opened, {
      cwd: options.cwd ?? process.cwd(),
      log: (message) => stderr.write(`${message}\n`),
    });
    const reason = await stopped;
    stderr.write(`engram: ${reason}: finishing in-flight requests…\n`);
    await server.close();
  } finally {
    await sync?.stop();
    await spool?.stop();
    await extractor.stop();
    await aging?.stop();
    await dreams?.stop();
    options.signal?.removeEventListener('abort', onAbort);
    await opened.close();
    signals.dispose();
  }
  stderr.write('engram: stopped.\n');
}

/**
 * Aging inside the service: every scope of the store, at start and every `intervalHours` (0 turns
 * it off). A failed run is logged and retried at the next tick; it never stops the service.
 */
function startDailyAging(
  engram: Engram,
  intervalHours: number,
  options: Pick<ServeCommandOptions, 'agingTimers' | 'onAging'>,
  stderr: Writable,
): AgingSchedule | undefined {
  if (!(intervalHours > 0)) return undefined;
  return startAgingSchedule({
    run: () => engram.age({ allScopes: true }),
    intervalMs: intervalHours * 3_600_000,
    ...(options.agingTimers && { timers: options.agingTimers }),
    onReport: (report) => {
      if (report.archived.length > 0)
        stderr.write(
          `engram: aging archived ${report.archived.length} memories not recalled since ${report.cutoff.slice(0, 10)}.\n`,
        );
      options.onAging?.(report);
    },
    log: (message) => stderr.write(`${message}\n`),
  });
}

/**
 * Consolidation inside the service: every `dream.checkMinutes` (0 turns it off) the gates are
 * checked (24 h, the scan interval, 5 sessions, then the store lock) over every scope of the store.
 */
function startDreamChecks(
  engram: Engram,
  projectRoot: string,
  options: Pick<ServeCommandOptions, 'dreamTimers' | 'onDream' | 'now' | 'env'>,
  stderr: Writable,
): DreamSchedule | undefined {
  const minutes = engram.settings.dream.checkMinutes;
  if (!(minutes > 0)) return undefined;
  return startDreamSchedule({
    run: async () => {
      const { runDreamWithFiles, dreamSessionHomes } = await import('../../consolidation/node/dream-runner.js');
      return runDreamWithFiles(
        {
          engram,
          projectRoot,
          ...(options.now && { now: options.now }),
          ...dreamSessionHomes(options.env ?? process.env),
        },
        { trigger: 'automatic' },
      );
    },
    intervalMs: minutes * 60_000,
    ...(options.dreamTimers && { timers: options.dreamTimers }),
    onReport: (report) => {
      if (report.status === 'applied') stderr.write(`engram: dream ${report.changeSetId}: ${report.summary}.\n`);
      options.onDream?.(report);
    },
    log: (message) => stderr.write(`${message}\n`),
  });
}

/**
 * The Claude Code hooks' spool, drained inside the service every SPOOL_POLL_MS (the hooks only
 * append to it; with `hooks.worker` off nothing else drains it): the events become extraction jobs
 * this service's worker runs.
 */
function startSpoolDrain(
  opened: OpenedEngram,
  env: NodeJS.ProcessEnv,
  onQueued: () => void,
): { stop: () => Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = (): void => {
    if (running) return;
    running = (async () => {
      const report = await drainSpool({ home: opened.loaded.home, env, opened });
      if (report.jobs > 0) onQueued();
    })()
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
      });
  };
  tick();
  const timer = setInterval(tick, SPOOL_POLL_MS);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
