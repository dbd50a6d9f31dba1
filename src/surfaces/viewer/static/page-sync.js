// Sync: each remote (what it carries, the last sync, what was held back or refused) and the open
// conflicts, each resolvable either way through POST /v1/sync/conflicts/<id>/resolve, the same
// library call as `engram sync resolve` (undoable from the memory's history).
import { api } from './api.js';
import { add, ago, count, h } from './dom.js';
import { notify, refresh, showError } from './app.js';

export async function syncPage(container) {
  const status = await api('GET', '/v1/sync');
  add(container, h('h1', {}, 'Sync'));
  for (const notice of status.notices ?? []) add(container, h('p', { class: 'warning' }, notice));
  if (!status.configured)
    add(
      container,
      h(
        'p',
        { class: 'muted', id: 'sync-not-configured' },
        'This store syncs with no remote. Run "engram sync --remote <git url>" once on each machine; see docs/sync.md.',
      ),
    );
  else
    add(
      container,
      h('h2', {}, 'Remotes'),
      h('ul', { class: 'runs', 'aria-label': 'Remotes' }, status.remotes.map(remoteItem)),
    );
  add(
    container,
    h('h2', {}, 'Conflicts'),
    status.conflicts.length === 0
      ? h('p', { class: 'muted', id: 'no-conflicts' }, 'No open conflicts.')
      : h('ol', { class: 'runs', 'aria-label': 'Open conflicts' }, conflictItems(status.conflicts)),
  );
}

function remoteItem(remote) {
  const problems = [...(remote.heldBack ?? []), ...(remote.rejected ?? [])];
  return h(
    'li',
    { class: 'run', dataset: { remote: remote.key } },
    h('p', {}, h('strong', {}, remote.remote), ` · ${remote.kind} · ${remote.scopes}`),
    h(
      'p',
      {},
      remote.lastSyncAt ? `Last sync ${ago(remote.lastSyncAt)}` : 'Never synced',
      remote.changesSinceSync !== undefined ? ` · ${count(remote.changesSinceSync, 'change')} since` : '',
      ` · ${count(remote.heldBackCount ?? 0, 'memory', 'memories')} held back`,
      remote.rejectedCount ? ` · ${count(remote.rejectedCount, 'file')} of the remote refused` : '',
    ),
    remote.lastError
      ? h('p', { class: 'warning' }, `Last attempt failed: ${remote.lastError.message ?? remote.lastError}`)
      : null,
    problems.length === 0
      ? null
      : h(
          'ul',
          { class: 'plain', 'aria-label': `Held back or refused at ${remote.remote}` },
          problems.map((problem) => h('li', {}, h('code', {}, problem.subject), ` ${problem.reason}`)),
        ),
  );
}

/** One item per memory: its open conflicts' fields, and the two ways to settle them all. */
function conflictItems(conflicts) {
  const byMemory = new Map();
  for (const record of conflicts) byMemory.set(record.memoryId, [...(byMemory.get(record.memoryId) ?? []), record]);
  return [...byMemory].map(([memoryId, records]) => {
    const fields = records.flatMap((record) => record.fields);
    // `kept` is what recall has: this machine's edit when it won (local), the other machine's when not.
    const sides = new Set(fields.map((field) => field.kept));
    const mine = sides.size === 1 ? (sides.has('local') ? 'kept' : 'other') : undefined;
    const choices = mine
      ? [
          { keep: mine, label: "Keep this machine's" },
          { keep: mine === 'kept' ? 'other' : 'kept', label: 'Keep the other' },
        ]
      : [
          { keep: 'kept', label: 'Keep what recall has' },
          { keep: 'other', label: 'Keep the edits that lost' },
        ];
    return h(
      'li',
      { class: 'run', dataset: { conflict: memoryId } },
      h(
        'p',
        {},
        h('a', { href: `#/memory/${encodeURIComponent(memoryId)}` }, memoryId),
        ` · ${records[0].scope} · found ${ago(records[0].detectedAt)}`,
      ),
      h(
        'ul',
        { class: 'plain' },
        fields.map((field) =>
          h(
            'li',
            {},
            h('strong', {}, field.group),
            ': recall has ',
            h('code', {}, show(field.keptValue)),
            ` (${field.kept === 'local' ? "this machine's" : "the other's"}); the other edit was `,
            h('code', {}, show(field.otherValue)),
          ),
        ),
      ),
      h(
        'p',
        { class: 'actions' },
        choices.map((choice) =>
          h(
            'button',
            {
              type: 'button',
              class: choice.keep === 'kept' ? 'secondary' : undefined,
              dataset: { keep: choice.keep },
              on: { click: () => resolve(memoryId, choice) },
            },
            choice.label,
          ),
        ),
      ),
    );
  });
}

function show(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

async function resolve(memoryId, choice) {
  try {
    const answer = await api('POST', `/v1/sync/conflicts/${encodeURIComponent(memoryId)}/resolve`, {
      keep: choice.keep,
    });
    await refresh();
    notify(
      `Resolved ${memoryId}: ${choice.label.toLowerCase()}.${answer.changeId ? ` Undo from its history (${answer.changeId}).` : ''} The next sync sends it to every machine.`,
    );
  } catch (error) {
    showError(error);
  }
}
