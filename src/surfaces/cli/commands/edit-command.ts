import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngramError, isEngramError } from '../../../kernel/errors.js';
import { assertMemoryType, type Memory, type MemoryPatch } from '../../../memory/memory.js';
import { parseMemoryFile, renderMemoryFile } from '../../../memory/memory-file.js';
import type { OpenedEngram } from '../../../node/open-engram.js';
import {
  numberOption,
  singlePositional,
  stringOption,
  type CommandDefinition,
  type OptionValues,
} from '../cli-command.js';
import { TYPE_NAMES, findMemory, readScopes, withEngram } from '../cli-engram.js';
import type { CliIo } from '../cli-io.js';

const EDITABLE_FIELDS = ['content', 'name', 'description', 'type', 'importance'] as const;
// Bookkeeping an editor may show but not change: engram keeps these itself.
const READ_ONLY_FIELDS = [
  'createdAt',
  'updatedAt',
  'lastAccessedAt',
  'hitCount',
  'validFrom',
  'invalidAt',
  'supersededBy',
  'archived',
  'source',
] as const;

/** `engram edit`: change a memory: with field flags, or in $VISUAL/$EDITOR as Markdown. */
export const editCommand: CommandDefinition = {
  name: 'edit',
  summary: 'Change a memory: with field flags, or in $VISUAL/$EDITOR as Markdown',
  usage:
    'edit <id> [--content <text>] [--name <slug>] [--description <text>] [--type <type>] [--importance <0..1>] [options]',
  options: {
    content: { type: 'string', valueName: 'text', description: 'New content' },
    name: { type: 'string', valueName: 'slug', description: 'New name' },
    description: { type: 'string', valueName: 'text', description: 'New one-line description' },
    type: { type: 'string', valueName: TYPE_NAMES, description: 'New type' },
    importance: { type: 'string', valueName: '0..1', description: 'New importance' },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to look in (default: the current project and global)',
    },
  },
  details:
    'Without field flags the memory opens in $VISUAL or $EDITOR as a Markdown file with YAML frontmatter; save and quit to apply the fields you changed (content, name, description, type, importance).',
  async run(invocation) {
    const { values, io } = invocation;
    const id = singlePositional(invocation, 'id');
    const flagPatch = patchFromFlags(values);
    return withEngram(invocation, async (opened) => {
      const memory = await findMemory(opened, id, readScopes(values, opened));
      const patch = flagPatch ?? (await patchFromEditor(memory, opened, io));
      const changed = EDITABLE_FIELDS.filter((field) => patch[field] !== undefined && patch[field] !== memory[field]);
      if (changed.length === 0) return { data: { memory, changed: [] }, text: `No changes to ${memory.id}.` };
      const applied: MemoryPatch = {};
      for (const field of changed) (applied as Record<string, unknown>)[field] = patch[field];
      // Compare-and-set in the update's own transaction: a change made while the editor was open wins, and this one is refused.
      const updated = await opened.engram
        .update(memory.id, applied, { scopes: [memory.scope], ifUpdatedAt: memory.updatedAt })
        .catch((error: unknown) => {
          if (isEngramError(error) && error.code === 'CONFLICT') {
            throw new EngramError(
              'CONFLICT',
              `Memory ${memory.id} changed while it was being edited; nothing was applied. Run edit again.`,
              { cause: error },
            );
          }
          throw error;
        });
      return { data: { memory: updated, changed }, text: `Updated ${updated.id}: ${changed.join(', ')}.` };
    });
  },
};

function patchFromFlags(values: OptionValues): MemoryPatch | undefined {
  const patch: MemoryPatch = {};
  const content = stringOption(values, 'content');
  const name = stringOption(values, 'name');
  const description = stringOption(values, 'description');
  const type = stringOption(values, 'type');
  const importance = numberOption(values, 'importance');
  if (content !== undefined) patch.content = content;
  if (name !== undefined) patch.name = name;
  if (description !== undefined) patch.description = description;
  if (type !== undefined) patch.type = assertMemoryType(type);
  if (importance !== undefined) patch.importance = importance;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Opens the memory's Markdown form in the user's editor and reads back the fields they changed. */
async function patchFromEditor(memory: Memory, opened: OpenedEngram, io: CliIo): Promise<MemoryPatch> {
  const editor = io.env.VISUAL || io.env.EDITOR;
  if (!editor) {
    throw new EngramError(
      'INVALID_INPUT',
      'Set $VISUAL or $EDITOR to edit in an editor, or pass field flags such as --content.',
    );
  }
  const original = renderMemoryFile(memory);
  const folder = await mkdtemp(join(tmpdir(), 'engram-edit-'));
  try {
    const file = join(folder, `${memory.name}.md`);
    await writeFile(file, original, { mode: 0o600, flag: 'wx' });
    // Through a shell, as git does, so EDITOR may carry arguments ("code --wait").
    const result = spawnSync(`${editor} ${shellQuote(file)}`, {
      shell: true,
      stdio: 'inherit',
      cwd: io.cwd,
      env: io.env as NodeJS.ProcessEnv,
    });
    if (result.error)
      throw new EngramError(
        'INVALID_INPUT',
        `Could not start the editor ${JSON.stringify(editor)}: ${result.error.message}. Nothing changed.`,
      );
    if (result.status !== 0)
      throw new EngramError(
        'INVALID_INPUT',
        `The editor exited with ${result.status ?? result.signal}; nothing changed.`,
      );
    const edited = await readFile(file, 'utf8');
    if (edited === original) return {};
    const parsed = parseMemoryFile(edited, {
      scope: memory.scope,
      now: memory.updatedAt,
      id: memory.id,
      limits: opened.loaded.settings.memory,
    });
    if (parsed.id !== memory.id || parsed.scope !== memory.scope) {
      throw new EngramError(
        'INVALID_INPUT',
        'The id and scope of a memory cannot be changed by editing; nothing changed.',
      );
    }
    const ignored = READ_ONLY_FIELDS.filter(
      (field) => parsed[field] !== undefined && JSON.stringify(parsed[field]) !== JSON.stringify(memory[field]),
    );
    if (ignored.length > 0)
      io.stderr.write(`engram: ignored changes to fields engram keeps itself: ${ignored.join(', ')}\n`);
    const patch: MemoryPatch = {};
    for (const field of EDITABLE_FIELDS) {
      if (parsed[field] !== undefined) (patch as Record<string, unknown>)[field] = parsed[field];
    }
    return patch;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
