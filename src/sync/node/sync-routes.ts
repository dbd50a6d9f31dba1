import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import type { OpenedEngram } from '../../node/open-engram.js';
import { PROJECT_CONFIG_FILE } from '../../node/project-identity.js';
import { checkRemoteUrl, displayRemote, planRoutes, type SyncRoute } from '../sync-routing.js';
import { acceptProjectRemote, readProjectRemotes } from '../sync-state.js';

/**
 * Where this machine's remotes come from: the personal remote from the user's own settings (never
 * from a project's `.engram.json`, which a cloned repository controls), team remotes from projects'
 * `.engram.json` once a person ran `engram sync` in the project (background sync never starts
 * sending a project's memories somewhere on its own), and the cache folder of each.
 */

export interface ResolvedRoutes {
  routes: SyncRoute[];
  notices: string[];
}

export async function resolveRoutes(
  opened: OpenedEngram,
  options: { acceptProjectRemote: boolean; cwd: string; now: () => Date },
): Promise<ResolvedRoutes> {
  const { settings, sources, project } = opened.loaded;
  const store = opened.engram.store;
  const notices: string[] = [];
  let personal: string | undefined;
  if (settings.sync.remote !== '') {
    const source = sources['sync.remote'];
    if (source?.kind === 'project-config') {
      notices.push(
        `Ignored sync.remote in ${source.origin}: a project's .engram.json cannot choose where personal memories go (it may name sync.projectRemote for its own).`,
      );
      // The user's own choice, which the project's file overrode in the settings' layers.
      const own = userConfigRemote(opened.loaded.home);
      if (own !== undefined) personal = checkRemoteUrl(own, opened.loaded.home, resolve);
    } else personal = checkRemoteUrl(settings.sync.remote, baseOf(source?.origin, options.cwd), resolve);
  }
  const projects = await readProjectRemotes(store);
  const pending: string[] = [];
  if (settings.sync.projectRemote !== '' && project.scope.startsWith('project:')) {
    const url = checkRemoteUrl(
      settings.sync.projectRemote,
      baseOf(sources['sync.projectRemote']?.origin, options.cwd),
      resolve,
    );
    if (options.acceptProjectRemote) {
      if (projects[project.scope] !== url) {
        const { previous } = await acceptProjectRemote(store, project.scope, url, options.now().toISOString());
        notices.push(
          `${project.scope} now syncs through ${displayRemote(url)}${previous ? ` (was ${displayRemote(previous)})` : ''}, the team remote its .engram.json names.`,
        );
        projects[project.scope] = url;
      }
    } else if (projects[project.scope] !== url) {
      notices.push(
        `This project's .engram.json names the team remote ${displayRemote(url)}: run "engram sync" in the project to start syncing with it.`,
      );
      // Its team chose another remote: until a person accepts it, the project goes nowhere.
      if (projects[project.scope] === undefined) pending.push(project.scope);
    }
  }
  const routes = planRoutes({
    ...(personal !== undefined && { personal }),
    projects,
    includeProjects: settings.sync.projectsToPersonal,
  });
  for (const route of routes) if (route.kind === 'personal') route.projects.push(...pending);
  return { routes, notices };
}

function userConfigRemote(home: string): string | undefined {
  try {
    const sync = readJsonObject(join(home, 'config.json')).sync as Record<string, unknown> | undefined;
    return typeof sync?.remote === 'string' && sync.remote !== '' ? sync.remote : undefined;
  } catch {
    return undefined;
  }
}

/** A relative path in a config file is relative to that file's folder; elsewhere to the working directory. */
function baseOf(origin: string | undefined, cwd: string): string {
  return origin !== undefined && origin.endsWith('.json') ? dirname(origin) : cwd;
}

/** The cache of a remote for this store: `<home>/sync/<remote>-<store>.git`. */
export function cacheDirectory(home: string, storeUrl: string, route: SyncRoute): string {
  const store = createHash('sha256').update(storeUrl).digest('hex').slice(0, 12);
  return join(home, 'sync', `${route.key}-${store}.git`);
}

/** Sets the personal remote in `<home>/config.json` (checked first; a path made absolute). */
export async function setPersonalRemote(home: string, url: string, cwd: string): Promise<string> {
  const checked = checkRemoteUrl(url, cwd, resolve);
  const file = join(home, 'config.json');
  const config = readJsonObject(file);
  const sync =
    typeof config.sync === 'object' && config.sync !== null && !Array.isArray(config.sync) ? config.sync : {};
  config.sync = { ...(sync as Record<string, unknown>), remote: checked };
  await writeFileAtomically(file, `${JSON.stringify(config, null, 2)}\n`, 'CONFIG_INVALID');
  return checked;
}

/** Names a project's team remote in its `.engram.json` at the project's root (to commit with the code). */
export function setProjectRemote(projectRoot: string, url: string): { file: string; url: string } {
  // A team shares the file: a path would mean something else on each machine, so only URLs.
  const checked = checkRemoteUrl(url, projectRoot, (_base, path) => {
    throw new EngramError(
      'INVALID_INPUT',
      `A team remote is a URL every teammate can reach (https, ssh or git@host:path), not a path (${JSON.stringify(path.slice(0, 80))}).`,
    );
  });
  const file = join(projectRoot, PROJECT_CONFIG_FILE);
  const config = readJsonObject(file);
  const sync =
    typeof config.sync === 'object' && config.sync !== null && !Array.isArray(config.sync) ? config.sync : {};
  config.sync = { ...(sync as Record<string, unknown>), projectRemote: checked };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o644 });
  return { file, url: checked };
}

function readJsonObject(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new EngramError('CONFIG_INVALID', `${file} is not valid JSON (${(error as Error).message}); fix it first.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new EngramError('CONFIG_INVALID', `${file} must hold a JSON object.`);
  return value as Record<string, unknown>;
}
