/**
 * The one cleaning of text that comes from outside (conversations, imported files, datasets):
 * real text carries control characters (a PDF's `\u0002` in place of a hyphen, a terminal's
 * escape codes, a stray `\u000C` page break) and must not be refused whole for one of them.
 */

// C0 controls other than tab, newline and carriage return, DEL, C1 controls: the set memory content
// refuses (a CR stays, so a file exported with CRLF line ends imports back byte for byte).
const CONTROL_RUN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]+/g;
const CONTROL_ONE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g;

/** Text with its control characters replaced, and how many there were. */
export interface CleanedText {
  text: string;
  /** Control characters replaced. */
  replaced: number;
}

/**
 * Replaces control characters with a space (a run of them with one space; none next to a space
 * already there or at either end), keeps tab, newline and carriage return. Pure.
 */
export function cleanControlCharacters(text: string): CleanedText {
  const found = text.match(CONTROL_ONE);
  if (found === null) return { text, replaced: 0 };
  const cleaned = text.replace(CONTROL_RUN, (_run, offset: number, whole: string) => {
    const before = offset === 0 ? '' : whole[offset - 1]!;
    const after = whole[offset + _run.length] ?? '';
    return before === '' || after === '' || /\s/.test(before) || /\s/.test(after) ? '' : ' ';
  });
  return { text: cleaned, replaced: found.length };
}

/** A warning for `replaced` control characters in `where` ("line 4 content"), or undefined for none. */
export function controlCharacterWarning(where: string, replaced: number): string | undefined {
  if (replaced === 0) return undefined;
  return `${where}: replaced ${replaced} control character${replaced === 1 ? '' : 's'} (kept tab and newline).`;
}
