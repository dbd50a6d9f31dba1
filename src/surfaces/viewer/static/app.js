// The viewer's shell: hash routes (#/memories, #/memory/<id>, …), the service's info, the token prompt.
import { api, ApiError, saveToken } from './api.js';
import { h, replace } from './dom.js';
import { memoriesPage } from './page-memories.js';

// The list, the first page most visits open, loads with the shell; every other page's module is
// imported on first use (and fetched in the background once the first page is drawn), so the
// first load waits for four files, not ten.
const PAGES = {
  memories: async () => memoriesPage,
  search: async () => (await import('./page-search.js')).searchPage,
  preview: async () => (await import('./page-preview.js')).previewPage,
  memory: async () => (await import('./page-memory.js')).memoryPage,
  activity: async () => (await import('./page-activity.js')).activityPage,
  stats: async () => (await import('./page-stats.js')).statsPage,
};

let warmed = false;

/** After the first page is drawn: fetch the other pages' modules, so opening one later waits for nothing. */
function warmOtherPages() {
  if (warmed) return;
  warmed = true;
  setTimeout(() => {
    for (const load of Object.values(PAGES)) load().catch(() => undefined);
  }, 0);
}

const main = () => document.getElementById('main');

/** Says something in the status line (read out by screen readers); `kind` error or ok. */
export function notify(message, kind = 'ok') {
  const notice = document.getElementById('notice');
  replace(notice, message ? h('p', { class: `notice-${kind}` }, message) : null);
}

/** Shows an error where the page would be, or asks for the token when the service wants one. */
export function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    tokenPrompt();
    return;
  }
  notify(error.message, 'error');
}

let info;
let renderCount = 0;

/** The service's scopes, budgets and limits (GET /v1/info), read once. */
export async function serviceInfo() {
  info ??= await api('GET', '/v1/info');
  return info;
}

function tokenPrompt() {
  notify('');
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    spellcheck: 'false',
  });
  const form = h(
    'form',
    {
      class: 'token-form',
      on: {
        submit: (event) => {
          event.preventDefault();
          saveToken(input.value.trim());
          info = undefined;
          void route();
        },
      },
    },
    h('h1', { tabindex: '-1' }, 'This service needs its token'),
    h(
      'p',
      {},
      'The engram service was started with a token (ENGRAM_TOKEN or --token). Enter it to continue; it is kept for this tab only and never put in a URL.',
    ),
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Token'), input),
    h('button', { type: 'submit' }, 'Continue'),
  );
  replace(main(), form);
  input.focus();
}

async function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, search = ''] = hash.split('?');
  const [name = 'memories', ...rest] = path.split('/');
  const loadPage = Object.hasOwn(PAGES, name) ? PAGES[name] : PAGES.memories;
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.page === name || (name === 'memory' && link.dataset.page === 'memories'))
      link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const count = ++renderCount;
  const container = h('div', { class: 'page' });
  try {
    // The page starts its own requests at once; it awaits the service's info only where it needs it.
    const settings = serviceInfo();
    settings.catch(() => undefined);
    const page = await loadPage();
    await page(container, {
      settings,
      params: rest.map((part) => decodeURIComponent(part)),
      search: new URLSearchParams(search),
      isCurrent: () => count === renderCount,
    });
    if (count !== renderCount) return;
    replace(main(), container);
    const heading = main().querySelector('h1');
    if (heading) {
      heading.setAttribute('tabindex', '-1');
      if (document.activeElement === document.body || !main().contains(document.activeElement)) heading.focus();
    }
    document.title = `${heading?.textContent ?? 'engram'} · engram`;
    // Marked for the bench: navigation start to this page rendered and usable.
    performance.mark(`engram:ready:${name}`);
    main().dataset.ready = name;
    warmOtherPages();
  } catch (error) {
    if (count !== renderCount) return;
    replace(main(), h('h1', {}, 'Something went wrong'));
    showError(error);
  }
}

window.addEventListener('hashchange', () => {
  notify('');
  void route();
});

/** Draws the current page again (after a change), keeping the status line. */
export function refresh() {
  return route();
}
if (!location.hash) history.replaceState(null, '', '#/memories');
void route();
