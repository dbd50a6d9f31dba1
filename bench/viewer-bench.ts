import { makeMemories, makeVocabulary, seededRandom } from './synthetic-memories.js';
import { quantile } from './statistics.js';
import { launchChromium, startViewerFixture } from '../test/support/viewer-support.js';

/** What the viewer part measures: first load to a usable list, and recall's server time, at one size. */
export interface ViewerBenchRow {
  memories: number;
  /** Chromium: navigation start to the first page of the list rendered (main[data-ready=memories]). */
  firstLoadMedianMs: number;
  firstLoadP95Ms: number;
  /** The service's own time for POST /v1/recall (its Server-Timing header). */
  searchServerMedianMs: number;
  searchServerP95Ms: number;
  /**
   * The list's keyset paging (GET /v1/memories?cursor=, 50 a page), walked from the first page to the
   * last: the service's time for the first ten cursor pages and for the last ten (deep) ones.
   */
  pagingShallowMedianMs: number;
  pagingDeepMedianMs: number;
  pages: number;
  targets: { firstLoadMs: number; searchServerMs: number };
}

/**
 * ENGRAM_BENCH_PARTS=viewer: first page load with 10K memories (≤ 300 ms), search server time (≤ 50 ms)
 * and the list's cursor paging shallow against deep; ENGRAM_BENCH_VIEWER_SIZE=100000 runs it at 100K.
 */
export async function benchViewerPart(
  size = Number(process.env.ENGRAM_BENCH_VIEWER_SIZE ?? 10_000),
): Promise<ViewerBenchRow> {
  const fixture = await startViewerFixture();
  const browser = await launchChromium();
  try {
    const vocabulary = makeVocabulary(5_000, seededRandom(7));
    const memories = makeMemories(size, { seed: 11, scopeCount: 1, vocabulary }).map((memory) => ({
      ...memory,
      scope: memory.scope === 'global' ? 'global' : 'project:github.com/acme/app',
    }));
    for (let index = 0; index < memories.length; index += 2_000)
      await fixture.store.createMany(memories.slice(index, index + 2_000), { actor: 'bench' });

    const loads: number[] = [];
    const page = await browser.newPage();
    for (let run = 0; run < 32; run += 1) {
      await page.goto('about:blank');
      await page.goto(`${fixture.server.url}/#/memories`);
      await page.waitForSelector('main[data-ready="memories"]');
      const ms = await page.evaluate<number>("performance.getEntriesByName('engram:ready:memories')[0].startTime");
      if (run === 2) {
        const entries = await page.evaluate<string>(
          "JSON.stringify(performance.getEntriesByType('resource').map((e) => [e.name.replace(location.origin, ''), Math.round(e.startTime), Math.round(e.responseEnd)]))",
        );
        console.log(`first load ${ms.toFixed(0)} ms; resources (start, end ms): ${entries}`);
      }
      if (run >= 2) loads.push(ms);
    }

    const queries = Array.from({ length: 40 }, (_, index) => {
      const random = seededRandom(100 + index);
      return Array.from({ length: 4 }, () => vocabulary[Math.floor(random() ** 2 * vocabulary.length)]).join(' ');
    });
    const server: number[] = [];
    for (const [index, query] of queries.entries()) {
      const response = await fetch(`${fixture.server.url}/v1/recall`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, recordAccess: false }),
      });
      await response.text();
      const timing = /dur=([\d.]+)/.exec(response.headers.get('server-timing') ?? '');
      if (index >= 5 && timing) server.push(Number(timing[1]));
    }
    // Every page of the list through its cursor: a deep page should cost what a shallow one does.
    const pageTimes: number[] = [];
    let cursor: string | null = null;
    do {
      const response = await fetch(
        `${fixture.server.url}/v1/memories?limit=50${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      const body = (await response.json()) as { nextCursor: string | null };
      const timing = /dur=([\d.]+)/.exec(response.headers.get('server-timing') ?? '');
      if (cursor !== null && timing) pageTimes.push(Number(timing[1]));
      cursor = body.nextCursor;
    } while (cursor !== null);

    const row: ViewerBenchRow = {
      memories: size,
      firstLoadMedianMs: round(quantile(loads, 0.5)),
      firstLoadP95Ms: round(quantile(loads, 0.95)),
      searchServerMedianMs: round(quantile(server, 0.5)),
      searchServerP95Ms: round(quantile(server, 0.95)),
      pagingShallowMedianMs: round(quantile(pageTimes.slice(0, 10), 0.5)),
      pagingDeepMedianMs: round(quantile(pageTimes.slice(-10), 0.5)),
      pages: pageTimes.length + 1,
      targets: { firstLoadMs: 300, searchServerMs: 50 },
    };
    console.log(`\nViewer at ${size} memories (Chromium ${browser.version()})`);
    console.table([row].map(({ targets: _targets, ...rest }) => rest));
    return row;
  } finally {
    await browser.close();
    await fixture.close();
  }
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
