import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/node/load-settings.js';
import { parseStoreUrl } from '../../src/node/open-store.js';
import { EngramError } from '../../src/kernel/errors.js';
import { expectEngramErrorSync } from '../support/expect-engram-error.js';
import { useProjectFolders } from '../support/project-folders.js';

const workspace = useProjectFolders('engram-settings-');

const configError = (load: () => unknown): EngramError => expectEngramErrorSync(load, 'CONFIG_INVALID');

describe('loadSettings', () => {
  it('layers defaults, user file, project file, environment and flags, each over the one before', () => {
    const { home, project } = workspace();
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ recall: { topK: 7, minScore: 0.1 }, server: { port: 8001 } }),
    );
    writeFileSync(join(project, '.engram.json'), JSON.stringify({ recall: { topK: 8 }, project: { id: 'acme-app' } }));
    const loaded = loadSettings({
      cwd: project,
      env: { ENGRAM_HOME: home, ENGRAM_TOP_K: '9' },
      flags: { 'server.port': '8003' },
    });
    expect(loaded.settings.recall).toMatchObject({ topK: 9, minScore: 0.1 });
    expect(loaded.settings.server.port).toBe(8003);
    expect(loaded.sources['recall.topK']).toEqual({ kind: 'env', origin: 'ENGRAM_TOP_K' });
    expect(loaded.sources['recall.minScore']).toEqual({ kind: 'user-config', origin: join(home, 'config.json') });
    expect(loaded.sources['project.id']).toMatchObject({ kind: 'project-config' });
    expect(loaded.sources['server.port']).toEqual({ kind: 'flag' });
    expect(loaded.project).toMatchObject({ id: 'acme-app', scope: 'project:acme-app', source: 'explicit' });
    expect(loaded.settings.store.url).toBe(join(home, 'engram.db'));
    expect(Object.isFrozen(loaded.settings.recall)).toBe(true);
  });

  it('refuses unknown settings, wrong types and values out of range, naming where they came from', () => {
    const { home, project } = workspace();
    const env = { ENGRAM_HOME: home };
    expect(configError(() => loadSettings({ cwd: project, env: { ...env, ENGRAM_MIN_SCORE: '7' } })).message).toMatch(
      /ENGRAM_MIN_SCORE.*0 to 1/,
    );
    expect(configError(() => loadSettings({ cwd: project, env, flags: { 'server.port': '99999' } })).message).toMatch(
      /65535/,
    );
    expect(configError(() => loadSettings({ cwd: project, env, flags: { 'recall.topK': '2.5' } })).message).toMatch(
      /whole number/,
    );
    expect(configError(() => loadSettings({ cwd: project, env: { ...env, ENGRAM_TOP_K: 'many' } })).message).toMatch(
      /not a non-negative number/,
    );
    expect(configError(() => loadSettings({ cwd: project, env, flags: { 'recall.topk': 3 } })).message).toMatch(
      /Unknown setting "recall.topk"/,
    );
    writeFileSync(join(project, '.engram.json'), '{"recall": {"topK": 5,}');
    expect(configError(() => loadSettings({ cwd: project, env })).message).toContain('.engram.json');
    writeFileSync(join(project, '.engram.json'), JSON.stringify({ server: { host: 42 } }));
    expect(configError(() => loadSettings({ cwd: project, env })).message).toMatch(/server.host.*string/);
    writeFileSync(join(project, '.engram.json'), '[1, 2]');
    expect(configError(() => loadSettings({ cwd: project, env })).message).toMatch(/JSON object/);
    writeFileSync(join(project, '.engram.json'), JSON.stringify({ session: { serverContextEditing: 'yes' } }));
    expect(configError(() => loadSettings({ cwd: project, env })).message).toMatch(
      /serverContextEditing.*not true or false/,
    );
    writeFileSync(join(project, '.engram.json'), JSON.stringify({ session: { serverContextEditing: true } }));
    expect(loadSettings({ cwd: project, env }).settings.session.serverContextEditing).toBe(true);
    expect(
      loadSettings({ cwd: project, env, flags: { 'session.serverContextEditing': 'false' } }).settings.session
        .serverContextEditing,
    ).toBe(false);
  });
});

describe('parseStoreUrl', () => {
  it('reads paths, sqlite:// and file: URLs, and refuses malformed ones with CONFIG_INVALID', () => {
    expect(parseStoreUrl('/tmp/a.db')).toEqual({ backend: 'sqlite', path: '/tmp/a.db' });
    expect(parseStoreUrl('sqlite:///tmp/b%20c.db')).toEqual({ backend: 'sqlite', path: '/tmp/b c.db' });
    expect(parseStoreUrl('file:///tmp/d.db')).toEqual({ backend: 'sqlite', path: '/tmp/d.db' });
    expect(parseStoreUrl('postgres://user@host/db')).toEqual({ backend: 'postgres', url: 'postgres://user@host/db' });
    for (const url of ['sqlite://%zz', 'file://remotehost/x.db', 'mysql://host/db', '']) {
      configError(() => parseStoreUrl(url));
    }
  });
});
