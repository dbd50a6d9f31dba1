/**
 * The memory tool's text formats (Anthropic's `memory_20250818` reference strings, FORMATS.md §4.1):
 * numbered file views, directory listings with human sizes, and the messages of each command.
 */

/** Width of the right-aligned line numbers in a file view. */
const LINE_NUMBER_WIDTH = 6;

/** The lines of a file as the tool shows and edits them: its text without the final newline, split on newlines. */
export function fileLines(text: string): string[] {
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

/** Joins lines back into file text, with the final newline every memory file ends in. */
export function joinFileLines(lines: readonly string[]): string {
  return `${lines.join('\n')}\n`;
}

/** One numbered line: the 1-based number right-aligned in 6 columns, a TAB, the text. */
export function numberedLine(number: number, text: string): string {
  return `${String(number).padStart(LINE_NUMBER_WIDTH, ' ')}\t${text}`;
}

/** A human size as `du -h` prints it: `512B`, `4.0K`, `1.5M`, `12K`. */
export function humanSize(bytes: number): string {
  const units = ['B', 'K', 'M', 'G', 'T'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${bytes}B`;
  const rounded = value < 10 ? value.toFixed(1) : String(Math.round(value));
  // 9.96K rounds to "10.0": print it the way larger values are printed.
  return `${rounded === '10.0' ? '10' : rounded}${units[unit]}`;
}

/** A number with thousands separators, as the reference line-limit message writes it (999,999). */
export function groupedNumber(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The protocol's success and error strings, as the reference implementation words them. */
export const memoryToolText = {
  listingHeader: (path: string) =>
    `Here're the files and directories up to 2 levels deep in ${path}, excluding hidden items and node_modules:`,
  fileHeader: (path: string) => `Here's the content of ${path} with line numbers:`,
  viewMissing: (path: string) => `The path ${path} does not exist. Please provide a valid path.`,
  tooManyLines: (path: string, maxLines: number) =>
    `File ${path} exceeds maximum line limit of ${groupedNumber(maxLines)} lines.`,
  created: (path: string) => `File created successfully at: ${path}`,
  createExists: (path: string) => `Error: File ${path} already exists`,
  edited: 'The memory file has been edited.',
  snippetHeader: 'Here is the snippet showing the change (with line numbers):',
  editMissing: (path: string) => `Error: The path ${path} does not exist. Please provide a valid path.`,
  oldStringAbsent: (oldString: string, path: string) =>
    `No replacement was performed, old_str \`${oldString}\` did not appear verbatim in ${path}.`,
  oldStringRepeated: (oldString: string, lines: readonly number[]) =>
    `No replacement was performed. Multiple occurrences of old_str \`${oldString}\` in lines: ${lines.join(', ')}. Please ensure it is unique`,
  inserted: (path: string) => `The file ${path} has been edited.`,
  missing: (path: string) => `Error: The path ${path} does not exist`,
  insertLineInvalid: (insertLine: unknown, lineCount: number) =>
    `Error: Invalid \`insert_line\` parameter: ${String(insertLine)}. It should be within the range of lines of the file: [0, ${lineCount}]`,
  deleted: (path: string) => `Successfully deleted ${path}`,
  deleteRoot: 'Error: Cannot delete the /memories directory itself',
  renamed: (oldPath: string, newPath: string) => `Successfully renamed ${oldPath} to ${newPath}`,
  renameRoot: 'Error: Cannot rename the /memories directory itself',
  destinationExists: (path: string) => `Error: The destination ${path} already exists`,
} as const;

/** Lines shown around an edit in str_replace's snippet, before and after. */
export const SNIPPET_CONTEXT_LINES = 4;

/** The numbered lines `first..last` (1-based, inclusive) of a file, for snippets and ranged views. */
export function numberedLines(lines: readonly string[], first: number, last: number): string[] {
  const out: string[] = [];
  for (let number = Math.max(1, first); number <= Math.min(last, lines.length); number += 1)
    out.push(numberedLine(number, lines[number - 1] ?? ''));
  return out;
}

/**
 * Numbered lines of a file view cut to `maxChars` characters at a line boundary, with a note
 * saying which lines were shown and how to read the rest.
 */
export function numberedView(
  header: string,
  lines: readonly string[],
  first: number,
  last: number,
  maxChars: number,
): string {
  let text = header;
  let shownLast = first - 1;
  for (let number = first; number <= last; number += 1) {
    const line = `\n${numberedLine(number, lines[number - 1] ?? '')}`;
    if (text.length + line.length > maxChars) {
      // A first line longer than the whole budget is shown cut rather than not at all.
      if (number === first) text += `${line.slice(0, Math.max(0, maxChars - text.length - 1))}…`;
      break;
    }
    text += line;
    shownLast = number;
  }
  if (shownLast < last) {
    const shown = shownLast >= first ? `lines ${first}-${shownLast}` : `part of line ${first}`;
    const next = Math.max(shownLast + 1, first + 1);
    const rest = next <= last ? ` View the rest with view_range [${next}, -1].` : '';
    text += `\n[Output cut at ${maxChars} characters: ${shown} of ${lines.length} shown.${rest}]`;
  }
  return text;
}
