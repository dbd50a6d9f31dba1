import { describe, expect, it } from 'vitest';
import { normalizeNewMemory } from '../../src/memory/memory.js';
import { uniformTimes } from '../../src/sync/sync-fields.js';
import {
  checkFormat,
  encodeSegment,
  memoryPath,
  parseChangeSet,
  parseLayoutPath,
  parseSyncedMemory,
  parseTombstone,
  renderFormat,
  renderSyncedMemory,
  renderTombstone,
  scopeFolder,
  shardOf,
  tombstonePath,
} from '../../src/sync/sync-layout.js';
import { checkRemoteUrl, planRoutes, remoteKey, routeAccepts } from '../../src/sync/sync-routing.js';
import { resolve } from 'node:path';

const memory = normalizeNewMemory(
  { scope: 'project:github.com/acme/app', content: 'Integration tests use the real database.', type: 'feedback' },
  { now: '2025-03-01T10:00:00.000Z', id: 'mem_layout' },
);

describe('sync layout', () => {
  it('every scope and id maps to one path and back, whatever characters the scope id holds', () => {
    const scopes = [
      'global',
      'user:alice',
      'project:github.com/acme/app',
      'project:%2Fhome%2Fme',
      'project:..',
      'project:a:b*c',
    ];
    for (const scope of scopes) {
      for (const id of ['mem_01abc', 'custom:id.with-dots', 'X']) {
        const path = memoryPath(scope, id);
        expect(path.split('/').every((segment) => segment !== '..' && segment !== '.' && segment !== '')).toBe(true);
        expect(path).not.toMatch(/[:*\\]/);
        expect(parseLayoutPath(path)).toEqual({ kind: 'memory', scope, id });
        expect(parseLayoutPath(tombstonePath(scope, id))).toEqual({ kind: 'tombstone', scope, id });
      }
    }
    expect(scopeFolder('project:github.com/acme/app')).toBe('project/github.com%2Facme%2Fapp');
    expect(() => scopeFolder('session:abc')).toThrow();
  });

  it('refuses paths outside the layout, with tricks, in another spelling, or in the wrong shard', () => {
    const good = memoryPath('user:alice', 'mem_1');
    const shard = shardOf('mem_1');
    const wrongShard = shard === '00' ? '01' : '00';
    for (const path of [
      '../etc/passwd',
      'memories/../../x.md',
      'memories/session/abc/00/mem_1.md',
      `memories/user/alice/${wrongShard}/mem_1.md`,
      `memories/user/ali%63e/${shard}/mem_1.md`, // a second spelling of "alice"
      `memories/user/%2E%2E/${shard}/mem_1.md`.replace('%2E%2E', '..'),
      `memories/user/alice/${shard}/mem_1.txt`,
      `memories/user/alice/${shard}/sub/mem_1.md`,
      `memories/global/${shardOf('bad id')}/bad id.md`,
      'change-sets/not-an-id.json',
      'notes.txt',
      good.replace('memories/', 'memories//'),
    ])
      expect(parseLayoutPath(path), path).toHaveProperty('rejected');
    expect(encodeSegment('.hidden')).toBe('%2Ehidden');
  });

  it('a memory file is the topic file form without recall counts, and reads back with its field times', () => {
    const edited = {
      ...memory,
      content: 'Integration tests use the real database, no mocks.',
      updatedAt: '2025-03-02T00:00:00.000Z',
    };
    const times = { ...uniformTimes(memory.createdAt), content: '2025-03-02T00:00:00.000Z' };
    const text = renderSyncedMemory({ memory: edited, fieldTimes: times });
    expect(text).toMatch(/^---\nname: /);
    expect(text).not.toMatch(/hitCount|lastAccessedAt/);
    expect(text).toContain('edited:');
    const back = parseSyncedMemory(text, { scope: memory.scope, id: memory.id });
    expect(back.memory).toEqual({ ...edited, hitCount: 0, lastAccessedAt: null });
    expect(back.fieldTimes).toEqual(times);
    // A file naming another memory or scope than its path, or missing its identity, is refused.
    expect(() => parseSyncedMemory(text, { scope: memory.scope, id: 'mem_other' })).toThrow(/another memory/);
    expect(() => parseSyncedMemory(text, { scope: 'global', id: memory.id })).toThrow();
    expect(() =>
      parseSyncedMemory('---\nname: x\ndescription: y\n---\n\nNo metadata.\n', { scope: 'global', id: 'x' }),
    ).toThrow(/metadata/);
    expect(() =>
      parseSyncedMemory(text.replace('edited:', 'edited:\n    owner: "2025-01-01T00:00:00.000Z"\n   x:'), {
        scope: memory.scope,
        id: memory.id,
      }),
    ).toThrow();
  });

  it('a tombstone holds id, scope, kind and time only; anything else is refused', () => {
    const tombstone = { id: 'mem_1', scope: 'global', kind: 'purge' as const, at: '2025-01-01T00:00:00.000Z' };
    expect(parseTombstone(renderTombstone(tombstone), { scope: 'global', id: 'mem_1' })).toEqual(tombstone);
    for (const text of [
      JSON.stringify({ ...tombstone, content: 'the purged text' }),
      JSON.stringify({ ...tombstone, id: 'mem_2' }),
      JSON.stringify({ ...tombstone, kind: 'archive' }),
      'not json',
      `{"id":"${'x'.repeat(70_000)}"}`,
    ])
      expect(() => parseTombstone(text, { scope: 'global', id: 'mem_1' })).toThrow();
    expect(() =>
      parseChangeSet(JSON.stringify({ id: 'cs_x', actor: 'dream', stampedAt: 'now', memories: [] }), 'cs_x'),
    ).toThrow();
  });

  it('a newer format or a foreign format file is refused before anything is written', () => {
    expect(() => checkFormat(renderFormat())).not.toThrow();
    expect(() => checkFormat(undefined)).not.toThrow();
    expect(() => checkFormat('{"format":"engram-sync","version":99}')).toThrow(/Upgrade engram/);
    expect(() => checkFormat('{"format":"other"}')).toThrow();
  });
});

