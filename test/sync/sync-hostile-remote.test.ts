import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryPath, shardOf, tombstonePath } from '../../src/sync/sync-layout.js';
import type { Memory } from '../../src/memory/memory.js';
import { SYNC_TEST_TIMEOUT, useSyncWorlds, type Machine } from '../support/sync-machines.js';

const worlds = useSyncWorlds();

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'mallory',
      GIT_AUTHOR_EMAIL: 'm@x',
      GIT_COMMITTER_NAME: 'mallory',
      GIT_COMMITTER_EMAIL: 'm@x',
    },
  }).toString();
}

/** Pushes a commit made by hand (someone else's tool, or an attacker) on top of the remote's branch. */
function hostileCommit(remote: string, work: string, change: (tree: string) => void): void {
  git(dirname(work), 'clone', '--quiet', '--branch', 'engram', remote, work);
  change(work);
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', 'hand edit');
  git(work, 'push', '--quiet', 'origin', 'engram');
}

function write(root: string, path: string, content: string | Buffer): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
}

async function everything(machine: Machine): Promise<Memory[]> {
  return machine.with((opened) =>
    opened.engram.store.list({
      scopes: ['global', 'project:demo', 'user:alice'],
      archived: 'include',
      invalid: 'include',
      order: 'created-asc',
    }),
  );
}

function synced(report: Awaited<ReturnType<Machine['sync']>>) {
  const outcome = report.remotes[0]!;
  if (outcome.status !== 'synced') throw new Error(`not synced: ${JSON.stringify(outcome)}`);
  return outcome.report;
}

