import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engram } from '../../src/engram.js';
import type { Memory, NewMemory } from '../../src/memory/memory.js';
import { demoteNearDuplicates, newerBeforeOlder } from '../../src/recall/recall-diversity.js';
import { rankByRelevance } from '../../src/recall/ranking.js';
import { recallResultJson } from '../../src/recall/recall-result-json.js';
import { formatRankedMemory } from '../../src/surfaces/mcp/memory-mcp-format.js';
import { createWorkspace, ENGRAM_BINARY, type Workspace } from '../support/cli-harness.js';
import { recallHit } from '../support/memory-record.js';
import { useTemporaryStore } from '../support/temporary-store.js';

// Issue 26 item 4: recall's near-copy suppression took two memories that disagree for one, and hid
// the newer. Near-copies are only what says the same thing (the comparison dedupe and the dream
// share); of two that disagree the newer surfaces first and the older follows, marked.

const MARCH_2 = '2026-03-02T09:00:00.000Z';
const MARCH_9 = '2026-03-09T09:00:00.000Z';
const MARCH_10 = '2026-03-10T12:00:00.000Z';
const SCOPE = 'project:disagree';

function hit(id: string, content: string, relevance: number, createdAt: string): { memory: Memory; relevance: number } {
  return recallHit(relevance, { id, scope: SCOPE, name: 'note', description: 'a note', content, createdAt });
}

// Older first; each pair overlaps by at least 0.8 of its index tokens, so diversity compares them.
const DISAGREEING: Array<[string, string, string]> = [
  [
    'The user prefers tabs over spaces in every Python file.',
    'The user prefers spaces over tabs in every Python file.',
    'word order',
  ],
  [
    'The nightly build of the mobile app uses Docker for every service it tests.',
    'The nightly build of the mobile app does not use Docker for every service it tests.',
    'negation',
  ],
  [
    'The staging cluster in eu-west-1 runs 3 replicas and 5 workers for the queue.',
    'The staging cluster in eu-west-1 runs 5 replicas and 3 workers for the queue.',
    'swapped numbers',
  ],
  [
    'The staging database for the billing team runs PostgreSQL 15 on a dedicated host.',
    'The staging database for the billing team runs PostgreSQL 16 on a dedicated host.',
    'changed version',
  ],
  [
    'The weekly release of the billing service for the team goes out every Tuesday morning.',
    'The weekly release of the billing service for the team goes out every Thursday morning.',
    'another word for a value',
  ],
];

const DISTINCT: Array<[string, string, string]> = [
  [
    'Customer 4411 is on the enterprise plan with a dedicated support engineer.',
    'Customer 5822 is on the enterprise plan with a dedicated support engineer.',
    'different ids',
  ],
  [
    'Host web-01 serves the billing API behind the internal load balancer.',
    'Host web-02 serves the billing API behind the internal load balancer.',
    'different hosts',
  ],
  [
    'Alice reports to Bob on the platform team for the quarterly planning.',
    'Bob reports to Alice on the platform team for the quarterly planning.',
    'people swapped',
  ],
];

