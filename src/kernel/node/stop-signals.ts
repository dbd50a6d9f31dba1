import { constants } from 'node:os';

/** The signals a long-running engram process stops on: what MCP clients, service managers and Ctrl-C send. */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

export interface StopSignalsOptions {
  /** How long the orderly stop may take after the first signal before the process exits anyway (setting `server.stopGraceMs`). */
  graceMs: number;
  /** Told when the process exits without finishing its stop (a second signal, or the grace ran out). */
  log: (message: string) => void;
  /** Told once, on the first signal, besides `signal` aborting. */
  onStop?: (signal: StopSignal) => void;
  /** The signals listened to (default both); `engram chat` reads SIGINT as Ctrl-C, an interrupt, itself. */
  signals?: readonly StopSignal[];
}

/** A long-running process's stop: `signal` aborts (reason: the signal's name) on the first SIGTERM or SIGINT. */
export interface StopSignals {
  readonly signal: AbortSignal;
  /** Stops listening (the process's work ended on its own, or its stop is done). */
  dispose(): void;
}

/**
 * How every long-running engram process (`engram mcp`, `engram serve`, the hooks' worker, `engram
 * chat`) stops on SIGTERM and SIGINT: the first signal aborts `signal`, and the process finishes
 * what it is doing, gives its jobs back, releases its locks and closes its store. Whatever that
 * leaves behind, it never outlives `graceMs`: then, or at a second signal, it exits at once with
 * 128 + the signal's number, as a process the signal killed would. An orderly stop that ends the
 * process sooner is not delayed (the grace timer does not keep it alive).
 */
export function stopOnSignals(options: StopSignalsOptions): StopSignals {
  const controller = new AbortController();
  let grace: NodeJS.Timeout | undefined;
  const exitNow = (signal: StopSignal, why: string): never => {
    options.log(`engram: ${signal}: ${why}; exiting now.`);
    process.exit(128 + (constants.signals[signal] ?? 15));
  };
  const listener = (signal: StopSignal): void => {
    if (controller.signal.aborted) exitNow(signal, 'a second stop signal arrived before the stop finished');
    controller.abort(signal);
    grace = setTimeout(
      () => exitNow(signal, `the stop did not finish within ${options.graceMs} ms (server.stopGraceMs)`),
      options.graceMs,
    );
    grace.unref();
    try {
      options.onStop?.(signal);
    } catch {
      // The stop goes on: signal is aborted and the grace runs.
    }
  };
  const names = options.signals ?? STOP_SIGNALS;
  for (const name of names) process.on(name, listener);
  return {
    signal: controller.signal,
    dispose() {
      for (const name of names) process.off(name, listener);
      // After a signal the grace timer stays: unref'd, it ends a process something still holds open, and delays no other.
      if (!controller.signal.aborted) clearTimeout(grace);
    },
  };
}
