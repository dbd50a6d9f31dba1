import { describe, expect, it } from 'vitest';
import { runSyncScenario, type ScenarioSummary, type Transport } from '../support/sync-scenario.js';

/**
 * The randomized sync test: three machines and one remote, seeded. By default two seeds, one
 * against a bare repository and one through `git daemon` on loopback; a soak runs more:
 *   ENGRAM_SYNC_SEEDS=1-200 ENGRAM_SYNC_OPERATIONS=120 npx vitest run test/sync/sync-random.test.ts
 * (a seed alone takes the transports in turn; `7:http` names one). A failure names its seed.
 */

const TRANSPORTS: Transport[] = ['bare', 'daemon', 'http'];
const DEFAULT_RUNS = '1:bare,4:daemon';

function runs(): Array<{ seed: number; transport: Transport }> {
  const out: Array<{ seed: number; transport: Transport }> = [];
  for (const part of (process.env.ENGRAM_SYNC_SEEDS ?? DEFAULT_RUNS).split(',')) {
    const [range, named] = part.trim().split(':');
    const [from, to] = range!.split('-').map(Number);
    for (let seed = from!; seed <= (to ?? from!); seed += 1) {
      const transport = (named as Transport | undefined) ?? TRANSPORTS[seed % TRANSPORTS.length]!;
      if (!TRANSPORTS.includes(transport)) throw new Error(`Unknown transport ${named}: use ${TRANSPORTS.join(', ')}.`);
      out.push({ seed, transport });
    }
  }
  return out;
}

const OPERATIONS = Number(process.env.ENGRAM_SYNC_OPERATIONS ?? 40);

describe('three machines, one remote, random writes and syncs (seeded)', () => {
  const summaries: ScenarioSummary[] = [];
  for (const { seed, transport } of runs())
    it(`seed ${seed} over ${transport}: every machine converges, nothing lost, duplicated or left of a purge, every conflict listed and resolved`, async () => {
      const summary = await runSyncScenario({ seed, transport, operations: OPERATIONS });
      summaries.push(summary);
      console.log(JSON.stringify(summary));
      expect(summary.syncs).toBeGreaterThan(0);
    }, 600_000);
});
