// The viewer's shell: hash routes (#/memories, #/memory/<id>, …), the service's info, the token prompt.
import { api, ApiError, saveToken, setViewScopes, viewScopes } from './api.js';
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
  sync: async () => (await import('./page-sync.js')).syncPage,
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

/**
 * The service's scopes, budgets and limits (GET /v1/info), read once; `readScopes` are the ones the
 * viewer shows (the picked project's, see viewScopes), `project` the project it shows.
 */
export async function serviceInfo() {
  if (!info) {
    const raw = await api('GET', '/v1/info');
    const readScopes = viewScopes() ?? raw.readScopes;
    const project = readScopes.find((scope) => scope.startsWith('project:')) ?? raw.defaultScope;
    info = { ...raw, serviceScopes: raw.readScopes, readScopes, project };
    showProject(info);
  }
  return info;
}

/** The read scopes with the service's project replaced by another the store holds. */
function scopesFor(raw, project) {
  const own = raw.readScopes.filter((scope) => !scope.startsWith('project:'));
  return [project, ...own];
}

/** Shows another project (null: the service's own), then draws the page again. */
export async function chooseProject(project) {
  const raw = info ?? (await serviceInfo());
  const own = raw.serviceScopes.find((scope) => scope.startsWith('project:')) ?? raw.defaultScope;
  setViewScopes(project && project !== own ? scopesFor({ readScopes: raw.serviceScopes }, project) : null);
  info = undefined;
  await route();
}

/** The header's project picker and the sentence saying which project the pages show. */
function showProject(current) {
  const holder = document.getElementById('project');
  if (!holder) return;
  const own = current.serviceScopes.find((scope) => scope.startsWith('project:')) ?? current.defaultScope;
  const projects = [...new Set([own, current.project, ...(current.projects ?? [])])];
  const select = h(
    'select',
    { id: 'project-picker', on: { change: (event) => void chooseProject(event.currentTarget.value) } },
    projects.map((scope) =>
      h(
        'option',
        { value: scope, selected: scope === current.project },
        scope === own ? `${scope} (the service's)` : scope,
      ),
    ),
  );
  replace(
    holder,
    h('label', { for: 'project-picker' }, 'Project'),
    select,
    h(
      'span',
      { class: current.project === own ? 'muted' : 'warning', id: 'project-note' },
      current.project === own
        ? `Showing ${current.project}, the project this service was started in.`
        : `Showing ${current.project}; this service was started in ${own}.`,
    ),
  );
}

/** `engram ui` opens /?project=<scope> when the service was started in another project: show that one. */
async function projectFromUrl() {
  const wanted = new URLSearchParams(location.search).get('project');
  if (!wanted) return;
  history.replaceState(null, '', `/${location.hash || '#/memories'}`);
  try {
    await chooseProject(wanted);
  } catch {
    // The token prompt or the error shows on the page's own requests.
  }
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
if (!location.hash) history.replaceState(null, '', `${location.search}#/memories`);
if (new URLSearchParams(location.search).has('project')) void projectFromUrl();
else void route();
