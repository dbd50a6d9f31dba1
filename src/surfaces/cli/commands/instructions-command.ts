import { homedir } from 'node:os';
import { stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { loadSettings } from '../../../node/load-settings.js';
import {
  activeInstructions,
  formatInstructions,
  type InstructionFile,
} from '../../../instructions/instruction-format.js';
import { loadInstructions } from '../../../instructions/node/instruction-files.js';
import { EngramError } from '../../../kernel/errors.js';
import { estimateTextTokens, utf8ByteLength } from '../../../kernel/token-estimate.js';
import { noPositionals, stringOption, stringOptions, type CommandDefinition } from '../cli-command.js';
import { globalSettingFlags } from '../cli-engram.js';
import { formatFields, formatTable } from '../table-format.js';

/** `engram instructions`: list the CLAUDE.md-style instruction files that load here, like Claude Code's /context. */
export const instructionsCommand: CommandDefinition = {
  name: 'instructions',
  summary: 'List the instruction files (CLAUDE.md, rules, imports) that load for this folder',
  usage: 'instructions [options]',
  options: {
    root: {
      type: 'string',
      valueName: 'dir',
      description:
        'Top folder searched for project files (default: every ancestor of the current folder, as Claude Code does)',
    },
    working: {
      type: 'string',
      multiple: true,
      valueName: 'path',
      description: 'A file being worked on (repeatable): path-scoped rules matching it count as active',
    },
    exclude: {
      type: 'string',
      multiple: true,
      valueName: 'glob',
      description: 'Skip files whose absolute path matches (repeatable; never the managed policy)',
    },
    content: {
      type: 'boolean',
      description: 'Print the instructions text the model receives (active files only) instead of the list',
    },
  },
  details: [
    'Load order, later files taking precedence: the managed policy (setting instructions.managedPath, env',
    'ENGRAM_MANAGED_INSTRUCTIONS), ~/.claude/CLAUDE.md and ~/.claude/rules/**/*.md, then from the top folder down',
    'to the current one: CLAUDE.md, .claude/CLAUDE.md, .claude/rules/**/*.md, CLAUDE.local.md. @path lines import',
    'other files (5 levels deep at most, cycles refused). Rules with paths: apply only while a matching file is',
    'worked on. Project files may import only files in the project or ~/.claude, user files only files in your home',
    '(setting instructions.allowImportsFrom adds folders); files that usually hold secrets (.env, private keys) are',
    'never imported. Files skipped (too large, unreadable, cycles, refused imports) are listed as warnings.',
  ].join('\n'),
  async run(invocation) {
    const { values, io, global } = invocation;
    noPositionals(invocation);
    const loaded = loadSettings({ cwd: io.cwd, env: io.env, flags: globalSettingFlags(global) });
    const root = await rootOption(stringOption(values, 'root'), io.cwd);
    const home = io.env.HOME !== undefined && io.env.HOME !== '' ? io.env.HOME : homedir();
    const set = await loadInstructions({
      cwd: io.cwd,
      home,
      ...(root !== undefined && { projectRoot: root }),
      excludes: stringOptions(values, 'exclude'),
      settings: loaded.settings,
    });
    const working = stringOptions(values, 'working').map((path) => resolve(io.cwd, path));
    const active = new Set(activeInstructions(set, working));
    const bytesPerToken = loaded.settings.tokens.bytesPerTextToken;
    const text = formatInstructions([...active]);
    const describe = (file: InstructionFile): ListedFile => ({
      scope: file.scope,
      path: file.path,
      lines: file.content === '' ? 0 : file.content.replace(/\n$/, '').split('\n').length,
      bytes: utf8ByteLength(file.content),
      tokens: estimateTextTokens(file.content, { bytesPerToken }),
      active: active.has(file),
      ...(file.paths !== undefined && { paths: file.paths }),
      ...(file.importedFrom !== undefined && { importedFrom: file.importedFrom }),
    });
    const files = set.files.map(describe);
    const data = {
      projectRoot: set.projectRoot,
      managedPath: loaded.settings.instructions.managedPath,
      working,
      files,
      warnings: set.warnings,
      tokens: estimateTextTokens(text, { bytesPerToken }),
      ...(values.content === true && { text }),
    };
    if (values.content === true) {
      // stdout is the text the model gets; what was left out of it (a refused import) still has to be said.
      if (global.json !== true) for (const warning of set.warnings) io.stderr.write(`engram: warning: ${warning}\n`);
      return { data, text };
    }
    return { data, text: formatListing(data, home, { width: io.columns, color: io.color }) };
  },
};

/** The --root folder, resolved and checked here so the error names the flag. */
async function rootOption(raw: string | undefined, cwd: string): Promise<string | undefined> {
  if (raw === undefined) return undefined;
  if (raw.trim() === '' || raw.includes('\0'))
    throw new EngramError('INVALID_INPUT', 'Empty --root: name the top folder to search, or leave the flag out.');
  const root = resolve(cwd, raw);
  const info = await stat(root).catch(() => undefined);
  if (!info?.isDirectory()) throw new EngramError('INVALID_INPUT', `--root ${root} is not an existing folder.`);
  const inside = relative(root, resolve(cwd));
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new EngramError(
      'INVALID_INPUT',
      `--root ${root} does not contain the current folder ${cwd}: name one of its parent folders.`,
    );
  }
  return root;
}

/** One row of the listing, as --json prints it. */
interface ListedFile {
  scope: InstructionFile['scope'];
  path: string;
  lines: number;
  bytes: number;
  tokens: number;
  active: boolean;
  paths?: string[];
  importedFrom?: string;
}

interface Listing {
  projectRoot: string;
  files: ListedFile[];
  warnings: string[];
  tokens: number;
}

function formatListing(data: Listing, home: string, table: { width: number; color: boolean }): string {
  const shown = (path: string) => (path === home || path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path);
  const activeCount = data.files.filter((file) => file.active).length;
  const header = formatFields([
    ['project root', data.projectRoot],
    [
      'files',
      `${data.files.length} loaded, ${activeCount} active now, ~${data.tokens} tokens in the instructions text`,
    ],
  ]);
  const parts = [header];
  if (data.files.length === 0) {
    parts.push(
      'No instruction files found: looked for CLAUDE.md, .claude/CLAUDE.md, .claude/rules/**/*.md and CLAUDE.local.md here and above, in ~/.claude, and the managed policy file.',
    );
  } else {
    parts.push(
      formatTable(
        [
          { header: 'SCOPE', value: (file: ListedFile) => file.scope },
          { header: 'LINES', value: (file) => String(file.lines), align: 'right' },
          { header: 'BYTES', value: (file) => String(file.bytes), align: 'right' },
          { header: 'ACTIVE', value: (file) => (file.active ? 'yes' : 'no') },
          { header: 'PATH', value: (file) => shown(file.path), minWidth: 20 },
          {
            header: 'NOTE',
            value: (file) =>
              [
                file.paths && `paths: ${file.paths.join(', ')}`,
                file.importedFrom && `imported by ${shown(file.importedFrom)}`,
              ]
                .filter(Boolean)
                .join('; '),
            minWidth: 12,
          },
        ],
        data.files,
        table,
      ),
    );
  }
  if (data.warnings.length > 0) parts.push(['warnings:', ...data.warnings.map((warning) => `  ${warning}`)].join('\n'));
  return parts.join('\n\n');
}
