import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import { missingFolders, removeEmptyFolders } from './install-folders.js';
import {
  arrayAt,
  missingFrom,
  objectAt,
  parseJsonObject,
  removeItems,
  removeKey,
  sameJson,
} from './agent-install-json.js';
import { keyName, readTomlStructure, TomlStructureError, type TomlStructure } from './toml-structure.js';

/**
 * `engram install <agent>` for agents whose configuration is a JSON hooks file and a TOML config
 * (Codex first; claude-code-install.ts keeps Claude Code's plugin settings). An agent is a
 * description (codex-install.ts): the files, what goes in each, and what its status checks. The
 * mechanism here reads and checks every file before writing any (a broken one changes nothing),
 * records in ENGRAM_HOME what it added and each file's bytes before, and uninstall puts a file back
 * byte for byte when nobody changed it since, else takes out exactly what it added.
 */

/** Elements appended to arrays in a JSON file, each at a key path (objects and the array made when missing). */
export interface JsonEdit {
  kind: 'json';
  file: string;
  /** `marker`: text only engram's items hold (its hook command's words), so an item edited since install is still found. */
  arrays: Array<{ path: string[]; items: unknown[]; marker?: string }>;
  /** Keys set in objects at a key path (an MCP server entry); a key the file has already is left as it is. */
  keys?: Array<{ path: string[]; key: string; value: unknown; what: string }>;
}

/** A whole file engram owns (a plugin module); one already there and not engram's is left as it is. */
export interface WholeFileEdit {
  kind: 'file';
  file: string;
  text: string;
  what: string;
}

/** Whole tables appended at the end of a TOML file; a table the file has already is left as it is. */
export interface TomlEdit {
  kind: 'toml';
  file: string;
  tables: Array<{ header: string[]; lines: string[]; what: string }>;
}

export type AgentFileEdit = JsonEdit | TomlEdit | WholeFileEdit;

export interface AgentInstallDescription {
  agent: string;
  /** The agent's name for people. */
  title: string;
  /** The edits, given the current text of each file (a TOML table's key may depend on the JSON's positions). */
  edits: (read: (file: string) => string | undefined) => AgentFileEdit[];
  /** What is wrong with an installed agent now (empty: it runs engram), given the files' text. */
  problems: (read: (file: string) => string | undefined) => string[];
}

interface RecordedFile {
  file: string;
  /** The file's bytes before install (base64), absent when install created it. */
  before?: string;
  /** sha256 of what install wrote: unchanged since, uninstall writes `before` back as it was. */
  written: string;
  json?: Array<{ path: string[]; items: unknown[]; createdFrom: number; marker?: string }>;
  /** Object keys install set, each with the depth from which install made its objects. */
  keys?: Array<{ path: string[]; key: string; value: unknown; createdFrom: number }>;
  /** The exact text appended to a TOML file. */
  appended?: string;
  /** The folders install made for the file (deepest first): uninstall removes each one left empty. */
  madeFolders?: string[];
}

interface AgentsRecord {
  agents: Record<string, { files: RecordedFile[] }>;
}

const RECORD_FILE = 'agent-installs.json';

export interface AgentInstallResult {
  agent: string;
  changed: Array<{ file: string; added: string[] }>;
  warnings: string[];
}

export interface AgentUninstallResult {
  agent: string;
  changed: Array<{ file: string; how: 'restored' | 'removed-file' | 'entries-removed' | 'removed-folder' }>;
  warnings: string[];
}

const sha256 = (text: string | Buffer): string => createHash('sha256').update(text).digest('hex');

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new EngramError('CONFIG_INVALID', `Cannot read ${file} (${(error as Error).message}). Nothing was changed.`);
  }
}

function parseToml(file: string, text: string | undefined): TomlStructure {
  try {
    return readTomlStructure(text ?? '');
  } catch (error) {
    if (!(error instanceof TomlStructureError)) throw error;
    throw new EngramError(
      'CONFIG_INVALID',
      `${file} is not valid TOML (${error.message}); fix it by hand, then run the install again. Nothing was changed.`,
    );
  }
}

const recordPath = (home: string): string => join(home, RECORD_FILE);