describe('diversity tells a near-copy from a disagreement', () => {
  it.each(DISAGREEING)('%j / %j (%s): both stay, the older marked with the newer', (older, newer) => {
    const hits = [
      hit('older', older, 5, MARCH_2),
      hit('newer', newer, 5, MARCH_9),
      hit('other', 'Lint runs in CI.', 1, MARCH_2),
    ];
    const result = demoteNearDuplicates(hits, 0.8);
    const byId = new Map(result.map((entry) => [entry.memory.id, entry]));
    expect(byId.get('older')).toMatchObject({ relevance: 5, disagrees: { newer: 'newer' } });
    expect(byId.get('older')!.disagrees!.similarity).toBeGreaterThanOrEqual(0.8);
    expect(byId.get('older')!.duplicate).toBeUndefined();
    expect(byId.get('newer')).toEqual(hits[1]);
    // Whichever came first in the hits, the older is the one marked.
    const reversed = demoteNearDuplicates([hits[1]!, hits[0]!, hits[2]!], 0.8);
    expect(reversed.find((entry) => entry.memory.id === 'older')!.disagrees?.newer).toBe('newer');
    expect(reversed.find((entry) => entry.memory.id === 'newer')!.disagrees).toBeUndefined();
  });

  it.each(DISTINCT)('%j / %j (%s): two facts keep their own places, unmarked', (a, b) => {
    const hits = [hit('a', a, 5, MARCH_2), hit('b', b, 4.9, MARCH_9)];
    expect(demoteNearDuplicates(hits, 0.8)).toEqual(hits);
  });

  it('still demotes a near-copy, and marks nothing when two that disagree were written at the same instant', () => {
    const copy = [
      hit('first', 'The staging database is refreshed every Sunday night.', 5, MARCH_2),
      hit('again', 'The staging database is refreshed every Sunday night!', 4.9, MARCH_9),
    ];
    expect(demoteNearDuplicates(copy, 0.8)[1]).toMatchObject({
      relevance: 0,
      duplicate: { of: 'first', similarity: 1 },
    });
    const together = [hit('a', DISAGREEING[0]![0], 5, MARCH_2), hit('b', DISAGREEING[0]![1], 4, MARCH_2)];
    expect(demoteNearDuplicates(together, 0.8)).toEqual(together);
  });

  it('puts the newer first after recency and importance, and the older after it', () => {
    const older = { ...hit('older', DISAGREEING[0]![0], 5, MARCH_2) };
    older.memory = { ...older.memory, importance: 1, lastAccessedAt: MARCH_10 };
    const newer = { ...hit('newer', DISAGREEING[0]![1], 5, MARCH_9) };
    newer.memory = { ...newer.memory, importance: 0.1 };
    const other = hit('other', 'Python files are formatted with black.', 4, MARCH_9);
    const hits = demoteNearDuplicates([older, newer, other], 0.8);
    const ranked = rankByRelevance(hits, { now: MARCH_10, recencyBase: 0.98, recencyFloor: 0.5 });
    expect(ranked[0]!.memory.id).toBe('older');
    const ordered = newerBeforeOlder(ranked, hits);
    // The newer takes the better score of the two; the older follows at most at half of it (overlap 1).
    expect(ordered.map((entry) => entry.memory.id)).toEqual(['newer', 'other', 'older']);
    expect(ordered[0]!.parts.score).toBe(ranked[0]!.parts.score);
    expect(ordered[2]!.parts.score).toBeCloseTo(ranked[0]!.parts.score / 2, 12);
    // Nothing marked, nothing moved.
    const plain = rankByRelevance([other, hit('x', 'Deploys go out on Fridays.', 2, MARCH_2)], {
      now: MARCH_10,
      recencyBase: 0.98,
    });
    expect(newerBeforeOlder(plain, [other])).toEqual(plain);
  });
});

describe('recall of two memories that disagree (SQLite)', () => {
  const sqlite = useTemporaryStore(Date.parse(MARCH_10));

  const engram = () => new Engram({ store: sqlite.store, readScopes: [SCOPE], now: () => new Date(MARCH_10) });
  const write = (content: string, createdAt: string, extra: Partial<NewMemory> = {}): NewMemory => ({
    scope: SCOPE,
    content,
    createdAt,
    ...extra,
  });

  it('shows the newer of "tabs over spaces" (March 2) and "spaces over tabs" (March 9) first, the older marked', async () => {
    const [older, newer] = await sqlite.store.createMany(
      [
        write('The user prefers tabs over spaces.', MARCH_2),
        write('The user prefers spaces over tabs.', MARCH_9),
        write('Python files are formatted with black.', MARCH_2),
      ],
      { actor: 'test' },
    );
    const result = await engram().recall('tabs or spaces', { recordAccess: false });
    expect(result.memories.map((entry) => entry.memory.id)).toEqual([newer!.id, older!.id]);
    expect(result.memories[1]!.parts.signals?.disagrees).toMatchObject({ newer: newer!.id });
    expect(result.memories[0]!.parts.signals?.disagrees).toBeUndefined();
    const json = recallResultJson(result, MARCH_10);
    expect(json.memories[1]!.parts.signals?.disagrees?.newer).toBe(newer!.id);
    // The MCP search tool's answer says it too.
    expect(formatRankedMemory(result.memories[1]!, 2)).toContain(
      `older than \`${newer!.id}\`, which says otherwise: possibly superseded`,
    );
    expect(formatRankedMemory(result.memories[0]!, 1)).not.toContain('superseded');

    const only = await engram().recall('tabs or spaces', { recordAccess: false, topK: 1 });
    expect(only.memories.map((entry) => entry.memory.id)).toEqual([newer!.id]);

    const context = await engram().buildMemoryContext('tabs or spaces', { recordAccess: false });
    expect(context.included.map((entry) => entry.memory.id)).toEqual([newer!.id, older!.id]);
    const newerAt = context.block.indexOf(`<memory id="${newer!.id}"`);
    const olderTag = context.block.slice(context.block.indexOf(`<memory id="${older!.id}"`)).split('>')[0]!;
    expect(newerAt).toBeGreaterThan(-1);
    expect(context.block.indexOf(olderTag)).toBeGreaterThan(newerAt);
    expect(olderTag).toContain(`note="older than ${newer!.id}, which says otherwise: possibly superseded"`);
    expect(context.block.slice(newerAt).split('>')[0]).not.toContain('note=');
  });

  it('keeps the newer first when the older is more important and was recalled just now', async () => {
    const [older, newer] = await sqlite.store.createMany(
      [
        write('The deploy pipeline for the web app does run database migrations before the release.', MARCH_2, {
          importance: 1,
        }),
        write('The deploy pipeline for the web app does not run database migrations before the release.', MARCH_9, {
          importance: 0.1,
        }),
      ],
      { actor: 'test' },
    );
    await sqlite.store.recordAccess([older!.id], MARCH_10);
    const result = await engram().recall('does the deploy pipeline run database migrations?', {
      recordAccess: false,
      minScore: 0,
    });
    expect(result.memories.map((entry) => entry.memory.id)).toEqual([newer!.id, older!.id]);
    expect(result.memories[1]!.parts.signals?.disagrees?.newer).toBe(newer!.id);
  });

  it('shows two distinct facts each in its own place, neither marked', async () => {
    await sqlite.store.createMany(
      DISTINCT.slice(0, 2).flatMap(([a, b]) => [write(a, MARCH_2), write(b, MARCH_9)]),
      { actor: 'test' },
    );
    const result = await engram().recall(
      'which customers are on the enterprise plan with a dedicated support engineer?',
      {
        recordAccess: false,
      },
    );
    const top = result.memories.slice(0, 2);
    expect(top.map((entry) => entry.memory.content).sort()).toEqual([DISTINCT[0]![0], DISTINCT[0]![1]]);
    for (const entry of top) {
      expect(entry.parts.signals?.duplicate).toBeUndefined();
      expect(entry.parts.signals?.disagrees).toBeUndefined();
      expect(entry.parts.score).toBeGreaterThan(0.5);
    }
  });
});

