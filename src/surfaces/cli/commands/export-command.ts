import { join } from 'node:path';
import { EngramError } from '../../../kernel/errors.js';
import type { Memory } from '../../../memory/memory.js';
import { serializeMemoryLine } from '../../../memory/jsonl-format.js';
import { EXPORT_SEAL_FILE, sealExport, type ExportSeal } from '../../../memory/export-seal.js';
import { readExportKey } from '../../../memory/node/export-key.js';
import { writeFileAtomically } from '../../../kernel/node/atomic-write.js';
import { assignFileNames } from '../../../memory/memory-index.js';
import { writeMemoryDirectory } from '../../../memory/node/memory-directory.js';
import type { OpenedEngram } from '../../../node/open-engram.js';
import { noPositionals, stringOption, type CommandDefinition, type OptionValues } from '../cli-command.js';
import { scopeOption, readOnly, withEngram } from '../cli-engram.js';
import { assertExportDirectory, removeStaleTopicFiles, writeExportFile } from '../output-paths.js';

const FORMATS = ['jsonl', 'claude'] as const;

/** `engram export`: write memories as JSON Lines or as a Claude Code memory directory. */
export const exportCommand: CommandDefinition = {
  name: 'export',
  summary: 'Write memories as JSON Lines or as a Claude Code memory directory',
  usage: 'export [--format jsonl] [--out <file>]   |   export --format claude --dir <dir>   [options]',
  options: {
    format: {
      type: 'string',
      valueName: FORMATS.join('|'),
      description:
        'jsonl (default): one {"kind":"memory",…} object a line; claude: MEMORY.md plus one topic file per memory',
    },
    out: { type: 'string', valueName: 'file', description: 'JSON Lines file to write (default stdout)' },
    dir: { type: 'string', valueName: 'dir', description: 'Directory for --format claude (created if missing)' },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to export (default: the current project)',
    },
    all: { type: 'boolean', description: 'Export every scope in the store' },
    force: {
      type: 'boolean',
      description: 'Overwrite an existing file (or files engram did not write); symlinks are never followed',
    },
  },
  details:
    'Every field of every memory is exported, archived and invalidated ones included; history is not. Importing the file into an empty store gives back the same memories. The export is sealed with a key of this ENGRAM_HOME (a last line of kind "export-seal", or .engram-export.json in the folder): importing it back with the same ENGRAM_HOME keeps the scopes of the sealed memories without --keep-scopes. With --format claude, MEMORY.md lists only active memories: archived and invalidated ones get their topic files (marked archived or invalidAt in the frontmatter) and no index line.',
  async run(invocation) {
    const { values, global } = invocation;
    noPositionals(invocation);
    const format = stringOption(values, 'format') ?? 'jsonl';
    if (!(FORMATS as readonly string[]).includes(format)) {
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid --format ${JSON.stringify(format.slice(0, 40))}: use ${FORMATS.join(' or ')}.`,
      );
    }
    const out = stringOption(values, 'out');
    const dir = stringOption(values, 'dir');
    if (format === 'claude' && dir === undefined)
      throw new EngramError('INVALID_INPUT', 'export --format claude needs --dir <dir>.');
    if (format === 'claude' && out !== undefined)
      throw new EngramError('INVALID_INPUT', '--out is for --format jsonl; use --dir with --format claude.');
    if (format === 'jsonl' && dir !== undefined)
      throw new EngramError('INVALID_INPUT', '--dir is for --format claude; use --out with JSON Lines.');
    if (values.all === true && values.scope !== undefined)
      throw new EngramError('INVALID_INPUT', 'Give --scope or --all, not both.');
    const force = values.force === true;
    return withEngram(readOnly(invocation), async (opened) => {
      const scopes = await exportScopes(values, opened);
      const memories =
        scopes.length === 0
          ? []
          : await opened.engram.list({ scopes, archived: 'include', invalid: 'include', order: 'created-asc' });
      const summary = { format, scopes, count: memories.length };
      // Signed with this home's key: importing it back here keeps its scopes without --keep-scopes.
      const key = readExportKey(opened.loaded.home, { create: true });
      const seal: ExportSeal | undefined = key && sealExport(memories, key);
      if (format === 'claude') {
        const fileNames = assignFileNames(memories);
        const directory = await assertExportDirectory(dir!, [...fileNames.values()], { force });
        const { index, files } = await writeMemoryDirectory(directory, memories, opened.loaded.settings.index);
        const removed = await removeStaleTopicFiles(directory, [...fileNames.values()]);
        if (seal)
          await writeFileAtomically(join(directory, EXPORT_SEAL_FILE), `${JSON.stringify(seal)}\n`, 'INVALID_INPUT');
        const warning = index.truncated
          ? `\nWarning: MEMORY.md lists ${index.shown} of ${index.total} memories (cut at its caps); every topic file was written.`
          : '';
        const inactive =
          index.inactive > 0
            ? ` ${index.inactive} archived or invalidated ${index.inactive === 1 ? 'memory is' : 'memories are'} kept as topic files, not listed in MEMORY.md.`
            : '';
        const stale =
          removed.length > 0
            ? ` Removed ${removed.length} topic ${removed.length === 1 ? 'file' : 'files'} of memories no longer exported.`
            : '';
        return {
          data: {
            ...summary,
            dir: directory,
            files,
            removed,
            indexTruncated: index.truncated,
            indexShown: index.shown,
            indexInactive: index.inactive,
          },
          text: `Exported ${memories.length} memories to ${directory} (MEMORY.md and ${files.length - 1} topic files).${inactive}${stale}${warning}`,
        };
      }
      const text =
        memories.map((memory) => `${serializeMemoryLine(memory)}\n`).join('') +
        (seal ? `${JSON.stringify(seal)}\n` : '');
      if (out !== undefined) {
        const path = await writeExportFile(out, text, { force });
        return { data: { ...summary, out: path }, text: `Exported ${memories.length} memories to ${path}.` };
      }
      // To stdout: the lines themselves, or with --json one document that holds the same objects.
      return {
        data: { ...summary, memories: memories.map(asLineObject), ...(seal && { seal }) },
        text: global.json ? '' : text,
      };
    });
  },
};

function asLineObject(memory: Memory): unknown {
  return JSON.parse(serializeMemoryLine(memory));
}

async function exportScopes(values: OptionValues, opened: OpenedEngram): Promise<string[]> {
  if (values.all === true) return Object.keys((await opened.engram.stats('all')).byScope);
  return scopeOption(values) ?? [opened.loaded.project.scope];
}
