import { ageNote, type AgeNoteOptions } from '../../recall/age-notes.js';
import type { Memory } from '../../memory/memory.js';
import type { HistoryEntry } from '../../memory/memory-history.js';
import type { CliIo } from './cli-io.js';
import { formatAge, formatFields, formatTable, oneLine, type TableColumn } from './table-format.js';

/** Age thresholds of the tables: `recall.ageNoteDays` and `recall.staleDays`. */
export type AgeThresholds = Required<AgeNoteOptions>;

/**
 * A memory's state in one word: invalid, archived, stale (not updated for `staleDays`), aging (not
 * updated for `ageNoteDays`: may be out of date) or active.
 */
export function memoryState(memory: Memory, ages: AgeThresholds, now: number = Date.now()): string {
  if (memory.invalidAt !== null) return 'invalid';
  if (memory.archived) return 'archived';
  const state = ageNote(memory, new Date(now).toISOString(), ages).state;
  return state === 'fresh' ? 'active' : state;
}

/** The line under a table that explains "aging" and "stale", or '' when no row is either. */
export function ageLegend(memories: readonly Memory[], ages: AgeThresholds, now: number = Date.now()): string {
  const states = new Set(memories.map((memory) => memoryState(memory, ages, now)));
  const parts = [
    ...(states.has('aging') ? [`aging: not updated for over ${ages.ageNoteDays} days, may be out of date`] : []),
    ...(states.has('stale') ? [`stale: not updated for over ${ages.staleDays} days, verify before relying on it`] : []),
  ];
  return parts.join('; ');
}

/** The columns every memory table starts with. */
export function memoryColumns<Row>(pick: (row: Row) => Memory, ages: AgeThresholds): Array<TableColumn<Row>> {
  const now = Date.now();
  return [
    { header: 'ID', value: (row) => pick(row).id },
    { header: 'TYPE', value: (row) => pick(row).type },
    { header: 'SCOPE', value: (row) => pick(row).scope, minWidth: 14 },
    { header: 'NAME', value: (row) => pick(row).name, minWidth: 12 },
    { header: 'DESCRIPTION', value: (row) => pick(row).description, minWidth: 24 },
    { header: 'AGE', value: (row) => formatAge(pick(row).updatedAt, now), align: 'right' },
    { header: 'STATE', value: (row) => memoryState(pick(row), ages, now) },
  ];
}

/** A table of memories fitted to the terminal, with the age legend under it when a row needs it. */
export function formatMemoryTable(
  memories: readonly Memory[],
  io: Pick<CliIo, 'columns' | 'color'>,
  ages: AgeThresholds,
): string {
  const table = formatTable(
    memoryColumns<Memory>((memory) => memory, ages),
    memories,
    { width: io.columns, color: io.color },
  );
  const legend = ageLegend(memories, ages);
  return legend === '' ? table : `${table}\n\n${legend}`;
}

/** One memory in full: its fields, its content, and (when given) its history. */
export function formatMemoryDetail(
  memory: Memory,
  history: readonly HistoryEntry[] | undefined,
  io: Pick<CliIo, 'columns' | 'color'>,
): string {
  const now = Date.now();
  const when = (iso: string | null): string =>
    iso === null ? '-' : `${iso} (${formatAge(iso, now)}${formatAge(iso, now) === 'just now' ? '' : ' ago'})`;
  const source = memory.source
    ? Object.entries(memory.source)
        .map(([key, value]) => `${key}=${oneLine(String(value))}`)
        .join(' ')
    : '-';
  const fields: Array<[string, string]> = [
    ['id', memory.id],
    ['scope', memory.scope],
    ['type', memory.type],
    ['name', memory.name],
    ['description', oneLine(memory.description)],
    ['importance', String(memory.importance)],
    ['created', when(memory.createdAt)],
    ['updated', when(memory.updatedAt)],
    ['last accessed', `${when(memory.lastAccessedAt)}, ${memory.hitCount} hit${memory.hitCount === 1 ? '' : 's'}`],
    ['valid from', memory.validFrom],
    [
      'invalid at',
      memory.invalidAt === null
        ? '-'
        : `${memory.invalidAt}${memory.supersededBy ? ` (superseded by ${memory.supersededBy})` : ''}`,
    ],
    ['archived', memory.archived ? 'yes' : 'no'],
    ['source', source],
  ];
  const parts = [formatFields(fields), '', safeText(memory.content)];
  if (history) {
    parts.push('', io.color ? '\u001b[1mHistory\u001b[22m' : 'History');
    parts.push(
      formatTable<HistoryEntry>(
        [
          { header: 'CHANGE', value: (entry) => entry.id },
          { header: 'ACTION', value: (entry) => entry.action + (entry.undoOf ? ` (undo of ${entry.undoOf})` : '') },
          { header: 'ACTOR', value: (entry) => entry.actor, minWidth: 8 },
          { header: 'TIME', value: (entry) => entry.at },
        ],
        history,
        { width: io.columns, color: io.color },
      ),
    );
  }
  return parts.join('\n');
}

/** Multi-line text safe to print: control characters other than newline and tab are shown as "�". */
export function safeText(text: string): string {
  return text.replace(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g, '\uFFFD');
}
