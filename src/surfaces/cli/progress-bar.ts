/** A one-line progress bar redrawn in place on a terminal stream. */
export interface ProgressBar {
  update(done: number, total: number): void;
  /** Ends the line so later output starts on a fresh one. */
  finish(): void;
}

const WIDTH = 30;

/**
 * A progress bar on `stream` when it is a terminal, else one that draws nothing (pipes and logs
 * get no carriage returns). Redraws only when the shown text changes.
 */
export function createProgressBar(
  stream: { isTTY?: boolean; write(text: string): unknown },
  label: string,
): ProgressBar {
  if (stream.isTTY !== true) return { update: () => undefined, finish: () => undefined };
  let shown = '';
  return {
    update(done, total) {
      const ratio = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(ratio * WIDTH);
      const text = `${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${done}/${total}`;
      if (text === shown) return;
      shown = text;
      stream.write(`\r${text}`);
    },
    finish() {
      if (shown !== '') stream.write('\n');
    },
  };
}