function readRecord(home: string): AgentsRecord {
  const text = readText(recordPath(home));
  if (text === undefined) return { agents: {} };
  try {
    const value = JSON.parse(text) as AgentsRecord;
    if (value && typeof value.agents === 'object' && value.agents !== null) return value;
  } catch {
    // Falls through.
  }
  throw new EngramError(
    'CONFIG_INVALID',
    `${recordPath(home)} is not engram's install record; move it away and install again.`,
  );
}

async function writeRecord(home: string, record: AgentsRecord): Promise<void> {
  mkdirSync(home, { recursive: true });
  await writeFileAtomically(recordPath(home), `${JSON.stringify(record, null, 2)}\n`, 'CONFIG_INVALID');
}

/** Whether the agent is recorded as installed. */
export function isAgentInstalled(home: string, agent: string): boolean {
  return readRecord(home).agents[agent] !== undefined;
}

/** Installs an agent's description; installed already with every entry in place, it changes nothing. */
export async function installAgent(
  description: AgentInstallDescription,
  engramHome: string,
): Promise<AgentInstallResult> {
  const record = readRecord(engramHome);
  const warnings: string[] = [];
  if (record.agents[description.agent] !== undefined) {
    const problems = description.problems(readText);
    if (problems.length === 0) return { agent: description.agent, changed: [], warnings };
    // Changed since (a hook edited, a trust hash gone): taken out and put in again.
    const removed = await uninstallAgent(description, engramHome);
    warnings.push(...removed.warnings);
  }
  const edits = description.edits(readText);
  // Everything read and checked first: one broken file changes none.
  const planned = edits.map((edit) => {
    const text = readText(edit.file);
    if (edit.kind === 'json') {
      const object = parseJsonObject(edit.file, text);
      const original = parseJsonObject(edit.file, text);
      const json = edit.arrays.map((entry) => {
        const { array } = arrayAt(object, entry.path, edit.file);
        // Measured against the file as it was: what this install made for an earlier entry counts as made too.
        const createdFrom = missingFrom(original, entry.path);
        array.push(...entry.items);
        return {
          path: entry.path,
          items: entry.items,
          createdFrom,
          ...(entry.marker !== undefined && { marker: entry.marker }),
        };
      });
      const added = edit.arrays.map((entry) => entry.path.join('.'));
      const keys: NonNullable<RecordedFile['keys']> = [];
      for (const entry of edit.keys ?? []) {
        const holder = objectAt(object, entry.path, edit.file);
        if (Object.hasOwn(holder, entry.key)) {
          warnings.push(
            `${edit.file} has "${[...entry.path, entry.key].join('.')}" already (${entry.what}): left as it is`,
          );
          continue;
        }
        holder[entry.key] = entry.value;
        keys.push({
          path: entry.path,
          key: entry.key,
          value: entry.value,
          createdFrom: missingFrom(original, entry.path),
        });
        added.push(entry.what);
      }
      const output = `${JSON.stringify(object, null, 2)}\n`;
      return { edit, text, output, json, keys, added };
    }
    if (edit.kind === 'file') {
      if (text === edit.text) return { edit, text, output: text, added: [] };
      if (text !== undefined) {
        warnings.push(`${edit.file} is there already and is not engram's (${edit.what}): left as it is`);
        return { edit, text, output: text, added: [] };
      }
      return { edit, text, output: edit.text, added: [edit.what] };
    }
    const structure = parseToml(edit.file, text);
    const blocks: string[] = [];
    const added: string[] = [];
    for (const table of edit.tables) {
      const name = keyName(table.header);
      if (structure.tables.has(name)) {
        warnings.push(`${edit.file} has [${name}] already (${table.what}): left as it is`);
        continue;
      }
      blocks.push([`[${name}]`, ...table.lines].join('\n'));
      added.push(table.what);
    }
    if (blocks.length === 0) return { edit, text, output: text ?? '', added };
    const base = text ?? '';
    const separator = base === '' ? '' : base.endsWith('\n') ? '\n' : '\n\n';
    const appended = `${separator}# Added by "engram install ${description.agent}"; "engram uninstall ${description.agent}" removes it.\n${blocks.join('\n\n')}\n`;
    return { edit, text, output: base + appended, appended, added };
  });
  const files: RecordedFile[] = [];
  const changed: AgentInstallResult['changed'] = [];
  for (const plan of planned) {
    if (plan.added.length === 0) continue;
    const madeFolders = missingFolders(dirname(plan.edit.file));
    mkdirSync(dirname(plan.edit.file), { recursive: true });
    await writeFileAtomically(plan.edit.file, plan.output, 'CONFIG_INVALID');
    files.push({
      file: plan.edit.file,
      ...(madeFolders.length > 0 && { madeFolders }),
      ...(plan.text !== undefined && { before: Buffer.from(plan.text, 'utf8').toString('base64') }),
      written: sha256(plan.output),
      ...('json' in plan && plan.json !== undefined && { json: plan.json }),
      ...('keys' in plan && plan.keys !== undefined && plan.keys.length > 0 && { keys: plan.keys }),
      ...('appended' in plan && plan.appended !== undefined && { appended: plan.appended }),
    });
    changed.push({ file: plan.edit.file, added: plan.added });
  }
  record.agents[description.agent] = { files };
  await writeRecord(engramHome, record);
  return { agent: description.agent, changed, warnings };
}

