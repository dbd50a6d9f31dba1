import { EngramError } from '../../../kernel/errors.js';
import { resolveProjectIdentity } from '../../../node/project-identity.js';
import { loadSettings } from '../../../node/load-settings.js';
import type { RemoteSyncOutcome, SyncReport, SyncStatus } from '../../../sync/node/sync-store.js';
import { stringOption, type CommandDefinition, type CommandOutput } from '../cli-command.js';
import { CLI_ACTOR, withEngram } from '../cli-engram.js';
import { formatAge, oneLine } from '../table-format.js';

const ACTIONS = ['now', 'status', 'resolve'] as const;

/** `engram sync`: pull, merge and push memories through git remotes; `status`; `resolve`. */
export const syncCommand: CommandDefinition = {
  name: 'sync',
  summary: 'Sync memories with your other machines and your team through a git remote',
  usage:
    'sync [--remote <git url>] [--project-remote <git url>] [--import-claude-code]   |   sync status   |   sync resolve <memory-id> --keep kept|other',
  options: {
    remote: {
      type: 'string',
      valueName: 'git url',
      description: 'Set the personal remote (kept in ~/.engram/config.json, setting sync.remote), then sync',
    },
    'project-remote': {
      type: 'string',
      valueName: 'git url',
      description: "Name this project's team remote in its .engram.json (commit it), then sync",
    },
    'import-claude-code': {
      type: 'boolean',
      description: "First import this project's Claude Code auto memory (as engram import --claude-code), then sync",
    },
    keep: {
      type: 'string',
      valueName: 'kept|other',
      description: 'sync resolve: keep the value recall has, or the other edit',
    },
  },
  details: [
    "Personal memories (global, user:…) go to your personal remote, a project's to the remote its .engram.json names, else to",
    'the personal one too; session memories never leave. git runs with your own credentials (ssh agent, credential helper); engram',
    'stores none. The first sync of a new machine imports the remote; of an existing store, pushes its memories. See docs/sync.md.',
    'Examples:',
    '  engram sync --remote git@github.com:me/memories.git',
    '  engram sync status',
    '  engram sync resolve mem_01j… --keep other',
  ].join('\n'),
  async run(invocation) {
    const { values, positionals, io } = invocation;
    const action = (positionals[0] ?? 'now') as (typeof ACTIONS)[number];
    if (!ACTIONS.includes(action))
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown sync action ${JSON.stringify(String(positionals[0]).slice(0, 40))}: use engram sync, sync status or sync resolve <memory-id>.`,
      );
    const store = await import('../../../sync/node/sync-store.js');
    if (action === 'status') {
      if (positionals.length > 1) throw new EngramError('INVALID_INPUT', 'engram sync status takes no arguments.');
      return withEngram(invocation, async (opened) => {
        const status = await store.syncStatus({ opened, cwd: io.cwd });
        return { data: status, text: formatStatus(status) };
      });
    }
    if (action === 'resolve') {
      const keep = stringOption(values, 'keep');
      if (positionals.length !== 2 || (keep !== 'kept' && keep !== 'other'))
        throw new EngramError(
          'INVALID_INPUT',
          'engram sync resolve <memory-id> --keep kept|other: kept leaves what recall has, other writes back the edit that lost.',
        );
      return withEngram(invocation, async (opened) => {
        const resolution = await store.resolveSyncConflict({
          opened,
          memoryId: positionals[1]!,
          keep,
          actor: CLI_ACTOR,
        });
        return {
          data: resolution,
          text:
            keep === 'other'
              ? `Resolved ${resolution.resolved.length} conflict(s) of ${resolution.memoryId}: the other edit is back (undo with "engram undo ${resolution.changeId}"); the next sync sends it everywhere.`
              : `Resolved ${resolution.resolved.length} conflict(s) of ${resolution.memoryId}: recall keeps what it has.`,
        };
      });
    }
    if (positionals.length > 0 && positionals[0] !== 'now')
      throw new EngramError('INVALID_INPUT', 'engram sync takes no arguments besides status or resolve.');
    const { setPersonalRemote, setProjectRemote } = await import('../../../sync/node/sync-routes.js');
    const notes: string[] = [];
    const remote = stringOption(values, 'remote');
    if (remote !== undefined) {
      const { home } = loadSettings({ cwd: io.cwd, env: io.env });
      notes.push(`Personal remote set: ${await setPersonalRemote(home, remote, io.cwd)}.`);
    }
    const projectRemote = stringOption(values, 'project-remote');
    if (projectRemote !== undefined) {
      const written = setProjectRemote(resolveProjectIdentity(io.cwd).root, projectRemote);
      notes.push(`Team remote ${written.url} named in ${written.file}: commit it so teammates sync there too.`);
    }
    if (values['import-claude-code'] === true) {
      const { importCommand } = await import('./import-command.js');
      const imported = await importCommand.run({
        ...invocation,
        name: 'import',
        values: { 'claude-code': true },
        positionals: [],
      });
      notes.push(imported.text);
    }
    return withEngram(invocation, async (opened) => {
      const report = await store.syncStore({
        opened,
        cwd: io.cwd,
        acceptProjectRemote: true,
        interactive: io.stdin.isTTY === true,
      });
      return outcome(report, notes);
    });
  },
};

function outcome(report: SyncReport, notes: readonly string[]): CommandOutput {
  const failed = report.remotes.filter((remote) => remote.status === 'failed');
  const text = [...notes, ...report.remotes.map(describeOutcome), ...report.notices].join('\n');
  if (failed.length > 0 && failed.length === report.remotes.length) {
    const first = failed[0]!;
    throw new EngramError(
      first.status === 'failed' && first.error.code === 'REMOTE_INVALID' ? 'REMOTE_INVALID' : 'REMOTE_UNAVAILABLE',
      `${text}\nNothing was lost: what this machine holds stays, and the next sync tries again.`,
    );
  }
  return { data: report, text, ...(failed.length > 0 && { warnings: failed.map(describeOutcome) }) };
}

function describeOutcome(outcome: RemoteSyncOutcome): string {
  const head = `${outcome.remote} (${outcome.scopes})`;
  if (outcome.status === 'failed') return `${head}: failed: ${oneLine(outcome.error.message)}`;
  if (outcome.status !== 'synced')
    return outcome.status === 'busy'
      ? `${head}: another engram process is syncing it now.`
      : `${head}: waiting until ${outcome.until} after failures.`;
  const { report } = outcome;
  const lines = [
    `${head}: pulled ${report.pulled.written} written, ${report.pulled.deleted} deleted, ${report.pulled.purged} purged; pushed ${report.pushed.written} written, ${report.pushed.tombstones} tombstones${report.compared === 'full' ? ' (compared in full)' : ''}.`,
  ];
  if (report.historyRewritten)
    lines.push("  The remote's history was rewritten to one commit: a purged memory's text is in no commit of it.");
  if (report.conflicts.length > 0)
    lines.push(
      `  ${report.conflicts.length} conflict(s): the later edit kept, the other in history; "engram sync status" lists them.`,
    );
  for (const problem of report.heldBack.slice(0, 10)) lines.push(`  held back ${problem.subject}: ${problem.reason}`);
  for (const problem of report.rejected.slice(0, 10))
    lines.push(`  not applied ${oneLine(problem.subject)}: ${problem.reason}`);
  if (!report.complete) lines.push('  A memory changed here while syncing: the next sync finishes it.');
  return lines.join('\n');
}

function formatStatus(status: SyncStatus): string {
  if (!status.configured)
    return ['No sync remote: run "engram sync --remote <git url>".', ...status.notices].join('\n');
  const lines: string[] = [];
  for (const remote of status.remotes) {
    lines.push(`${remote.remote} (${remote.kind}: ${remote.scopes})`);
    lines.push(`  last sync: ${remote.lastSyncAt ? formatAge(remote.lastSyncAt) : 'never'}`);
    if (remote.changesSinceSync !== undefined) lines.push(`  changed here since: ${remote.changesSinceSync}`);
    if (remote.lastError && remote.failures > 0)
      lines.push(
        `  failing (${remote.failures}x): ${oneLine(remote.lastError.message)}; next try ${remote.nextAttemptAt ?? 'on the next sync'}`,
      );
    if (remote.heldBackCount > 0) lines.push(`  held back here: ${remote.heldBackCount}`);
    for (const problem of remote.heldBack.slice(0, 10)) lines.push(`    ${problem.subject}: ${problem.reason}`);
    if (remote.rejectedCount > 0) lines.push(`  remote files not applied: ${remote.rejectedCount}`);
    for (const problem of remote.rejected.slice(0, 10))
      lines.push(`    ${oneLine(problem.subject)}: ${problem.reason}`);
  }
  lines.push(
    status.conflicts.length === 0 ? 'No conflicts to review.' : `Conflicts to review (${status.conflicts.length}):`,
  );
  for (const conflict of status.conflicts)
    for (const field of conflict.fields)
      lines.push(
        `  ${conflict.memoryId} ${field.group}: kept ${field.kept === 'local' ? "this machine's" : "the remote's"} ${preview(field.keptValue)} (${field.keptAt}); other ${preview(field.otherValue)} (${field.otherAt})`,
      );
  if (status.conflicts.length > 0) lines.push('Resolve with: engram sync resolve <memory-id> --keep kept|other');
  lines.push(...status.notices);
  return lines.join('\n');
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return JSON.stringify(oneLine(text).slice(0, 60));
}
