import { isEngramError } from '../kernel/errors.js';
import { deriveDescription, type Memory, type MemoryPatch, type NewMemory } from '../memory/memory.js';
import { parseMemoryFile, renderMemoryFile } from '../memory/memory-file.js';
import type { Scope } from '../memory/scope.js';
import type { Settings } from '../kernel/settings.js';
import { memoryToolError } from './memory-tool-paths.js';
import { memoryToolText as text, fileLines } from './memory-tool-text.js';

// A memory file's text as the memory tool reads it back: what a new or edited file changes in a
// memory, and the checks that refuse an edit (with the protocol's text) before anything is written.

type FileSettings = Pick<Settings, 'memory' | 'memoryTool'>;

// Bookkeeping fields a memory file shows but engram keeps: an edit may leave them as they are, not change them.
const KEPT_FIELDS = [
  'id',
  'scope',
  'source',
  'createdAt',
  'updatedAt',
  'lastAccessedAt',
  'hitCount',
  'validFrom',
  'invalidAt',
  'supersededBy',
  'archived',
] as const;

/** The editable fields a new file states: content, and type, description and importance when its frontmatter has them. */
export function parseNewFile(
  fileText: string,
  given: string,
  scope: Scope,
  baseName: string,
  settings: FileSettings,
): Omit<NewMemory, 'scope'> {
  checkFileSize(given, fileText, settings);
  // Only the editable fields are taken: a copied file's id, scope or dates do not forge bookkeeping.
  const parsed = parseMemoryFile(fileText, {
    scope,
    now: new Date(0).toISOString(),
    fileName: baseName,
    limits: settings.memory,
  });
  return {
    content: parsed.content,
    ...(parsed.type !== undefined && { type: parsed.type }),
    ...(parsed.description !== undefined && { description: parsed.description }),
    ...(parsed.importance !== undefined && { importance: parsed.importance }),
  };
}

/** A file over `memoryTool.maxFileBytes` is refused. */
export function checkFileSize(given: string, fileText: string, settings: FileSettings): void {
  const bytes = Buffer.byteLength(fileText, 'utf8');
  const max = settings.memoryTool.maxFileBytes;
  if (bytes > max)
    throw memoryToolError(
      'PAYLOAD_TOO_LARGE',
      `Error: ${given} would be ${bytes} bytes; a memory file holds at most ${max} bytes. Keep one fact per file.`,
    );
}

/** What an edited file changes in its memory; refused (nothing changed) when fields engram keeps differ from what was shown. */
export function editedFilePatch(memory: Memory, given: string, edited: string, settings: FileSettings): MemoryPatch {
  checkFileSize(given, edited, settings);
  // Without this, text inserted above the frontmatter would turn the whole frontmatter into content.
  if (!/^---[ \t]*\n/.test(edited)) {
    const closing = fileLines(renderMemoryFile(memory)).indexOf('---', 1) + 1;
    throw memoryToolError(
      'INVALID_INPUT',
      `Error: Nothing was changed: the frontmatter (lines 1-${closing}) must stay at the top of ${given}; edit inside it, or insert after line ${closing}.`,
    );
  }
  let parsed: NewMemory;
  try {
    parsed = parseMemoryFile(edited, {
      scope: memory.scope,
      now: memory.updatedAt,
      id: memory.id,
      fileName: `${memory.name}.md`,
      limits: settings.memory,
    });
  } catch (error) {
    if (!isEngramError(error)) throw error;
    throw memoryToolError(
      error.code,
      `Error: Nothing was changed: the edited ${given} would not be a valid memory file. ${error.message}`,
    );
  }
  if (parsed.name !== undefined && parsed.name !== memory.name) {
    throw memoryToolError(
      'INVALID_INPUT',
      `Error: Nothing was changed: a memory's name is its file name; rename ${given} with the rename command instead of editing "name".`,
    );
  }
  for (const field of KEPT_FIELDS) {
    const value = (parsed as unknown as Record<string, unknown>)[field];
    if (value !== undefined && JSON.stringify(value) !== JSON.stringify(memory[field])) {
      throw memoryToolError(
        'INVALID_INPUT',
        `Error: Nothing was changed: ${field === 'id' || field === 'scope' ? field : `metadata.${field}`} is kept by engram and cannot be edited. ` +
          'Edit the description, metadata.type, metadata.importance or the text after the frontmatter.',
      );
    }
  }
  return editablePatch(memory, parsed, { describeAnew: false });
}