/** Removes what install recorded; a file changed since install keeps every change but engram's entries. */
export async function uninstallAgent(
  description: Pick<AgentInstallDescription, 'agent'>,
  engramHome: string,
): Promise<AgentUninstallResult> {
  const record = readRecord(engramHome);
  const installed = record.agents[description.agent];
  const result: AgentUninstallResult = { agent: description.agent, changed: [], warnings: [] };
  if (installed === undefined) return result;
  for (const file of installed.files) {
    const text = readText(file.file);
    if (text === undefined) continue;
    if (sha256(text) === file.written) {
      if (file.before === undefined) {
        await rm(file.file, { force: true });
        result.changed.push({ file: file.file, how: 'removed-file' });
      } else {
        await writeFileAtomically(file.file, Buffer.from(file.before, 'base64').toString('utf8'), 'CONFIG_INVALID');
        result.changed.push({ file: file.file, how: 'restored' });
      }
      continue;
    }
    // Changed since install: only engram's own entries come out.
    if (file.json !== undefined) {
      let object: Record<string, unknown>;
      try {
        object = parseJsonObject(file.file, text);
      } catch {
        result.warnings.push(`${file.file} is no longer valid JSON: engram's entries are left in it`);
        continue;
      }
      for (const entry of file.json) removeItems(object, entry);
      for (const entry of file.keys ?? []) {
        const left = removeKey(object, entry);
        if (left !== undefined) result.warnings.push(`${file.file}: ${left}`);
      }
      // Back to what it was before install (a hook edited, then engram's taken out): its own bytes again.
      const before = file.before === undefined ? undefined : Buffer.from(file.before, 'base64').toString('utf8');
      const same = before !== undefined && sameJson(before, object);
      if (before === undefined && Object.keys(object).length === 0) {
        await rm(file.file, { force: true }); // Install made it, and nothing else is in it.
        result.changed.push({ file: file.file, how: 'removed-file' });
        continue;
      }
      await writeFileAtomically(file.file, same ? before : `${JSON.stringify(object, null, 2)}\n`, 'CONFIG_INVALID');
      result.changed.push({ file: file.file, how: 'entries-removed' });
    } else if (file.json === undefined && file.appended === undefined) {
      // A whole file engram wrote, changed since: the user's now.
      result.warnings.push(`${file.file} was changed since install: left as it is; remove it by hand if unwanted`);
    } else if (file.appended !== undefined) {
      const at = text.lastIndexOf(file.appended);
      if (at < 0) {
        result.warnings.push(`${file.file}: the tables engram added were changed since; remove them by hand`);
        continue;
      }
      const rest = text.slice(0, at) + text.slice(at + file.appended.length);
      if (file.before === undefined && rest.trim() === '') {
        await rm(file.file, { force: true });
        result.changed.push({ file: file.file, how: 'removed-file' });
        continue;
      }
      await writeFileAtomically(file.file, rest, 'CONFIG_INVALID');
      result.changed.push({ file: file.file, how: 'entries-removed' });
    }
  }
  // The folders install made (a hooks/ or plugin/ folder, the agent's own when it had none), if empty again.
  for (const folder of await removeEmptyFolders(installed.files.flatMap((file) => file.madeFolders ?? [])))
    result.changed.push({ file: folder, how: 'removed-folder' });
  delete record.agents[description.agent];
  await writeRecord(engramHome, record);
  return result;
}
