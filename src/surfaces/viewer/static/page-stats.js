// Stats: counts by type and scope, in recall over time, created per month, hit distribution, store size: SVG charts drawn here.
import { api } from './api.js';
import { add, count, formatBytes, h, replace, selectField, svg } from './dom.js';

const TYPES = ['user', 'feedback', 'project', 'reference', 'procedure'];

export async function statsPage(container) {
  const [{ stats }, { usage }] = await Promise.all([api('GET', '/v1/stats'), api('GET', '/v1/stats/usage')]);
  add(
    container,
    h('h1', {}, 'Stats'),
    h(
      'ul',
      { class: 'counts', 'aria-label': 'Totals' },
      [
        ['total', stats.total],
        ['active', stats.active],
        ['archived', stats.archived],
        ['invalid', stats.invalid],
        ['history entries', stats.historyEntries],
      ].map(([name, value]) => h('li', { class: 'count' }, h('strong', {}, String(value)), ` ${name}`)),
    ),
    h(
      'div',
      { class: 'charts' },
      chart('By type', Object.entries(stats.byType), { classOf: (label) => `type-${label}` }),
      chart('By scope', Object.entries(stats.byScope)),
      chart(
        'Recall hits per memory',
        usage.hits.map((bucket) => [bucket.label, bucket.count]),
      ),
      monthChart(usage.inRecallByMonth ?? [], "In recall at each month's end, by type"),
      scopeMonthChart(usage.inRecallByMonth ?? []),
      monthChart(usage.createdByMonth, 'Created per month, by type'),
    ),
    h(
      'section',
      { class: 'size' },
      h('h2', {}, 'Store size'),
      h(
        'dl',
        { class: 'fields' },
        usage.fileBytes !== undefined
          ? [h('dt', {}, 'Files on disk'), h('dd', {}, formatBytes(usage.fileBytes))]
          : null,
        h('dt', {}, 'Memory text'),
        h('dd', {}, formatBytes(usage.textBytes)),
        h('dt', {}, 'History entries'),
        h('dd', {}, String(stats.historyEntries)),
      ),
      usage.sampled
        ? h(
            'p',
            { class: 'muted' },
            `Hits, months and text size are counted over the newest ${count(usage.scanned, 'memory', 'memories')}.`,
          )
        : null,
    ),
  );
}

/** A horizontal bar chart, with the numbers as a table beside it for screen readers and copying. */
function chart(title, rows, { classOf = () => '' } = {}) {
  const max = Math.max(1, ...rows.map(([, value]) => value));
  const rowHeight = 26;
  const labelWidth = 170;
  const width = 420;
  const picture = svg('svg', {
    viewBox: `0 0 ${width} ${Math.max(rowHeight, rows.length * rowHeight)}`,
    role: 'img',
    'aria-label': `${title}: ${rows.map(([label, value]) => `${label} ${value}`).join(', ')}`,
    class: 'chart',
  });
  rows.forEach(([label, value], index) => {
    const y = index * rowHeight;
    const bar = ((width - labelWidth - 60) * value) / max;
    picture.append(
      svg('text', { x: labelWidth - 8, y: y + 17, 'text-anchor': 'end', class: 'chart-label' }, shorten(label)),
      svg('rect', {
        x: labelWidth,
        y: y + 4,
        width: Math.max(value > 0 ? 2 : 0, bar),
        height: rowHeight - 8,
        class: `bar ${classOf(label)}`,
      }),
      svg('text', { x: labelWidth + bar + 6, y: y + 17, class: 'chart-value' }, String(value)),
    );
  });
  return figure(title, picture, rows.length === 0 ? h('p', { class: 'muted' }, 'No memories.') : null);
}

/** A count per month, stacked by type (memories in recall at each month's end, or created in it). */
function monthChart(months, title) {
  const shown = months.slice(-24);
  const picture = monthBars(shown, title, {
    keys: TYPES,
    valueOf: (month, type) => month.byType[type],
    classOf: (type) => `type-${type}`,
  });
  const legend = h(
    'ul',
    { class: 'legend' },
    TYPES.map((type) => h('li', {}, h('span', { class: `swatch type-${type}`, 'aria-hidden': 'true' }), type)),
  );
  return figure(title, picture, shown.length === 0 ? h('p', { class: 'muted' }, 'No memories.') : legend);
}

