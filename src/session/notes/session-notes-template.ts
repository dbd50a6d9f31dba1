import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import { estimateTextTokens, utf8ByteLength } from '../../kernel/token-estimate.js';

/**
 * Layer 3's file (SPEC §2): the session notes, one Markdown heading per section, each section
 * edited whole by a forked helper (never appended to). This module holds the format: the default
 * template and update prompt, reading sections, replacing one section while every other byte stays
 * as it was, telling the untouched template from real notes, the size caps, and reading the
 * helper's `<section name="…">` edits.
 */

/** The ten sections of SPEC §2 layer 3, in order. */
export const SESSION_NOTES_SECTIONS = [
  'Session Title',
  'Current State',
  'Task Specification',
  'Files and Functions',
  'Workflow',
  'Errors and Corrections',
  'Codebase and System Documentation',
  'Learnings',
  'Key Results',
  'Worklog',
] as const;

export type SessionNotesSectionName = (typeof SESSION_NOTES_SECTIONS)[number];

const DESCRIPTIONS: Record<SessionNotesSectionName, string> = {
  'Session Title': 'A short, distinctive title of 5 to 10 words for this session',
  'Current State': 'What is being worked on right now; pending tasks not yet done; the immediate next steps',
  'Task Specification':
    "What the user asked for, in the user's own words where they matter; design decisions and constraints",
  'Files and Functions': 'The important files and functions: what they hold and why they matter',
  Workflow: 'The commands that are run and in what order; how to read their output',
  'Errors and Corrections':
    'Errors met and how they were fixed; what the user corrected; approaches that failed and must not be retried',
  'Codebase and System Documentation': 'The important parts of the system and how they fit together',
  Learnings: 'What worked well, what did not, what to avoid',
  'Key Results': 'When the user asked for a specific output (an answer, a table, a document), that exact result',
  Worklog: 'Step by step, what was tried and done; very terse',
};

/** The default notes file: each section a `#` heading with an italic line saying what belongs there. */
export const DEFAULT_SESSION_NOTES_TEMPLATE: string = SESSION_NOTES_SECTIONS.map(
  (name) => `# ${name}\n_${DESCRIPTIONS[name]}_\n`,
).join('\n');

/**
 * The default update prompt, sent as the last user message after the parent's conversation (so the
 * helper shares the parent's cached prefix). Placeholders: {{notes}}, {{sections}},
 * {{sectionMaxTokens}}, {{fileMaxTokens}}.
 */
export const DEFAULT_SESSION_NOTES_PROMPT = `This message is not part of the conversation with the user: do not answer the user and do not call tools.

You keep the session notes of the conversation above: a Markdown file from which the work can be continued once the earlier messages are gone. Update them with what the conversation above (not this message) shows.

The current notes:
<current-notes>
{{notes}}
</current-notes>

How to answer:
- Answer only with the sections you change, each in one block:
<section name="Current State">
the whole new content of that section
</section>
- The name is one of: {{sections}}. Leave out the heading and the italic line under it; they are kept.
- A block replaces the content of its section entirely: write the complete new content, not an addition. Keep what is still true, drop what no longer is.
- Always bring "Current State" up to date: continuing the work depends on it most.
- Be dense and specific: file paths, function names, exact commands, exact error messages, the user's instructions in their own words. No filler.
- Keep each section under about {{sectionMaxTokens}} tokens and the whole file under {{fileMaxTokens}} tokens; condense older detail (the Worklog first) instead of letting it grow.
- Never write secrets (keys, passwords, tokens).
- If nothing worth noting changed, answer exactly <no-changes/>.`;

/** One section of a notes file, with offsets into the text it was read from. */
export interface NotesSection {
  /** The heading's text, as written. */
  name: string;
  /** Heading level (number of `#`). */
  level: number;
  /** Offset of the heading line. */
  start: number;
  /** Offset just after the heading line (its newline included). */
  bodyStart: number;
  /** Offset of the next section's heading, or the text's length. */
  end: number;
  /** `text.slice(bodyStart, end)`. */
  body: string;
}

const HEADING = /^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

interface Line {
  text: string;
  start: number;
  next: number;
}