describe('the CLI and the MCP server mark the older of two that disagree (real processes)', () => {
  let workspace: Workspace;
  let older: string;
  let newer: string;

  beforeAll(async () => {
    workspace = createWorkspace();
    const remember = async (text: string) => {
      const saved = await workspace.json(['remember', text]);
      return (saved.memory ?? saved).id as string;
    };
    older = await remember('The release train for the mobile app leaves every Tuesday.');
    // Written later (ids and createdAt are by the millisecond).
    await new Promise((resolve) => setTimeout(resolve, 20));
    newer = await remember('The release train for the mobile app leaves every Thursday.');
    await remember('Customer 4411 is on the enterprise plan.');
    await remember('Customer 5822 is on the enterprise plan.');
  });

  afterAll(() => workspace?.cleanup());

  it('engram recall shows the newer first and "older than #1" on the older, with its legend; --json names the newer', async () => {
    const human = await workspace.run(['recall', 'when', 'does', 'the', 'release', 'train', 'leave'], {
      env: { COLUMNS: '200' },
    });
    expect(human.code).toBe(0);
    const rows = human.stdout.split('\n').filter((line) => line.includes('mem_'));
    expect(rows[0]).toContain(newer);
    expect(rows[0]).not.toContain('older than');
    expect(rows[1]).toContain(older);
    expect(rows[1]).toMatch(/older than #1\s*$/);
    expect(human.stdout).toContain('older than #n: the memory in row n is newer and says otherwise');
    const json = await workspace.json(['recall', 'when', 'does', 'the', 'release', 'train', 'leave']);
    expect(json.memories.map((entry: { memory: { id: string } }) => entry.memory.id).slice(0, 2)).toEqual([
      newer,
      older,
    ]);
    expect(json.memories[1].parts.signals.disagrees.newer).toBe(newer);

    const customers = await workspace.run(['recall', 'customer', 'enterprise', 'plan'], { env: { COLUMNS: '200' } });
    expect(customers.stdout.match(/Customer|customer-/g)?.length ?? 0).toBeGreaterThan(0);
    expect(customers.stdout).not.toContain('older than');
  });

  it('memory_search over stdio says which newer memory the older one may be superseded by', async () => {
    const client = new Client({ name: 'engram-disagree-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [ENGRAM_BINARY, 'mcp'],
        cwd: workspace.cwd,
        env: { ...getDefaultEnvironment(), HOME: workspace.home, ENGRAM_HOME: workspace.home },
        stderr: 'pipe',
      }),
    );
    try {
      const result = (await client.callTool({
        name: 'memory_search',
        arguments: { query: 'when does the release train leave' },
      })) as CallToolResult;
      const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
      const newerAt = text.indexOf(newer);
      const olderAt = text.indexOf(older);
      expect(newerAt).toBeGreaterThan(-1);
      expect(olderAt).toBeGreaterThan(newerAt);
      expect(text.slice(olderAt)).toContain(`older than \`${newer}\`, which says otherwise: possibly superseded`);
      expect(text.slice(0, olderAt)).not.toContain('possibly superseded');
    } finally {
      await client.close();
    }
  });
});