/** How many scope colours the style sheet has (scope-0 … scope-5); more scopes reuse them in turn. */
const SCOPE_COLOURS = 6;

/**
 * Memories in recall at each month's end by scope: every scope stacked, or one scope chosen in the
 * selector beside it (its own scale, so a small scope beside a large one still shows its shape).
 */
function scopeMonthChart(months) {
  const title = "In recall at each month's end, by scope";
  const shown = months.slice(-24);
  // Scopes in the order of their count now, largest first; each keeps its colour when chosen alone.
  const latest = shown[shown.length - 1]?.byScope ?? {};
  const scopes = [...new Set(shown.flatMap((month) => Object.keys(month.byScope ?? {})))].sort(
    (a, b) => (latest[b] ?? 0) - (latest[a] ?? 0) || (a < b ? -1 : a > b ? 1 : 0),
  );
  if (shown.length === 0 || scopes.length === 0)
    return figure(title, monthBars([], title, { keys: [] }), h('p', { class: 'muted' }, 'No memories.'));
  const colour = new Map(scopes.map((scope, index) => [scope, `scope-${index % SCOPE_COLOURS}`]));
  const holder = h('div', { class: 'chart-holder' });
  const legend = h('ul', { class: 'legend' });
  const draw = (chosen) => {
    const keys = chosen ? [chosen] : scopes;
    const label = chosen ? `In recall at each month's end in ${chosen}` : title;
    replace(
      holder,
      monthBars(shown, label, {
        keys,
        valueOf: (month, scope) => month.byScope?.[scope] ?? 0,
        classOf: (scope) => colour.get(scope),
      }),
    );
    replace(
      legend,
      keys.map((scope) =>
        h('li', {}, h('span', { class: `swatch ${colour.get(scope)}`, 'aria-hidden': 'true' }), scope),
      ),
    );
  };
  draw('');
  const selector = h(
    'form',
    { class: 'chart-filter', on: { submit: (event) => event.preventDefault() } },
    selectField(
      'Scope',
      'recall-scope',
      [['', 'Every scope, stacked'], ...scopes.map((scope) => [scope, scope])],
      '',
      draw,
    ),
  );
  return figure(title, selector, holder, legend);
}

/** Bars per month, each stacked from `keys` (values from `valueOf`, colours from `classOf`). */
function monthBars(shown, title, { keys, valueOf = () => 0, classOf = () => '' }) {
  const width = 420;
  const height = 180;
  const total = (month) => keys.reduce((sum, key) => sum + valueOf(month, key), 0);
  const max = Math.max(1, ...shown.map(total));
  const step = shown.length > 0 ? Math.min(60, (width - 40) / shown.length) : 0;
  const picture = svg('svg', {
    viewBox: `0 0 ${width} ${height + 40}`,
    role: 'img',
    'aria-label': `${title}: ${shown.map((month) => `${month.month} ${total(month)}`).join(', ')}`,
    class: 'chart',
  });
  shown.forEach((month, index) => {
    let top = height;
    for (const key of keys) {
      const size = (height * valueOf(month, key)) / max;
      if (size <= 0) continue;
      top -= size;
      picture.append(
        svg('rect', {
          x: 30 + index * step + 2,
          y: top,
          width: Math.max(2, step - 4),
          height: size,
          class: `bar ${classOf(key)}`,
        }),
      );
    }
    if (shown.length <= 12 || index % Math.ceil(shown.length / 12) === 0)
      picture.append(
        svg(
          'text',
          { x: 30 + index * step + step / 2, y: height + 16, 'text-anchor': 'middle', class: 'chart-label small' },
          month.month,
        ),
      );
  });
  picture.append(svg('text', { x: 0, y: 12, class: 'chart-label small' }, String(max)));
  return picture;
}

function figure(title, ...parts) {
  return h('figure', { class: 'chart-box' }, h('figcaption', {}, title), parts);
}

function shorten(label) {
  return label.length > 20 ? `…${label.slice(-19)}` : label;
}