describe('routing and remote URLs', () => {
  it('personal scopes to the personal remote, a project to its team remote, sessions nowhere', () => {
    const routes = planRoutes({
      personal: 'git@github.com:me/memories.git',
      projects: {
        'project:team-app': 'https://git.example.com/team/memories.git',
        'project:solo': 'ssh://git@github.com/me/memories',
      },
      includeProjects: true,
    });
    const [personal, team] = routes as [any, any];
    expect(routes).toHaveLength(2);
    for (const scope of ['global', 'user:alice', 'project:other', 'project:solo'])
      expect(routeAccepts(personal, scope), scope).toBe(true);
    for (const scope of ['project:team-app', 'session:abc']) expect(routeAccepts(personal, scope), scope).toBe(false);
    expect(routeAccepts(team, 'project:team-app')).toBe(true);
    for (const scope of ['global', 'user:alice', 'project:other', 'session:abc'])
      expect(routeAccepts(team, scope), scope).toBe(false);
    // The same repository by ssh and by https is one remote.
    expect(remoteKey('git@github.com:Me/Memories.git')).toBe(remoteKey('https://github.com/me/memories'));
    const noProjects = planRoutes({ personal: '/srv/m.git', projects: {}, includeProjects: false })[0]!;
    expect(routeAccepts(noProjects, 'project:x')).toBe(false);
  });

  it('a remote with a password, a remote helper, or an option is refused; a path is made absolute', () => {
    const check = (url: string): string => checkRemoteUrl(url, '/work', resolve);
    expect(check('git@github.com:me/memories.git')).toBe('git@github.com:me/memories.git');
    expect(check('https://git@github.com/me/m.git')).toBe('https://git@github.com/me/m.git');
    expect(check('../shared/memories.git')).toBe('/shared/memories.git');
    for (const url of [
      'https://me:ghp_secret@github.com/me/m.git',
      'ext::sh -c touch% /tmp/pwned',
      '--upload-pack=touch /tmp/pwned',
      'fd::17',
      'gopher://x/y',
      'https://x/\u0000y',
      '',
    ])
      expect(() => check(url), url).toThrow();
  });
});
