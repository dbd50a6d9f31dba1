import type { DreamReport } from '../../../consolidation/dream-report.js';
import type { Memory } from '../../../memory/memory.js';
import { noPositionals, type CommandDefinition } from '../cli-command.js';
import { readScopes, withEngram } from '../cli-engram.js';
import { oneLine, truncate } from '../table-format.js';

const DIFF_FIELDS = ['content', 'description', 'importance', 'invalidAt', 'supersededBy', 'archived'] as const;

/** `engram dream`: consolidate memory now (merge, date, invalidate, re-index); --dry-run shows the plan. */
export const dreamCommand: CommandDefinition = {
  name: 'dream',
  summary: 'Consolidate memory: merge duplicates, date, invalidate overturned facts (--dry-run: show the plan)',
  usage: 'dream [--dry-run] [--scope a,b] [options]',
  options: {
    'dry-run': { type: 'boolean', description: 'Print the plan, a diff per memory, and change nothing' },
    scope: {
      type: 'string',
      multiple: true,
      valueName: 'a,b',
      description: 'Scopes to consolidate, each on its own (default: the current project and global)',
    },
  },
  details:
    'Applies the plan as one change set; "engram undo <change-set-id>" reverts all of it. Nothing is deleted:\n' +
    'merged and overturned memories are invalidated and linked to what replaced them ("engram show <id>").\n' +
    'Instruction files (CLAUDE.md) are never edited: a memory that contradicts one is annotated and listed.\n' +
    'A manual run skips the time gates of automatic runs but not the store lock: it skips if a dream is running.',
  async run(invocation) {
    const { values } = invocation;
    noPositionals(invocation);
    return withEngram(invocation, async (opened) => {
      const { runDreamWithFiles, dreamSessionHomes } = await import('../../../consolidation/node/dream-runner.js');
      const report = await runDreamWithFiles(
        {
          engram: opened.engram,
          projectRoot: opened.loaded.project.root,
          ...(invocation.io.env.HOME && { home: invocation.io.env.HOME }),
          ...dreamSessionHomes(invocation.io.env),
        },
        { trigger: 'manual', scopes: readScopes(values, opened), dryRun: values['dry-run'] === true },
      );
      return { data: dreamData(report), text: formatDreamReport(report, invocation.io.columns) };
    });
  },
};

/** The report for --json: the steps without full memory states (the diffs hold before and after). */
function dreamData(report: DreamReport): Record<string, unknown> {
  return {
    ...report,
    steps: report.steps.map(({ before: _before, after: _after, ...step }) => step),
  };
}

/** The plan as a diff per memory, then the change set (or how to apply), then SPEC's line. */
export function formatDreamReport(report: DreamReport, columns: number): string {
  if (report.status === 'skipped') {
    const why =
      report.skipped === 'locked'
        ? 'another dream holds the store lock'
        : `${report.skipped}${report.nextAt ? `, next after ${report.nextAt}` : ''}`;
    return `Skipped: ${why}.\n${report.summary}`;
  }
  const width = Math.max(40, columns - 8);
  const lines: string[] = [];
  for (const diff of report.diffs) {
    lines.push(`${diff.memoryId} (${diff.scope}) ${diff.kinds.join(', ')}`);
    lines.push(...fieldDiff(diff.before, diff.after, width));
  }
  for (const dropped of report.dropped)
    lines.push(`dropped a ${dropped.by} step: ${truncate(oneLine(dropped.reason), width)}`);
  if (report.changedDuringRun?.length)
    lines.push(
      `changed while the dream ran (edits kept, their steps dropped): ${truncate(report.changedDuringRun.join(', '), width)}`,
    );
  for (const conflict of report.instructionConflicts)
    lines.push(
      `contradicts ${conflict.path}: ${conflict.memoryId} ("${truncate(oneLine(conflict.line), width - 30)}")`,
    );
  for (const index of report.index)
    lines.push(
      `MEMORY.md of ${index.scope}: ${index.shown} of ${index.total} entries${index.truncated ? ' (cut at its caps)' : ''}, ${index.droppedPointers} pointers dropped`,
    );
  if (report.model)
    lines.push(
      `model: ${report.model.calls} calls, ${report.model.usage.inputTokens} input and ${report.model.usage.outputTokens} output tokens${report.model.malformed.length > 0 ? `; plan unreadable: ${report.model.malformed.join('; ')}` : ''}`,
    );
  if (lines.length > 0) lines.push('');
  if (report.dryRun) lines.push('Dry run: nothing changed. Run "engram dream" to apply.');
  else if (report.changeSetId)
    lines.push(`Applied as change set ${report.changeSetId}; "engram undo ${report.changeSetId}" reverts it.`);
  if (report.warnings.length > 0) lines.push(`Warnings: ${report.warnings.join(', ')}.`);
  lines.push(report.summary);
  return lines.join('\n');
}

function fieldDiff(before: Memory, after: Memory, width: number): string[] {
  const lines: string[] = [];
  for (const field of DIFF_FIELDS) {
    const from = before[field];
    const to = after[field];
    if (JSON.stringify(from) === JSON.stringify(to)) continue;
    if (typeof from === 'string' && typeof to === 'string') {
      lines.push(`  - ${field}: ${truncate(oneLine(from), width)}`, `  + ${field}: ${truncate(oneLine(to), width)}`);
    } else {
      lines.push(`  ${field}: ${JSON.stringify(from)} → ${JSON.stringify(to)}`);
    }
  }
  return lines;
}
