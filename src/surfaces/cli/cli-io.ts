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
  /** Width human tables are fitted to: the terminal's; unbounded when piped (a file or `grep` wants whole values). */
  columns: number;
}

/** Columns used on a terminal that does not say its width. */
export const DEFAULT_COLUMNS = 120;

/**
 * The width tables are cut to: the terminal's (at least 40); `COLUMNS` when the user sets it;
 * otherwise, when stdout is not a terminal, none at all.
 */
export function outputColumns(options: {
  isTerminal: boolean;
  terminalColumns: number | undefined;
  env: Record<string, string | undefined>;
}): number {
  const fromEnv = Number(options.env.COLUMNS);
  if (options.env.COLUMNS !== undefined && Number.isSafeInteger(fromEnv) && fromEnv > 0) return Math.max(40, fromEnv);
  if (!options.isTerminal) return Number.POSITIVE_INFINITY;
  return options.terminalColumns ? Math.max(40, options.terminalColumns) : DEFAULT_COLUMNS;
}

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
    columns: outputColumns({ isTerminal: stdoutIsTerminal, terminalColumns: process.stdout.columns, env }),
  };
}
