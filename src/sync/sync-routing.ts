import { createHash } from 'node:crypto';
import { EngramError } from '../kernel/errors.js';
import { normalizeGitRemote } from '../kernel/git-remote.js';
import { parseScope, type Scope } from '../memory/scope.js';

/**
 * Which memories go to which remote. Personal scopes (`global`, `user:…`) go to the personal remote;
 * a project's scope goes to the remote its team chose (its `.engram.json`), else, unless turned
 * off, to the personal remote too; `session:` scopes never leave the machine.
 */

/** One remote and the scopes this machine syncs through it. */
export interface SyncRoute {
  url: string;
  /** Names the remote in checkpoints, locks and the cache folder (stable across URL spellings). */
  key: string;
  kind: 'personal' | 'team';
  /** Team: the projects whose team chose this remote. Personal: the projects that went elsewhere. */
  projects: Scope[];
  /** Personal: whether projects without a team remote come along. */
  includeProjects: boolean;
}

/** Whether a route carries a scope. */
export function routeAccepts(route: SyncRoute, scope: Scope): boolean {
  let kind: string;
  try {
    kind = parseScope(scope).kind;
  } catch {
    return false;
  }
  if (kind === 'session') return false;
  if (route.kind === 'team') return route.projects.includes(scope);
  if (kind === 'global' || kind === 'user') return true;
  return route.includeProjects && !route.projects.includes(scope);
}

/** What a route carries, in words. */
export function describeRoute(route: SyncRoute): string {
  if (route.kind === 'team') return route.projects.join(', ');
  return route.includeProjects
    ? `global, user:*, project:* without a team remote${route.projects.length > 0 ? ` (not ${route.projects.join(', ')})` : ''}`
    : 'global, user:*';
}

/**
 * The routes for a personal remote and the team remotes of projects (scope → URL): team remotes
 * that share a URL are one route; a project whose team remote is the personal one stays personal.
 */
export function planRoutes(input: {
  personal?: string;
  projects: Readonly<Record<Scope, string>>;
  includeProjects: boolean;
}): SyncRoute[] {
  const routes: SyncRoute[] = [];
  const personalKey = input.personal === undefined ? undefined : remoteKey(input.personal);
  const teams = new Map<string, SyncRoute>();
  const elsewhere: Scope[] = [];
  for (const [scope, url] of Object.entries(input.projects).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const key = remoteKey(url);
    if (key === personalKey) continue;
    elsewhere.push(scope);
    const route = teams.get(key) ?? { url, key, kind: 'team' as const, projects: [], includeProjects: false };
    route.projects.push(scope);
    teams.set(key, route);
  }
  if (input.personal !== undefined)
    routes.push({
      url: input.personal,
      key: personalKey!,
      kind: 'personal',
      projects: elsewhere,
      includeProjects: input.includeProjects,
    });
  routes.push(...teams.values());
  return routes;
}

/** A short stable name of a remote: the same repository reached by ssh or https is one remote. */
export function remoteKey(url: string): string {
  const normalized = normalizeGitRemote(url)?.toLowerCase() ?? url.replace(/^file:\/\//, '').replace(/\/+$/, '');
  return createHash('sha256').update(normalized).digest('hex').slice(0, 16);
}

const MAX_URL_LENGTH = 2_048;
// git's own forms: a URL with a scheme, scp-like `user@host:path`, or a path.
const SCHEMES = new Set(['https', 'http', 'ssh', 'git', 'file']);

/**
 * Checks a remote as the user or a project named it. git reaches it with the user's own
 * credentials; engram stores none, so a password in the URL is refused. A remote helper
 * (`ext::…`, which runs a command) and anything git could take for an option are refused too.
 * Returns the URL, or for a path, the path made absolute against `baseDirectory`.
 */
export function checkRemoteUrl(
  value: unknown,
  baseDirectory: string,
  resolvePath: (base: string, path: string) => string,
): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new EngramError(
      'INVALID_INPUT',
      'A sync remote is a git URL or a path, e.g. git@github.com:me/memories.git.',
    );
  const url = value.trim();
  const shown = JSON.stringify(url.slice(0, 120));
  if (url.length > MAX_URL_LENGTH)
    throw new EngramError('INVALID_INPUT', `The sync remote is longer than ${MAX_URL_LENGTH} characters.`);
  if (/[\u0000-\u001F\u007F]/.test(url))
    throw new EngramError('INVALID_INPUT', `The sync remote ${shown} holds control characters.`);
  if (url.startsWith('-'))
    throw new EngramError('INVALID_INPUT', `The sync remote ${shown} starts with "-": not a URL or a path.`);
  if (url.includes('::'))
    throw new EngramError(
      'INVALID_INPUT',
      `The sync remote ${shown} names a git remote helper; use an https, ssh or file URL, or a path.`,
    );
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme) {
    const protocol = scheme[1]!.toLowerCase();
    if (!SCHEMES.has(protocol))
      throw new EngramError(
        'INVALID_INPUT',
        `The sync remote ${shown} uses ${protocol}://; use https, http, ssh, git or file.`,
      );
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new EngramError('INVALID_INPUT', `The sync remote ${shown} is not a valid URL.`);
    }
    if (parsed.password !== '')
      throw new EngramError(
        'INVALID_INPUT',
        'The sync remote holds a password: engram stores no credentials. Give the URL without it and let git ask its credential helper (git config credential.helper), or use ssh.',
      );
    return url;
  }
  if (/^[^/\\]+:/.test(url) && !/^[A-Za-z]:[\\/]/.test(url)) return url; // scp-like user@host:path
  return resolvePath(baseDirectory, url);
}

/** A remote's URL as shown to people: a user name kept, anything like a token dropped. */
export function displayRemote(url: string): string {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (!scheme) return url;
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}
