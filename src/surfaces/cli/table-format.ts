/** One column of a text table. */
export interface TableColumn<Row> {
  header: string;
  value: (row: Row) => string;
  align?: 'left' | 'right';
  /** Narrowest the column may be squeezed to when the table is too wide; columns without it are never squeezed. */
  minWidth?: number;
}

/** How a table is fitted and styled. */
export interface TableOptions {
  /** Total width to fit in (the terminal's, or 120). */
  width: number;
  color: boolean;
}

const GAP = '  ';

/**
 * Formats rows as an aligned text table fitted to a width: squeezable columns are cut with "…",
 * in proportion to their minimum widths. Control characters in values are shown as spaces so a value cannot move the cursor.
 */
export function formatTable<Row>(
  columns: ReadonlyArray<TableColumn<Row>>,
  rows: readonly Row[],
  options: TableOptions,
): string {
  const cells = rows.map((row) => columns.map((column) => oneLine(column.value(row))));
  const widths = columns.map((column, index) =>
    Math.max(displayWidth(column.header), ...cells.map((line) => displayWidth(line[index]!))),
  );
  let excess = widths.reduce((sum, width) => sum + width, 0) + GAP.length * (columns.length - 1) - options.width;
  for (; excess > 0; excess -= 1) {
    let widest = -1;
    for (const [index, column] of columns.entries()) {
      if (column.minWidth === undefined || widths[index]! <= column.minWidth) continue;
      // Shrink the column most over its floor relative to that floor, so floors act as weights.
      if (widest === -1 || widths[index]! / column.minWidth > widths[widest]! / columns[widest]!.minWidth!)
        widest = index;
    }
    if (widest === -1) break;
    widths[widest]! -= 1;
  }
  const render = (values: readonly string[]): string =>
    values
      .map((value, index) => {
        const width = widths[index]!;
        const text = truncate(value, width);
        if (index === values.length - 1 && columns[index]!.align !== 'right') return text;
        return columns[index]!.align === 'right' ? text.padStart(width) : padEnd(text, width);
      })
      .join(GAP)
      .trimEnd();
  const header = render(columns.map((column) => column.header));
  const lines = [options.color ? `\u001b[1m${header}\u001b[22m` : header, ...cells.map(render)];
  return lines.join('\n');
}

/** Cuts text to at most `width` characters, ending in "…" when cut. */
export function truncate(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (width <= 1) return '…'.slice(0, width);
  return `${[...text].slice(0, width - 1).join('')}…`;
}

/** One line of plain text: control characters (newlines included) become spaces. */
export function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001F\u007F-\u009F]+/g, ' ');
}

/** How long ago an instant was, compactly: "just now", "5m", "3h", "12d", "2y". */
export function formatAge(iso: string | null, now: number = Date.now()): string {
  if (iso === null) return 'never';
  const seconds = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (seconds < 60) return 'just now';
  const minutes = seconds / 60;
  if (minutes < 60) return `${Math.floor(minutes)}m`;
  const hours = minutes / 60;
  if (hours < 48) return `${Math.floor(hours)}h`;
  const days = hours / 24;
  if (days < 730) return `${Math.floor(days)}d`;
  return `${Math.floor(days / 365)}y`;
}

/** Aligns `key  value` pairs in two columns. */
export function formatFields(fields: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(0, ...fields.map(([key]) => key.length));
  return fields.map(([key, value]) => `${key.padEnd(width)}  ${value}`.trimEnd()).join('\n');
}

function displayWidth(text: string): number {
  return [...text].length;
}

function padEnd(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}
