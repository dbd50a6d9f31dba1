// Injection preview: exactly what a model would receive for a message, and its tokens against the budget.
import { api } from './api.js';
import { add, count, h, replace } from './dom.js';
import { showError } from './app.js';

let last = '';

export async function previewPage(container, { settings: info }) {
  const settings = await info;
  const message = h('textarea', {
    id: 'preview-message',
    name: 'message',
    rows: '3',
    required: true,
    maxlength: '10000',
  });
  message.value = last;
  const budget = h('input', {
    id: 'preview-budget',
    name: 'maxTokens',
    type: 'number',
    min: '0',
    max: '1000000',
    value: String(settings.injection.maxTokens),
  });
  const output = h('div', { class: 'preview', 'aria-live': 'polite' });
  const form = h(
    'form',
    {
      class: 'query-form',
      on: {
        submit: (event) => {
          event.preventDefault();
          last = message.value;
          run(last, Number(budget.value), output).catch(showError);
        },
      },
    },
    h('label', { for: 'preview-message' }, 'Message'),
    message,
    h(
      'div',
      { class: 'row' },
      h('div', { class: 'field' }, h('label', { for: 'preview-budget' }, 'Token budget of the block'), budget),
      h('button', { type: 'submit' }, 'Preview'),
    ),
  );
  add(
    container,
    h('h1', {}, 'Injection preview'),
    h(
      'p',
      { class: 'muted' },
      'The static part goes at the start of the system prompt, the <memory_context> block at its end. A preview does not count as a hit.',
    ),
    form,
    output,
  );
  if (last.trim() !== '') await run(last, Number(budget.value), output);
}

async function run(text, maxTokens, output) {
  if (text.trim() === '') return;
  const context = await api('POST', '/v1/context', { query: text, maxTokens });
  const { tokens } = context;
  const share = tokens.budget > 0 ? Math.min(1, tokens.block / tokens.budget) : 0;
  replace(
    output,
    h(
      'div',
      { class: 'token-summary' },
      h(
        'p',
        {},
        `Block: ${tokens.block} of ${tokens.budget} tokens · static part: ${count(tokens.staticPart, 'token')}`,
      ),
      h('meter', { min: '0', max: '1', value: String(share), 'aria-label': 'Block tokens against the budget' }),
    ),
    context.warnings.map((warning) => h('p', { class: 'warning' }, warning)),
    h('h2', {}, 'Static part'),
    h('pre', { class: 'injected', tabindex: '0', 'aria-label': 'Static part' }, context.staticPart || '(empty)'),
    h('h2', {}, '<memory_context> block'),
    h(
      'pre',
      { class: 'injected', tabindex: '0', 'aria-label': 'Memory context block' },
      context.block || '(empty: no memory scored high enough)',
    ),
    h('h2', {}, `In the block (${context.included.length})`),
    entries(context.included),
    context.omitted.length > 0
      ? [h('h2', {}, `Left out for the budget (${context.omitted.length})`), entries(context.omitted)]
      : null,
  );
}

function entries(list) {
  if (list.length === 0) return h('p', { class: 'muted' }, 'None.');
  return h(
    'ul',
    { class: 'plain' },
    list.map((entry) =>
      h(
        'li',
        {},
        h('a', { href: `#/memory/${encodeURIComponent(entry.id)}` }, entry.name || entry.id),
        ` · ${entry.type} · ${count(entry.tokens, 'token')} · score ${entry.score.toFixed(3)}`,
      ),
    ),
  );
}
