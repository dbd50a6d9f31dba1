// Search: the same recall as `engram recall --explain`, each score part shown; a search is not a hit.
import { api } from './api.js';
import { add, count, formatScore, h, replace } from './dom.js';
import { showError } from './app.js';

let last = '';

export async function searchPage(container, { settings: info }) {
  const settings = await info;
  const input = h('input', {
    id: 'search-query',
    name: 'query',
    type: 'search',
    required: true,
    value: last,
    maxlength: '10000',
  });
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  const form = h(
    'form',
    {
      class: 'query-form',
      role: 'search',
      on: {
        submit: (event) => {
          event.preventDefault();
          last = input.value;
          run(last, results, settings).catch(showError);
        },
      },
    },
    h('label', { for: 'search-query' }, 'Question'),
    h('div', { class: 'row' }, input, h('button', { type: 'submit' }, 'Search')),
  );
  add(
    container,
    h('h1', {}, 'Search'),
    h('p', { class: 'muted' }, 'Ranked as recall ranks them: score = relevance × recency × importance weight ÷ 1.5.'),
    form,
    results,
  );
  if (last.trim() !== '') await run(last, results, settings);
}

async function run(text, results, settings) {
  if (text.trim() === '') return;
  const answer = await api('POST', '/v1/recall', { query: text, recordAccess: false });
  const items = answer.memories.map((entry, index) => resultItem(entry, index));
  replace(
    results,
    h(
      'p',
      { class: 'muted' },
      `${count(answer.memories.length, 'memory', 'memories')} in ${answer.scopes.join(', ')}; terms: ${answer.terms.join(' ') || '–'}.`,
    ),
    answer.warnings.map((warning) => h('p', { class: 'muted' }, `Note: ${warning}`)),
    items.length > 0
      ? h('ol', { class: 'result-list' }, items)
      : h('p', {}, `Nothing scores above ${settings.recall.minScore}.`),
  );
}

function resultItem({ memory, parts }, index) {
  const rows = [
    ['Score', formatScore(parts.score)],
    ['Relevance', formatScore(parts.relevance)],
    [
      'Full text',
      parts.text
        ? `#${parts.text.rank} · ${formatScore(parts.text.relevance)}`
        : formatScore(parts.context?.own ?? parts.relevance),
    ],
    ['Vectors', parts.vector ? `#${parts.vector.rank} · ${formatScore(parts.vector.similarity)}` : 'no embedder'],
    ['Context', parts.context ? contextText(parts.context) : '–'],
    ['Signals', signalsText(parts) || '–'],
    ['Recency', formatScore(parts.recency)],
    ['Importance weight', formatScore(parts.importanceWeight)],
  ];
  return h(
    'li',
    { class: 'result' },
    h(
      'div',
      { class: 'memory-head' },
      h('span', { class: 'rank' }, `${index + 1}.`),
      h('a', { href: `#/memory/${encodeURIComponent(memory.id)}`, class: 'memory-name' }, memory.name || memory.id),
      h('span', { class: `badge type-${memory.type}` }, memory.type),
      h('span', { class: 'score' }, formatScore(parts.score)),
    ),
    h('p', { class: 'memory-description' }, memory.description || memory.content.slice(0, 200)),
    h(
      'table',
      { class: 'parts' },
      h('caption', { class: 'visually-hidden' }, `Score parts of ${memory.name || memory.id}`),
      h(
        'tbody',
        {},
        rows.map(([name, value]) => h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, value))),
      ),
    ),
  );
}

/** What re-ordered the full-text relevance (as `engram recall --explain`'s SIGNALS column), in words. */
function signalsText({ context, signals }) {
  const parts = [];
  if (context?.sitting) parts.push(`sitting context +${formatScore(context.sitting.added)}`);
  if (signals?.date !== undefined) parts.push(`date named in the question ×${signals.date}`);
  if (signals?.timeMention !== undefined) parts.push(`says when ×${signals.timeMention}`);
  if (signals?.secondHop) {
    const via = signals.secondHop.via.length > 0 ? ` via ${signals.secondHop.via.join(', ')}` : '';
    parts.push(`second hop +${formatScore(signals.secondHop.added)}${via}`);
  }
  if (signals?.duplicate)
    parts.push(`near-copy of a better hit ~${signals.duplicate.similarity.toFixed(2)} (diversity)`);
  if (signals?.disagrees)
    parts.push(`older than ${signals.disagrees.newer}, which says otherwise: possibly superseded`);
  return parts.join(' · ');
}

function contextText(context) {
  const parts = [`own ${formatScore(context.own)}`];
  if (context.neighbour) parts.push(`turn +${formatScore(context.neighbour.added)}`);
  if (context.session) parts.push(`session +${formatScore(context.session.added)}`);
  return parts.join(' · ');
}