describe('a hostile or corrupt remote', () => {
  it(
    'changes nothing it should not, and says why for each file',
    async () => {
      const world = worlds.make(1);
      const [a] = world.machines as [Machine];
      const synced1 = await a.with((opened) => opened.engram.remember({ content: 'The build runs on Node 22.' }));
      await a.sync();
      // Written here after the sync: the remote never held it.
      const unseen = await a.with((opened) =>
        opened.engram.remember({ content: 'The release manager this month is Dana.' }),
      );
      const elsewhere = await a.with((opened) =>
        opened.engram.remember({ content: 'The user reads email at 9.', scope: 'user:alice' }),
      );
      const before = await everything(a);
      const valid = (id: string, scope: string, content: string): string =>
        [
          '---',
          `name: ${id.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
          'description: planted',
          'metadata:',
          '  type: project',
          `  id: ${id}`,
          `  scope: ${scope}`,
          '  createdAt: "2025-01-01T00:00:00.000Z"',
          '  updatedAt: "2025-01-01T00:00:00.000Z"',
          '---',
          '',
          content,
          '',
        ].join('\n');
      const expectedRejected: string[] = [];
      hostileCommit(world.remote, join(world.root, 'mallory'), (tree) => {
        // Tombstones for memories the remote never held: a purge and a delete.
        write(
          tree,
          tombstonePath('project:demo', unseen.id),
          JSON.stringify({ id: unseen.id, scope: 'project:demo', kind: 'purge', at: '2025-01-01T00:00:00.000Z' }),
        );
        // A tombstone that smuggles text.
        const stone = tombstonePath('project:demo', synced1.id);
        write(
          tree,
          stone,
          JSON.stringify({
            id: synced1.id,
            scope: 'project:demo',
            kind: 'delete',
            at: '2025-01-01T00:00:00.000Z',
            content: 'leak',
          }),
        );
        expectedRejected.push(stone);
        // A file that names another memory than its path; broken YAML; a YAML alias bomb; non-UTF-8 bytes.
        const liar = memoryPath('project:demo', 'mem_liar');
        write(tree, liar, valid('mem_other', 'project:demo', 'I claim another id.'));
        const broken = memoryPath('project:demo', 'mem_broken');
        write(tree, broken, '---\nname: [unclosed\n---\n\nBody.\n');
        const bomb = memoryPath('project:demo', 'mem_bomb');
        write(
          tree,
          bomb,
          `---\na: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n---\n\nBody.\n`,
        );
        const binary = memoryPath('project:demo', 'mem_binary');
        write(tree, binary, Buffer.from([0xff, 0xfe, 0x00, 0x41, 0xc3, 0x28]));
        // Huge: over sync.maxFileBytes, never read whole.
        const huge = memoryPath('project:demo', 'mem_huge');
        write(tree, huge, valid('mem_huge', 'project:demo', 'x'.repeat(3 * 1024 * 1024)));
        // A symlink where a memory file goes.
        const link = memoryPath('project:demo', 'mem_link');
        mkdirSync(dirname(join(tree, link)), { recursive: true });
        symlinkSync('/etc/passwd', join(tree, link));
        // The id of a memory this machine holds in another scope.
        const stolen = memoryPath('project:demo', elsewhere.id);
        write(tree, stolen, valid(elsewhere.id, 'project:demo', 'Moved into the project, says the remote.'));
        // Paths outside the layout: a session scope, a second spelling of a scope, a file name that is not UTF-8.
        const session = `memories/session/abc/${shardOf('mem_s')}/mem_s.md`;
        write(tree, session, valid('mem_s', 'session:abc', 'Session.'));
        const spelled = `memories/project/dem%6F/${shardOf('mem_spelled')}/mem_spelled.md`;
        write(tree, spelled, valid('mem_spelled', 'project:demo', 'Spelled.'));
        mkdirSync(join(tree, 'memories/global/aa'), { recursive: true });
        writeFileSync(Buffer.from(join(tree, 'memories/global/aa/').concat('\xff\xfe.md'), 'latin1'), 'x');
        expectedRejected.push(liar, broken, bomb, binary, huge, link, stolen, session, spelled);
        // A valid memory with a secret in it: imported, with the secret redacted by the privacy layer.
        write(
          tree,
          memoryPath('project:demo', 'mem_planted'),
          valid('mem_planted', 'project:demo', `The token is AKIA${'Z'.repeat(16)}.`),
        );
      });
      const report = synced(await a.sync());
      const rejected = new Map(report.rejected.map((problem) => [problem.subject, problem.reason]));
      for (const path of expectedRejected) expect(rejected.get(path), path).toMatch(/\S/);
      expect([...rejected.keys()].some((subject) => subject.startsWith('<not UTF-8'))).toBe(true);
      expect(rejected.get(memoryPath('project:demo', 'mem_huge'))).toMatch(/bytes/);
      expect(rejected.get(memoryPath('project:demo', 'mem_link'))).toMatch(/symlink/);
      expect(report.heldBack).toEqual([{ subject: unseen.id, reason: expect.stringContaining('never held') }]);

      // Nothing of this machine's changed; only the valid planted memory came in, redacted.
      const after = await everything(a);
      const planted = after.find((memory) => memory.id === 'mem_planted');
      expect(planted?.content).toMatch(/\[REDACTED:aws-access-key-id\]/);
      expect(after.filter((memory) => memory.id !== 'mem_planted')).toEqual(before);
      // The text a tombstone tried to smuggle reached nothing, and the memory it named stays.
      expect(after.find((memory) => memory.id === synced1.id)?.content).toBe(synced1.content);
      const status = await a.with((opened) =>
        import('../../src/sync/node/sync-store.js').then(({ syncStatus }) => syncStatus({ opened })),
      );
      expect(status.remotes[0]!.rejectedCount).toBeGreaterThanOrEqual(expectedRejected.length);
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'a remote in a newer format is refused before anything is written, and says to upgrade',
    async () => {
      const world = worlds.make(1);
      const [a] = world.machines as [Machine];
      await a.with((opened) => opened.engram.remember({ content: 'The build runs on Node 22.' }));
      await a.sync();
      const head = git(world.root, '--git-dir', world.remote, 'rev-parse', 'engram').trim();
      hostileCommit(world.remote, join(world.root, 'newer'), (tree) =>
        write(tree, 'engram-sync.json', '{"format":"engram-sync","version":7}'),
      );
      const tip = git(world.root, '--git-dir', world.remote, 'rev-parse', 'engram').trim();
      await a.with((opened) => opened.engram.remember({ content: 'Written while the remote is newer.' }));
      const report = await a.sync();
      expect(report.remotes[0]).toMatchObject({
        status: 'failed',
        error: { code: 'REMOTE_INVALID', message: expect.stringMatching(/Upgrade engram/) },
      });
      expect(git(world.root, '--git-dir', world.remote, 'rev-parse', 'engram').trim()).toBe(tip);
      expect(tip).not.toBe(head);
    },
    SYNC_TEST_TIMEOUT,
  );
});
