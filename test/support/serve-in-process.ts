import { PassThrough } from 'node:stream';
import { runServeCommand, type ServeCommandOptions } from '../../src/surfaces/http/http-service.js';

/** An `engram serve` running in this process. */
export interface ServingInProcess {
  url: string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Aborts it and waits until it has shut down. */
  stop(): Promise<void>;
}

/** Runs `engram serve` (runServeCommand) in this process, its stdout dropped and stderr kept, and waits until it listens. */
export async function serveInProcess(
  options: Omit<ServeCommandOptions, 'signal' | 'stdout' | 'stderr' | 'onListening'>,
): Promise<ServingInProcess> {
  let stderr = '';
  const errors = new PassThrough().setEncoding('utf8');
  errors.on('data', (chunk: string) => (stderr += chunk));
  const controller = new AbortController();
  let listening!: (url: string) => void;
  const url = new Promise<string>((resolve) => (listening = resolve));
  const serving = runServeCommand({
    ...options,
    signal: controller.signal,
    stdout: new PassThrough(),
    stderr: errors,
    onListening: (server) => listening(server.url),
  });
  const listened = await Promise.race([url, serving.then(() => undefined)]);
  if (listened === undefined) throw new Error(`engram serve ended before it listened: ${stderr}`);
  return {
    url: listened,
    stderr: () => stderr,
    stop: async () => {
      controller.abort();
      await serving;
    },
  };
}
