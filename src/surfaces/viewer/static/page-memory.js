// A memory's page: its fields, edit, forget/restore, hard delete and purge (confirmed), its history with undo, the supersede chain.
import { api, ApiError } from './api.js';
import { add, ageNote, count, h, replace, when } from './dom.js';
import { notify, refresh, showError } from './app.js';

const TYPES = ['user', 'feedback', 'project', 'reference', 'procedure'];
const FIELDS = [
  'type',
  'name',
  'description',
  'content',
  'importance',
  'scope',
  'archived',
  'invalidAt',
  'supersededBy',
];

export async function memoryPage(container, { params, settings: info }) {
  const settings = await info;
  const id = params[0] ?? '';
  const path = `/v1/memories/${encodeURIComponent(id)}`;
  let history = [];
  try {
    history = (await api('GET', `${path}/history`)).history;
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
  }
  // A memory deleted for good keeps its history; asking for the memory itself would only be a 404.
  let memory;
  let chain = { replacedBy: [], replaces: [], names: new Map() };
  const deleted = history.length > 0 && history[history.length - 1].after === null;
  if (history.length > 0 && !deleted) [{ memory }, chain] = await Promise.all([api('GET', path), chainWithNames(path)]);
  if (!memory && history.length === 0) {
    add(
      container,
      h('h1', {}, 'No such memory'),
      h('p', {}, `No memory ${id} in the read scopes.`),
      h('a', { href: '#/memories' }, 'Back to the memories'),
    );
    return;
  }
  const last = history[history.length - 1];
  const purged = last?.action === 'purge';
  add(
    container,
    h('p', {}, h('a', { href: '#/memories' }, '← Memories')),
    h('h1', {}, memory ? memory.name || memory.id : `Deleted: ${last?.before?.name ?? id}`),
    memory
      ? fieldList(memory, settings)
      : h(
          'p',
          { class: 'warning' },
          purged
            ? 'This memory was purged: it and its history were removed from the store (the purge said then whether any copy remained elsewhere).'
            : 'This memory was deleted for good; its history remains, and undoing the delete brings it back.',
        ),
    chain.replacedBy.length + chain.replaces.length > 0 ? supersedeSection(chain) : null,
    memory ? actions(memory, path) : null,
    !memory && !purged ? h('section', { class: 'actions', 'aria-label': 'Actions' }, ...purgeControl(path)) : null,
    memory ? editForm(memory, path) : null,
    historySection(history),
  );
}

function fieldList(memory, settings) {
  const age = ageNote(memory, settings.recall);
  const rows = [
    ['Id', memory.id],
    ['Scope', memory.scope],
    ['Type', memory.type],
    ['Description', memory.description],
    ['Importance', memory.importance.toFixed(2)],
    [
      'State',
      [memory.archived ? 'archived' : 'active', memory.invalidAt ? `invalid since ${when(memory.invalidAt)}` : null]
        .filter(Boolean)
        .join(', '),
    ],
    ['Age', age.text],
    ['Created', when(memory.createdAt)],
    ['Updated', when(memory.updatedAt)],
    ['Recalled', `${count(memory.hitCount, 'time')}, last ${when(memory.lastAccessedAt)}`],
    [
      'Source',
      memory.source
        ? Object.entries(memory.source)
            .map(([key, value]) => `${key} ${value}`)
            .join(' · ')
        : '–',
    ],
  ];
  return h(
    'section',
    { 'aria-label': 'Fields' },
    h(
      'dl',
      { class: 'fields' },
      rows.map(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]),
    ),
    h('h2', {}, 'Content'),
    h('pre', { class: 'content', tabindex: '0', 'aria-label': 'Content' }, memory.content),
  );
}

/** The chain and the names of the memories in it (an unreadable one keeps its id). */
async function chainWithNames(path) {
  const { chain } = await api('GET', `${path}/chain`);
  const ids = [
    ...new Set([...chain.replacedBy.map((entry) => entry.to), ...chain.replaces.map((entry) => entry.from)]),
  ];
  const names = new Map(
    await Promise.all(
      ids.map(async (id) => {
        try {
          const { memory } = await api('GET', `/v1/memories/${encodeURIComponent(id)}`);
          return [id, memory.name || id];
        } catch {
          return [id, `${id} (not readable)`];
        }
      }),
    ),
  );
  return { ...chain, names };
}

