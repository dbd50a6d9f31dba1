// Memories: newest first by scope and type, with filters; keyset paging ("Show more") stays fast at 100K.
import { api, query } from './api.js';
import { add, ageNote, count, h, replace, selectField } from './dom.js';
import { showError } from './app.js';

const TYPES = ['user', 'feedback', 'project', 'reference', 'procedure'];
const PAGE_SIZE = 50;

// Filters outlive a visit to a memory's page, so "back" finds the list as it was.
const filters = {
  scope: '',
  type: '',
  archived: 'exclude',
  invalid: 'exclude',
  stale: false,
  importanceAtLeast: '',
  importanceBelow: '',
};

export async function memoriesPage(container, { settings: info, isCurrent }) {
  let settings;
  const list = h('ol', { class: 'memory-list', 'aria-label': 'Memories, newest first' });
  const summary = h('p', { class: 'muted', id: 'list-summary', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Show more');
  let cursor = null;
  let shown = 0;
  let total;
  let generation = 0;

  const filterQuery = () => ({
    scope: filters.scope,
    type: filters.type,
    archived: filters.archived,
    invalid: filters.invalid,
    stale: filters.stale ? 'true' : '',
    importanceAtLeast: filters.importanceAtLeast,
    importanceBelow: filters.importanceBelow,
  });

  function writeSummary() {
    replace(
      summary,
      shown === 0
        ? 'No memories match these filters.'
        : total === undefined
          ? `Showing ${shown}, newest first (counting…).`
          : `Showing ${shown} of ${count(total, 'memory', 'memories')}, newest first.`,
    );
  }

  // The first page comes without its count, so the list is drawn at once; the count follows (at 100K
  // it is most of the first page's time) and fills in the summary.
  async function load(reset) {
    const current = reset ? ++generation : generation;
    const page = await api(
      'GET',
      `/v1/memories${query({ ...filterQuery(), limit: PAGE_SIZE, ...(reset ? { total: 'false' } : { cursor }) })}`,
    );
    settings ??= await info;
    if (current !== generation) return;
    if (reset) {
      list.replaceChildren();
      shown = 0;
      total = page.memories.length < PAGE_SIZE ? page.memories.length : undefined;
      if (total === undefined)
        api('GET', `/v1/memories${query({ ...filterQuery(), total: 'only' })}`)
          .then((answer) => {
            if (current !== generation) return;
            total = answer.total;
            writeSummary();
          })
          .catch(showError);
    }
    for (const memory of page.memories) list.append(memoryItem(memory, settings.recall));
    shown += page.memories.length;
    cursor = page.nextCursor;
    more.hidden = cursor === null;
    writeSummary();
  }

  const reload = (name) => (value) => {
    filters[name] = value;
    load(true).catch(showError);
  };
  more.addEventListener('click', () => {
    const next = list.children.length;
    load(false)
      .then(() => list.children[next]?.querySelector('a')?.focus())
      .catch(showError);
  });

  await load(true);
  if (!isCurrent()) return;
  const scopes = settings.readScopes;
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filters', on: { submit: (event) => event.preventDefault() } },
    selectField(
      'Scope',
      'scope',
      [['', 'All read scopes'], ...scopes.map((scope) => [scope, scope])],
      filters.scope,
      reload('scope'),
    ),
    selectField('Type', 'type', [['', 'Any type'], ...TYPES.map((type) => [type, type])], filters.type, reload('type')),
    selectField(
      'Archived',
      'archived',
      [
        ['exclude', 'Hide archived'],
        ['include', 'Include archived'],
        ['only', 'Only archived'],
      ],
      filters.archived,
      reload('archived'),
    ),
    selectField(
      'Invalid',
      'invalid',
      [
        ['exclude', 'Hide invalid'],
        ['include', 'Include invalid'],
        ['only', 'Only invalid'],
      ],
      filters.invalid,
      reload('invalid'),
    ),
    selectField(
      'Importance from',
      'importanceAtLeast',
      [
        ['', 'Any'],
        ['0.3', '0.3'],
        ['0.5', '0.5'],
        ['0.7', '0.7'],
        ['0.9', '0.9'],
      ],
      filters.importanceAtLeast,
      reload('importanceAtLeast'),
    ),
    selectField(
      'Importance below',
      'importanceBelow',
      [
        ['', 'Any'],
        ['0.3', '0.3'],
        ['0.5', '0.5'],
        ['0.7', '0.7'],
        ['0.9', '0.9'],
      ],
      filters.importanceBelow,
      reload('importanceBelow'),
    ),
    h(
      'div',
      { class: 'field checkbox' },
      h('input', {
        type: 'checkbox',
        id: 'field-stale',
        name: 'stale',
        checked: filters.stale,
        on: { change: (event) => reload('stale')(event.target.checked) },
      }),
      h('label', { for: 'field-stale' }, `Stale only (older than ${settings.recall.staleDays} days)`),
    ),
  );

  add(container, h('h1', {}, 'Memories'), form, summary, list, more);
}

function memoryItem(memory, recallSettings) {
  const age = ageNote(memory, recallSettings);
  const states = [memory.archived && 'archived', memory.invalidAt && 'invalid'].filter(Boolean);
  return h(
    'li',
    { class: 'memory-item' },
    h(
      'div',
      { class: 'memory-head' },
      h('a', { href: `#/memory/${encodeURIComponent(memory.id)}`, class: 'memory-name' }, memory.name || memory.id),
      h('span', { class: `badge type-${memory.type}` }, memory.type),
      states.map((state) => h('span', { class: 'badge state' }, state)),
    ),
    h('p', { class: 'memory-description' }, memory.description || memory.content.slice(0, 200)),
    h(
      'p',
      { class: 'memory-meta' },
      h('span', { class: `age age-${age.state}` }, age.text),
      h('span', {}, memory.scope),
      h('span', {}, `importance ${memory.importance.toFixed(2)}`),
      h('span', {}, `${memory.hitCount} hit${memory.hitCount === 1 ? '' : 's'}`),
    ),
  );
}