/**
 * Where `oldString` occurs exactly once in a rendered file: its position and line. Refused when it is
 * empty, absent or repeated (a copy inside a description derived from the content does not count).
 */
export function findReplacement(
  before: string,
  oldString: string,
  memory: Memory,
  given: string,
): { at: number; line: number } {
  if (oldString.length === 0) {
    throw memoryToolError('INVALID_INPUT', `Error: old_str is empty; give text that occurs exactly once in ${given}.`);
  }
  let positions: number[] = [];
  for (let at = before.indexOf(oldString); at !== -1; at = before.indexOf(oldString, at + oldString.length))
    positions.push(at);
  if (positions.length === 0) throw memoryToolError('INVALID_INPUT', text.oldStringAbsent(oldString, given));
  const lineOf = (position: number): number => before.slice(0, position).split('\n').length;
  if (positions.length > 1) {
    // A description derived from the content's first line repeats it: a phrase of that line would
    // otherwise never be unique. The copy in the description does not count; it follows the body.
    const derived = derivedDescriptionSpan(before, memory);
    const outside = derived
      ? positions.filter((position) => position < derived.start || position >= derived.end)
      : positions;
    if (outside.length !== 1)
      throw memoryToolError('INVALID_INPUT', text.oldStringRepeated(oldString, [...new Set(positions.map(lineOf))]));
    positions = outside;
  }
  const at = positions[0]!;
  return { at, line: lineOf(at) };
}

/**
 * What changes between a memory and a file's fields. A description derived from the old content
 * follows the new content (as dedupe's merge does); `describeAnew` derives it for a file that names none.
 */
export function editablePatch(
  memory: Memory,
  parsed: Partial<NewMemory>,
  options: { describeAnew: boolean },
): MemoryPatch {
  const patch: MemoryPatch = {};
  const content = parsed.content ?? memory.content;
  if (content !== memory.content) patch.content = content;
  if (parsed.type !== undefined && parsed.type !== memory.type) patch.type = parsed.type;
  if (parsed.importance !== undefined && parsed.importance !== memory.importance) patch.importance = parsed.importance;
  const described = parsed.description !== undefined && parsed.description !== memory.description;
  if (described) patch.description = parsed.description!;
  else if (
    patch.content !== undefined &&
    (options.describeAnew || memory.description === deriveDescription(memory.content))
  ) {
    const derived = deriveDescription(patch.content);
    if (derived !== memory.description) patch.description = derived;
  }
  return patch;
}

/** Where the `description:` line of a rendered file is, when that description was derived from the content. */
function derivedDescriptionSpan(rendered: string, memory: Memory): { start: number; end: number } | undefined {
  if (memory.description !== deriveDescription(memory.content)) return undefined;
  // The frontmatter is rendered on single lines, so the description is the one top-level line starting with its key.
  const start = rendered.indexOf('\ndescription: ');
  if (start === -1) return undefined;
  return { start: start + 1, end: rendered.indexOf('\n', start + 1) };
}

// The write path replaces each secret by `[REDACTED:<kind>]`; kinds found in what was stored but not in what was sent.
export function newPlaceholderKinds(sent: string, stored: string): string[] {
  const kinds = (text: string) => [...text.matchAll(/\[REDACTED:([a-z0-9-]+)\]/g)].map((match) => match[1]!);
  const before = kinds(sent);
  return [...new Set(kinds(stored).filter((kind) => !before.includes(kind)))];
}