const WHY = {
  merged: 'merged into it',
  overturned: 'overturned by a newer fact',
  superseded: 'superseded',
};

/** The supersede chain (GET /v1/memories/:id/chain): what replaced this memory, in order, and what it replaced. */
function supersedeSection(chain) {
  const link = (id, entry) =>
    h(
      'li',
      {},
      h('a', { href: `#/memory/${encodeURIComponent(id)}` }, chain.names.get(id) ?? id),
      ` — ${[WHY[entry.why] ?? entry.why, entry.by && `by ${entry.by}`, entry.at && when(entry.at)]
        .filter(Boolean)
        .join(', ')}`,
    );
  return h(
    'section',
    { class: 'chain', 'aria-label': 'Supersede chain' },
    h('h2', {}, 'Supersede chain'),
    chain.replacedBy.length > 0
      ? [
          h('h3', {}, 'Replaced by'),
          h(
            'ol',
            { class: 'plain replaced-by' },
            chain.replacedBy.map((entry) => link(entry.to, entry)),
          ),
        ]
      : null,
    chain.replaces.length > 0
      ? [
          h('h3', {}, 'Replaces'),
          h(
            'ul',
            { class: 'plain replaces' },
            chain.replaces.map((entry) => link(entry.from, entry)),
          ),
        ]
      : null,
  );
}

function actions(memory, path) {
  const dialog = h(
    'dialog',
    { class: 'confirm', 'aria-labelledby': 'delete-title' },
    h('h2', { id: 'delete-title' }, 'Delete this memory? (can be undone)'),
    h(
      'p',
      {},
      'It leaves the store and recall; its history keeps the last state, so Undo in the history brings it back. To erase it with its history, use Delete for good.',
    ),
    h(
      'div',
      { class: 'row' },
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          on: {
            click: () =>
              change(
                () => api('DELETE', `${path}?hard=true`),
                'Deleted: Undo in its history brings it back.',
                () => dialog.close(),
              ),
          },
        },
        'Delete (undoable)',
      ),
      h(
        'button',
        { type: 'button', class: 'secondary', autofocus: true, on: { click: () => dialog.close() } },
        'Cancel',
      ),
    ),
  );
  return h(
    'section',
    { class: 'actions', 'aria-label': 'Actions' },
    memory.archived
      ? h(
          'button',
          {
            type: 'button',
            on: { click: () => change(() => api('POST', `${path}/restore`), 'Restored: recall finds it again.') },
          },
          'Restore',
        )
      : h(
          'button',
          {
            type: 'button',
            on: {
              click: () =>
                change(
                  () => api('DELETE', path),
                  'Forgotten (archived): recall leaves it out; Restore brings it back.',
                ),
            },
          },
          'Forget',
        ),
    h('button', { type: 'button', class: 'danger', on: { click: () => dialog.showModal() } }, 'Delete…'),
    dialog,
    ...purgeControl(path),
  );
}

/** What the service said of a purge: "gone" only when it cleared every place, else each place it could not clear. */
function purgeMessage(report) {
  const left = (report?.places ?? []).filter((place) => !place.cleared);
  if (report?.copiesCleared === true && left.length === 0)
    return 'Purged: the memory, its history and every copy the store held are gone.';
  if (left.length === 0) return 'Purged, but the service did not say whether every copy was cleared.';
  return `Purged from the store, but not everywhere: ${left.map((place) => `${place.place}: ${place.reason ?? 'a copy may remain'}`).join('; ')}`;
}

/** The Delete for good… button (a purge) and its confirmation: the memory goes with its history and what quotes it, no undo. */
function purgeControl(path) {
  const dialog = h(
    'dialog',
    { class: 'confirm', 'aria-labelledby': 'purge-title' },
    h('h2', { id: 'purge-title' }, 'Delete this memory and its history for good?'),
    h(
      'p',
      {},
      'For a secret stored by mistake: the memory, its history and the jobs and records that quote it are removed, and the store says where a copy may remain. This cannot be undone.',
    ),
    h(
      'div',
      { class: 'row' },
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          on: {
            click: () =>
              change(
                () => api('DELETE', `${path}?purge=true`),
                purgeMessage,
                () => dialog.close(),
              ),
          },
        },
        'Delete for good',
      ),
      h(
        'button',
        { type: 'button', class: 'secondary', autofocus: true, on: { click: () => dialog.close() } },
        'Cancel',
      ),
    ),
  );
  return [
    h('button', { type: 'button', class: 'danger', on: { click: () => dialog.showModal() } }, 'Delete for good…'),
    dialog,
  ];
}

