import type { AgingReport } from '../../../maintenance/age-memories.js';
import { noPositionals, type CommandDefinition } from '../cli-command.js';
import { readScopes, withEngram } from '../cli-engram.js';
import { oneLine, truncate } from '../table-format.js';

const MAX_LISTED = 50;

/** `engram age`: archive memories not accessed for a long time whose importance is low. */
export const ageCommand: CommandDefinition = {
  name: 'age',
  summary: 'Archive memories not used for aging.archiveAfterDays (90) days with importance below 0.5',
  usage: 'age [--dry-run] [--all] [options]',
  options: {
    'dry-run': { type: 'boolean', description: 'Show what would be archived and change nothing' },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to age (default: the current project and global)',
    },
    all: { type: 'boolean', description: 'Age every scope in the store (what the service does daily)' },
  },
  details:
    'A memory is old when its last recall (or its creation, if never recalled) is more than aging.archiveAfterDays ago.\n' +
    'Archived memories are kept and counted in "engram stats", left out of recall; "engram restore <id>" brings one back.',
  async run(invocation) {
    const { values } = invocation;
    noPositionals(invocation);
    return withEngram(invocation, async (opened) => {
      const all = values.all === true;
      const report = await opened.engram.age({
        ...(all ? { allScopes: true } : { scopes: readScopes(values, opened) }),
        dryRun: values['dry-run'] === true,
      });
      return { data: agingData(report), text: formatAgingReport(report, invocation.io.columns) };
    });
  },
};

/** The report with candidates reduced to what identifies them (the full memories are one "engram show" away). */
function agingData(report: AgingReport): Record<string, unknown> {
  return {
    ...report,
    candidates: report.candidates.map((memory) => ({
      id: memory.id,
      scope: memory.scope,
      name: memory.name,
      importance: memory.importance,
      lastAccessedAt: memory.lastAccessedAt,
      createdAt: memory.createdAt,
    })),
  };
}

function formatAgingReport(report: AgingReport, columns: number): string {
  const where = report.scopes === 'all' ? 'every scope' : report.scopes.join(', ');
  const rule = `importance below ${report.archiveBelowImportance}, unused since ${report.cutoff.slice(0, 10)} (${report.archiveAfterDays} days)`;
  if (report.candidates.length === 0) return `Nothing to archive in ${where}: no active memory has ${rule}.`;
  const width = Math.max(30, columns - 40);
  const archived = new Set(report.archived);
  const shown = report.dryRun ? report.candidates : report.candidates.filter((memory) => archived.has(memory.id));
  const lines = shown
    .slice(0, MAX_LISTED)
    .map((memory) => `  ${memory.id}  ${memory.importance.toFixed(2)}  ${truncate(oneLine(memory.name), width)}`);
  if (shown.length > MAX_LISTED) lines.push(`  … and ${shown.length - MAX_LISTED} more (--json lists them all)`);
  const count = (n: number): string => `${n} memor${n === 1 ? 'y' : 'ies'}`;
  if (report.dryRun)
    return [`Dry run: would archive ${count(report.candidates.length)} in ${where} (${rule}):`, ...lines].join('\n');
  const skipped = report.skipped.length > 0 ? ` (${report.skipped.length} skipped: used or changed meanwhile)` : '';
  return [
    `Archived ${count(report.archived.length)} in ${where} (${rule})${skipped}:`,
    ...lines,
    '"engram restore <id>" brings one back.',
  ].join('\n');
}
