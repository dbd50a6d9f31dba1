// The one way the page talks to the service: same origin, JSON, the token (when the service has one)
// in the Authorization header from sessionStorage — never in a URL.

const TOKEN_KEY = 'engram.token';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function savedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function saveToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (private mode): the token lives only as long as this page.
  }
  memoryToken = token;
}

let memoryToken = '';

/** Sends one request to the service and returns its JSON body; a failure throws ApiError with the service's code. */
const VIEW_KEY = 'engram.viewer.scopes';
// Routes that read scopes from the query (scopedQuery and the like) or the body (`scopes`).
const SCOPED_QUERY = /^\/v1\/(memories|stats|change-sets)(\/|$)/;
const SCOPED_BODY = new Set(['/v1/recall', '/v1/context', '/v1/undo']);

/** The scopes the viewer shows when the person picked a project other than the service's (this tab only); else null. */
export function viewScopes() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(VIEW_KEY) ?? 'null');
    return Array.isArray(saved) && saved.length > 0 ? saved : null;
  } catch {
    return null;
  }
}

export function setViewScopes(scopes) {
  if (scopes && scopes.length > 0) sessionStorage.setItem(VIEW_KEY, JSON.stringify(scopes));
  else sessionStorage.removeItem(VIEW_KEY);
}

/** The request with the picked project's scopes, where the route takes scopes and the caller named none. */
function scoped(method, path, body) {
  const scopes = viewScopes();
  if (!scopes) return { path, body };
  const [pathname, search = ''] = path.split('?');
  if (SCOPED_QUERY.test(pathname) && !(method === 'POST' && pathname === '/v1/memories')) {
    const parameters = new URLSearchParams(search);
    if (!parameters.has('scope')) parameters.set('scope', scopes.join(','));
    return { path: `${pathname}?${parameters}`, body };
  }
  if (method === 'POST' && SCOPED_BODY.has(pathname) && body && typeof body === 'object' && !('scopes' in body))
    return { path, body: { ...body, scopes } };
  return { path, body };
}

export async function api(method, requested, requestBody) {
  const { path, body } = scoped(method, requested, requestBody);
  const headers = { accept: 'application/json' };
  const token = savedToken() || memoryToken;
  if (token) headers.authorization = `Bearer ${token}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(
      0,
      'NETWORK',
      `The engram service did not answer (${error.message}). Is "engram serve" running?`,
    );
  }
  const text = await response.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = parsed?.error;
    throw new ApiError(
      response.status,
      error?.code ?? 'HTTP',
      error?.message ?? `The service answered ${response.status}.`,
    );
  }
  return parsed;
}

/** A query string from an object, leaving out empty values. */
export function query(parameters) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(parameters)) {
    if (value === undefined || value === null || value === '' || value === false) continue;
    search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