function lines(text: string): Line[] {
  const result: Line[] = [];
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf('\n', start);
    const next = newline === -1 ? text.length : newline + 1;
    result.push({ text: text.slice(start, newline === -1 ? text.length : newline).replace(/\r$/, ''), start, next });
    start = next;
  }
  return result;
}

/** Headings outside code fences: `{ level, name, line }`. */
function headings(text: string): Array<{ level: number; name: string; line: Line }> {
  const found: Array<{ level: number; name: string; line: Line }> = [];
  let fence: string | undefined;
  for (const line of lines(text)) {
    const opener = FENCE.exec(line.text)?.[1];
    if (opener !== undefined) {
      if (fence === undefined) fence = opener;
      else if (opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const match = HEADING.exec(line.text);
    if (match && match[2] !== '') found.push({ level: match[1]!.length, name: match[2]!, line });
  }
  return found;
}

/**
 * The sections of a notes file: the headings of the top level used (deeper headings belong to the
 * section above them; headings inside code fences are text). Text before the first heading belongs
 * to no section.
 */
export function parseNotesSections(text: string): NotesSection[] {
  if (typeof text !== 'string') throw new EngramError('INVALID_INPUT', 'Session notes are text (a string).');
  const all = headings(text);
  if (all.length === 0) return [];
  const level = Math.min(...all.map((heading) => heading.level));
  const top = all.filter((heading) => heading.level === level);
  return top.map((heading, index) => {
    const end = top[index + 1]?.line.start ?? text.length;
    return {
      name: heading.name,
      level,
      start: heading.line.start,
      bodyStart: heading.line.next,
      end,
      body: text.slice(heading.line.next, end),
    };
  });
}

/** Section names compare without case and with runs of spaces as one. */
export function sectionKey(name: string): string {
  return name.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** The section of `text` named `name` (first one, if repeated). */
export function findNotesSection(text: string, name: string): NotesSection | undefined {
  const key = sectionKey(name);
  return parseNotesSections(text).find((section) => sectionKey(section.name) === key);
}

/**
 * Replaces one section's body; every byte outside it stays as it was. Headings in the new body at
 * the section's level or above are demoted (so an edit can never add or split sections) and an
 * unclosed code fence is closed (so it cannot swallow the sections after it).
 */
export function replaceNotesSection(text: string, section: string, body: string): string {
  if (typeof body !== 'string') throw new EngramError('INVALID_INPUT', 'A section body is text (a string).');
  const sections = parseNotesSections(text);
  const key = sectionKey(String(section));
  const index = sections.findIndex((candidate) => sectionKey(candidate.name) === key);
  if (index === -1) {
    const names = sections.map((candidate) => JSON.stringify(candidate.name)).join(', ') || 'none';
    throw new EngramError(
      'INVALID_INPUT',
      `The session notes have no section named ${JSON.stringify(String(section).slice(0, 100))}; their sections: ${names}.`,
    );
  }
  const target = sections[index]!;
  const content = containBody(body, target.level)
    .replace(/^(?:[ \t]*\r?\n)+/, '')
    .trimEnd();
  const hasNext = index + 1 < sections.length;
  const separator = target.bodyStart === text.length && !text.endsWith('\n') ? '\n' : '';
  const formatted = (content === '' ? '' : `${content}\n`) + (hasNext ? '\n' : '');
  return text.slice(0, target.bodyStart) + separator + formatted + text.slice(target.end);
}

function containBody(body: string, level: number): string {
  let fence: string | undefined;
  const out: string[] = [];
  for (const line of lines(body.replace(/\r\n/g, '\n'))) {
    const opener = FENCE.exec(line.text)?.[1];
    if (opener !== undefined) {
      if (fence === undefined) fence = opener;
      else if (opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
      out.push(line.text);
      continue;
    }
    const match = fence === undefined ? HEADING.exec(line.text) : null;
    if (match && match[1]!.length <= level) {
      out.push(level < 6 ? `${'#'.repeat(level + 1)}${line.text.slice(match[1]!.length)}` : `\\${line.text}`);
    } else out.push(line.text);
  }
  if (fence !== undefined) out.push(fence);
  return out.join('\n');
}

const normalize = (text: string): string => text.replace(/\s+/g, ' ').trim();

/**
 * True when the notes hold something beyond the template: a section whose body differs from the
 * template's (whitespace aside), or text outside any section. The untouched template, reformatted
 * or not, is no content (compaction must not use it as a summary).
 */
export function hasRealNotesContent(text: string, template: string): boolean {
  if (typeof text !== 'string' || typeof template !== 'string')
    throw new EngramError('INVALID_INPUT', 'Session notes and template are text (strings).');
  const current = normalize(text);
  if (current === '' || current === normalize(template)) return false;
  const sections = parseNotesSections(text);
  if (sections.length === 0) return true;
  const templateSections = parseNotesSections(template);
  const expected = new Map(templateSections.map((section) => [sectionKey(section.name), normalize(section.body)]));
  for (const section of sections) {
    const body = normalize(section.body);
    if (body !== '' && body !== (expected.get(sectionKey(section.name)) ?? '')) return true;
  }
  const preamble = normalize(text.slice(0, sections[0]!.start));
  const templatePreamble = normalize(template.slice(0, templateSections[0]?.start ?? template.length));
  return preamble !== '' && preamble !== templatePreamble;
}

/** The template's italic line under a section heading (`_…_` or `*…*`), if it has one. */
export function sectionDescription(template: string, name: string): string | undefined {
  const section = findNotesSection(template, name);
  const first = section?.body
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim();
  return first !== undefined && /^(_[^_].*_|\*[^*].*\*)$/.test(first) ? first : undefined;
}

type CapSettings = Pick<Settings, 'notes'> & Partial<Pick<Settings, 'tokens'>>;

/** Sections and the whole file measured against the caps. */
export interface NotesCapReport {
  /** Sections over `notes.sectionMaxTokens`, in file order. */
  sections: Array<{ name: string; tokens: number }>;
  fileTokens: number;
  /** The whole file is over `notes.fileMaxTokens`. */
  fileOver: boolean;
  /** Anything is over a cap. */
  over: boolean;
}

function tokensOf(text: string, settings: CapSettings): number {
  return estimateTextTokens(text, settings.tokens ? { bytesPerToken: settings.tokens.bytesPerTextToken } : {});
}

/** Which sections, and whether the whole file, are over the caps (SPEC: ~2K per section, 12K per file). */
export function notesOverCaps(text: string, settings: CapSettings): NotesCapReport {
  const sections = parseNotesSections(text)
    .map((section) => ({ name: section.name, tokens: tokensOf(section.body, settings) }))
    .filter((section) => section.tokens > settings.notes.sectionMaxTokens);
  const fileTokens = tokensOf(text, settings);
  const fileOver = fileTokens > settings.notes.fileMaxTokens;
  return { sections, fileTokens, fileOver, over: fileOver || sections.length > 0 };
}

/** What the next update prompt adds when the notes are over a cap: the sections to condense, by name. */
export function notesCapsNotice(report: NotesCapReport, settings: Pick<Settings, 'notes'>): string {
  if (!report.over) return '';
  const parts = [
    'The notes are over their size caps: condense now, keeping the most important facts and dropping detail.',
  ];
  for (const section of report.sections) {
    parts.push(`- Condense "${section.name}": about ${section.tokens} tokens, cap ${settings.notes.sectionMaxTokens}.`);
  }
  if (report.fileOver)
    parts.push(
      `- The whole file is about ${report.fileTokens} tokens, cap ${settings.notes.fileMaxTokens}: shorten the longest sections.`,
    );
  return parts.join('\n');
}

/** The marker a hard-capped section ends with. */
export const NOTES_SECTION_CUT_MARKER = '[… cut at the hard cap of this section; condense it]';

/**
 * The hard cap: a section body still over twice `notes.sectionMaxTokens` is cut (at a line end when
 * one is near) and marked, so one runaway section cannot crowd out the rest of the context.
 */
export function capNotesSections(text: string, settings: CapSettings): { text: string; truncated: string[] } {
  const bytesPerToken = settings.tokens?.bytesPerTextToken ?? 4;
  const limitBytes = Math.floor(2 * settings.notes.sectionMaxTokens * bytesPerToken);
  const truncated: string[] = [];
  let result = text;
  // From the last section back, so earlier offsets stay valid.
  for (const section of [...parseNotesSections(text)].reverse()) {
    if (tokensOf(section.body, settings) <= 2 * settings.notes.sectionMaxTokens) continue;
    let cut = prefixWithinBytes(section.body, Math.max(0, limitBytes - utf8ByteLength(NOTES_SECTION_CUT_MARKER) - 2));
    const lineEnd = cut.lastIndexOf('\n');
    if (lineEnd > cut.length / 2) cut = cut.slice(0, lineEnd);
    const body = `${cut.trimEnd()}\n${NOTES_SECTION_CUT_MARKER}\n${section.end < result.length ? '\n' : ''}`;
    result = result.slice(0, section.bodyStart) + body + result.slice(section.end);
    truncated.unshift(section.name);
  }
  return { text: result, truncated };
}

function prefixWithinBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let index = 0;
  for (const character of text) {
    const size = utf8ByteLength(character);
    if (bytes + size > maxBytes) break;
    bytes += size;
    index += character.length;
  }
  return text.slice(0, index);
}

/** Fills the update prompt's placeholders. A prompt without {{notes}} gets the notes appended. */
export function renderNotesPrompt(
  prompt: string,
  input: { notes: string; sections: readonly string[]; settings: Pick<Settings, 'notes'> },
): string {
  const values: Record<string, string> = {
    notes: input.notes,
    sections: input.sections.map((name) => `"${name}"`).join(', '),
    sectionMaxTokens: String(input.settings.notes.sectionMaxTokens),
    fileMaxTokens: String(input.settings.notes.fileMaxTokens),
  };
  // One pass, so placeholder-like text inside the notes is left as it is.
  const filled = prompt.replace(
    /\{\{(notes|sections|sectionMaxTokens|fileMaxTokens)\}\}/g,
    (_, name: string) => values[name]!,
  );
  return prompt.includes('{{notes}}') ? filled : `${filled}\n\n<current-notes>\n${input.notes}\n</current-notes>`;
}

/** One section edit the helper answered. */
export interface NotesSectionEdit {
  /** The section's name as the notes spell it. */
  section: string;
  body: string;
}

const SECTION_BLOCK = /<section\s+name="([^"\n]{1,200})"\s*>\r?\n?([\s\S]*?)\r?\n?<\/section>/g;
const NO_CHANGES = /<no-changes\s*\/>/;

/**
 * Reads the helper's answer: `<section name="…">…</section>` blocks naming sections of `sections`,
 * or `<no-changes/>`. Anything malformed (an unclosed block, an unknown or repeated section, no
 * block at all) is refused whole with MODEL_OUTPUT_INVALID, so a bad answer changes nothing.
 */
export function parseSectionEdits(output: string, sections: readonly string[]): NotesSectionEdit[] {
  const refuse = (why: string): never => {
    throw new EngramError(
      'MODEL_OUTPUT_INVALID',
      `The session notes helper answered ${why}; the notes were left unchanged.`,
      {
        details: { text: String(output).slice(0, 2_000) },
      },
    );
  };
  if (typeof output !== 'string') return refuse('no text');
  const known = new Map(sections.map((name) => [sectionKey(name), name]));
  const edits: NotesSectionEdit[] = [];
  const seen = new Set<string>();
  for (const match of output.matchAll(SECTION_BLOCK)) {
    const name = known.get(sectionKey(match[1]!));
    if (name === undefined)
      refuse(`an edit of an unknown section ${JSON.stringify(match[1])} (known: ${sections.join(', ')})`);
    if (seen.has(name!)) refuse(`two edits of the section "${name}"`);
    seen.add(name!);
    edits.push({ section: name!, body: match[2]! });
  }
  const openers = output.match(/<section\b/g)?.length ?? 0;
  if (openers !== edits.length)
    refuse('a section block that is not closed or not of the form <section name="…">…</section>');
  if (edits.length === 0 && !NO_CHANGES.test(output)) refuse('neither section edits nor <no-changes/>');
  return edits;
}