function editForm(memory, path) {
  const name = h('input', { id: 'edit-name', name: 'name', value: memory.name, maxlength: '200' });
  const description = h('input', {
    id: 'edit-description',
    name: 'description',
    value: memory.description,
    maxlength: '1000',
  });
  const content = h('textarea', { id: 'edit-content', name: 'content', rows: '6', required: true });
  content.value = memory.content;
  const type = h(
    'select',
    { id: 'edit-type', name: 'type' },
    TYPES.map((value) => h('option', { value, selected: value === memory.type }, value)),
  );
  const importance = h('input', {
    id: 'edit-importance',
    name: 'importance',
    type: 'number',
    min: '0',
    max: '1',
    step: '0.05',
    value: String(memory.importance),
  });
  const field = (label, input) => h('div', { class: 'field' }, h('label', { for: input.id }, label), input);
  return h(
    'details',
    { class: 'edit' },
    h('summary', {}, 'Edit'),
    h(
      'form',
      {
        on: {
          submit: (event) => {
            event.preventDefault();
            const patch = {};
            if (name.value !== memory.name) patch.name = name.value;
            if (description.value !== memory.description) patch.description = description.value;
            if (content.value !== memory.content) patch.content = content.value;
            if (type.value !== memory.type) patch.type = type.value;
            if (Number(importance.value) !== memory.importance) patch.importance = Number(importance.value);
            if (Object.keys(patch).length === 0) {
              notify('Nothing changed.');
              return;
            }
            void change(() => api('PATCH', path, patch), 'Saved; the history below shows the change and can undo it.');
          },
        },
      },
      field('Name', name),
      field('Description', description),
      field('Content', content),
      h('div', { class: 'row' }, field('Type', type), field('Importance (0–1)', importance)),
      h('button', { type: 'submit' }, 'Save'),
    ),
  );
}

async function change(request, message, after) {
  try {
    const result = await request();
    after?.();
    notify(typeof message === 'function' ? message(result) : message);
    await refresh();
  } catch (error) {
    after?.();
    showError(error);
  }
}

function historySection(history) {
  const entries = [...history].reverse();
  return h(
    'section',
    { 'aria-labelledby': 'history-title' },
    h('h2', { id: 'history-title' }, `History (${history.length})`),
    h('ol', { class: 'history' }, entries.map(historyItem)),
  );
}

function historyItem(entry) {
  const diff = FIELDS.filter(
    (field) =>
      JSON.stringify(entry.before?.[field]) !== JSON.stringify(entry.after?.[field]) &&
      (entry.before || entry.after?.[field] !== undefined),
  );
  return h(
    'li',
    { class: 'change', dataset: { change: entry.id } },
    h(
      'div',
      { class: 'change-head' },
      h('strong', {}, entry.action),
      ` by ${entry.actor} · ${when(entry.at)}`,
      entry.undoOf ? h('span', { class: 'badge' }, 'undo') : null,
      entry.action === 'purge'
        ? null
        : h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'aria-label': `Undo this ${entry.action} (${when(entry.at)})`,
              on: {
                click: () =>
                  change(() => api('POST', '/v1/undo', { changeId: entry.id }), `Undid the ${entry.action}.`),
              },
            },
            'Undo',
          ),
    ),
    entry.before && entry.after
      ? h(
          'table',
          { class: 'diff' },
          h('caption', { class: 'visually-hidden' }, `Fields changed by this ${entry.action}`),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'Field'),
              h('th', { scope: 'col' }, 'Before'),
              h('th', { scope: 'col' }, 'After'),
            ),
          ),
          h(
            'tbody',
            {},
            diff.map((field) =>
              h(
                'tr',
                {},
                h('th', { scope: 'row' }, field),
                h('td', { class: 'before' }, show(entry.before[field])),
                h('td', { class: 'after' }, show(entry.after[field])),
              ),
            ),
          ),
        )
      : h(
          'p',
          { class: 'muted' },
          entry.action === 'purge'
            ? 'Deleted for good (purged): nothing kept.'
            : entry.after
              ? 'Created.'
              : 'Deleted (undoable).',
        ),
  );
}

function show(value) {
  if (value === null || value === undefined) return '–';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
