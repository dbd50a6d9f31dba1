/**
 * Normalizes a git remote URL to a stable project id, the same on every machine and for every
 * clone protocol: `git@github.com:Acme/App.git`, `https://user:pw@github.com/Acme/App` and
 * `ssh://git@github.com:22/Acme/App.git` all become `github.com/Acme/App`.
 * Returns undefined for something that is not a remote URL (for example a local path).
 */
export function normalizeGitRemote(url: string): string | undefined {
  const trimmed = url.trim();
  if (trimmed.length === 0) return undefined;
  let host: string;
  let path: string;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(trimmed);
  if (scheme) {
    const protocol = scheme[1]!.toLowerCase();
    if (protocol === 'file') return undefined;
    const rest = scheme[2]!;
    const slash = rest.indexOf('/');
    const authority = slash === -1 ? rest : rest.slice(0, slash);
    path = slash === -1 ? '' : rest.slice(slash + 1);
    host = authority.slice(authority.lastIndexOf('@') + 1).replace(/:\d*$/, '');
  } else {
    // scp-like syntax: [user@]host:path (a colon before any slash).
    const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.+)$/.exec(trimmed);
    if (!scp) return undefined;
    host = scp[1]!;
    path = scp[2]!;
  }
  host = host.toLowerCase().replace(/^\[|\]$/g, '');
  path = path
    .replace(/[?#].*$/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/i, '')
    .replace(/^\/+|\/+$/g, '')
    .replace(/^~[^/]*\//, '');
  if (host.length === 0 || path.length === 0) return undefined;
  return `${host}/${path}`;
}
