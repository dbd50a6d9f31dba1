/** What a command reads and writes besides the store: streams, environment and terminal facts. */
export interface CliIo {
  cwd: string;
  env: Record<string, string | undefined>;
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Whether stdin is an interactive terminal (confirmations are only asked there). */
  interactive: boolean;
  /** Whether human output may use ANSI colors. */
  color: boolean;
  /** Width human tables are fitted to. */
  columns: number;
}

/** Columns used when stdout is not a terminal. */
export const DEFAULT_COLUMNS = 120;

/** The process's own streams and environment, as the `engram` binary sees them. */
export function processIo(): CliIo {
  const env = process.env;
  const stdoutIsTerminal = process.stdout.isTTY === true;
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  return {
    cwd: process.cwd(),
    env,
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    interactive: process.stdin.isTTY === true,
    color: stdoutIsTerminal && !noColor && env.TERM !== 'dumb',
    columns: stdoutIsTerminal && process.stdout.columns ? Math.max(40, process.stdout.columns) : DEFAULT_COLUMNS,
  };
}
