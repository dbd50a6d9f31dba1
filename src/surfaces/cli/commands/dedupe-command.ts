import type { DedupeReport } from '../../../maintenance/merge-duplicates.js';
import { noPositionals, numberOption, type CommandDefinition } from '../cli-command.js';
import { readScopes, withEngram } from '../cli-engram.js';
import { oneLine, truncate } from '../table-format.js';

const MAX_LISTED_CHANGES = 20;

/** `engram dedupe`: find near-duplicate memories per scope; merge them with --apply. */
export const dedupeCommand: CommandDefinition = {
  name: 'dedupe',
  summary: 'Find near-duplicate memories (dry run); merge them with --apply',
  usage: 'dedupe [--apply] [--threshold <0..1>] [options]',
  options: {
    apply: { type: 'boolean', description: 'Merge the groups found (default: only show them)' },
    threshold: {
      type: 'string',
      valueName: '0..1',
      description: 'Lexical similarity needed (setting dedupe.lexicalThreshold, default 0.8)',
    },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to look in, each on its own (default: the current project and global)',
    },
  },
  details:
    'Each group keeps its oldest memory, updated with the newest wording and the highest importance; the others are\n' +
    'invalidated and linked to it (superseded by). Every change is in history: "engram undo <change>" reverts it.',
  async run(invocation) {
    const { values } = invocation;
    noPositionals(invocation);
    const threshold = numberOption(values, 'threshold');
    return withEngram(invocation, async (opened) => {
      const report = await opened.engram.dedupe({
        scopes: readScopes(values, opened),
        apply: values.apply === true,
        ...(threshold !== undefined && { lexicalThreshold: threshold }),
      });
      return { data: report, text: formatDedupeReport(report, invocation.io.columns) };
    });
  },
};

/** The groups found and, once applied, the changes made and how to revert them. */
export function formatDedupeReport(report: DedupeReport, columns: number): string {
  if (report.groups.length === 0) return `No near-duplicates in ${report.scopes.join(', ')}.`;
  const width = Math.max(40, columns - 24);
  const lines: string[] = [];
  for (const group of report.groups) {
    lines.push(`${group.scope}: keep ${group.keeper.id} "${truncate(oneLine(group.keeper.content), width)}"`);
    for (const duplicate of group.duplicates) {
      lines.push(
        `  ${report.applied ? 'merged' : 'merge'} ${duplicate.memory.id} (${duplicate.method} ${duplicate.similarity.toFixed(2)}) "${truncate(oneLine(duplicate.memory.content), width)}"`,
      );
    }
    if (group.patch.content !== undefined)
      lines.push(`  new content: "${truncate(oneLine(group.patch.content), width)}"`);
    if (group.patch.importance !== undefined)
      lines.push(`  importance ${group.keeper.importance} → ${group.patch.importance}`);
  }
  const groups = `${report.groups.length} group${report.groups.length === 1 ? '' : 's'}`;
  const memories = `${report.merged} memor${report.merged === 1 ? 'y' : 'ies'}`;
  if (!report.applied) {
    lines.push('', `Dry run: ${memories} in ${groups} would be merged. Run "engram dedupe --apply" to merge them.`);
  } else {
    lines.push(
      '',
      `Merged ${memories} in ${groups} with ${report.changes.length} changes; "engram undo <change>" reverts each one.`,
    );
    if (report.changes.length <= MAX_LISTED_CHANGES)
      lines.push(...report.changes.map((change) => `  ${change.action} of ${change.memoryId}: ${change.changeId}`));
    else lines.push('The change ids are in the --json output (changes).');
  }
  if (report.warnings.length > 0) lines.push(`Warnings: ${report.warnings.join(', ')}.`);
  return lines.join('\n');
}
