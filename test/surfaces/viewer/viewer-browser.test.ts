import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXTRACTION_QUEUE } from '../../../src/extraction/extraction-job-payload.js';
import { runDream } from '../../../src/consolidation/run-dream.js';
import { Extractor } from '../../../src/extraction/extractor.js';
import { createLanguageModel } from '../../../src/adapters/models/create-language-model.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import { answer, turn } from '../../support/extraction-support.js';
import {
  chromiumAvailable,
  launchChromium,
  startViewerFixture,
  VIEWER_PROJECT,
  watchPage,
  type ViewerFixture,
  fixtureSnapshot,
} from '../../support/viewer-support.js';

// The viewer in real Chromium (Debian's /usr/bin/chromium, driven by playwright-core). Without it the
// suite is skipped with a message; CI installs it.
if (!chromiumAvailable)
  console.warn('viewer browser tests skipped: /usr/bin/chromium is absent (apt-get install chromium)');

const SHOTS = 'test-results/viewer';
const HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> <b>bold?</b> \u202Eesrever';

let fixture: ViewerFixture;
let browser: Browser;
let testsId: string;
let hostileId: string;
let failedJobId: string;

const snapshot = (): Promise<string> => fixtureSnapshot(fixture);

/** Saves `content` twice as project memories `name-0` and `name-1` (no dedupe), for a dream to merge; gives their ids. */
async function twoCopies(content: string, name: string): Promise<string[]> {
  const ids: string[] = [];
  for (let copy = 0; copy < 2; copy += 1)
    ids.push(
      (await fixture.engram.save({ content, type: 'project', name: `${name}-${copy}` }, { dedupe: false })).memory.id,
    );
  return ids;
}

/** A manual dream over the viewer's project, now. */
const dream = () =>
  runDream(
    { store: fixture.store, settings: fixture.engram.settings, now: () => new Date() },
    { trigger: 'manual', scopes: [VIEWER_PROJECT] },
  );

async function openPage(path: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const { problems } = watchPage(page);
  page.on('dialog', (dialog) => {
    problems.push(`unexpected dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  await page.goto(`${fixture.server.url}${path}`);
  return { page, problems };
}

async function ready(page: Page, name: string): Promise<void> {
  await page.waitForSelector(`main[data-ready="${name}"]`);
}

describe.skipIf(!chromiumAvailable)('the viewer in Chromium', () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    fixture = await startViewerFixture();
    const { engram, store } = fixture;
    testsId = (
      await engram.save({
        content: 'Integration tests use the real database, never mocks.',
        type: 'feedback',
        name: 'real-db-tests',
        description: 'Tests hit a real database',
        importance: 0.8,
      })
    ).memory.id;
    hostileId = (
      await engram.save({ content: HOSTILE, type: 'reference', name: 'hostile-text', description: '<i>not italic</i>' })
    ).memory.id;
    for (let index = 0; index < 12; index += 1) {
      await engram.save(
        {
          content: `Deploy note ${index}: the staging cluster ${index} restarts nightly.`,
          type: index % 2 ? 'project' : 'user',
          name: `deploy-note-${index}`,
          description: `Deploy note ${index}`,
          ...(index % 3 === 0 && { scope: 'global' }),
        },
        { dedupe: false },
      );
    }
    const { job } = await store.jobs.enqueue({
      queue: EXTRACTION_QUEUE,
      key: 'session-a:turn-3',
      payload: { sessionId: 'session-a' },
      maxAttempts: 1,
    });
    await store.jobs.claim({ queue: EXTRACTION_QUEUE, worker: 'w', leaseMs: 60_000 });
    await store.jobs.fail(job.id, 'w', { error: 'the model answered 529 overloaded three times' });
    failedJobId = job.id;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('lists newest first, filters by type, and opens a memory from the keyboard', async () => {
    const { page, problems } = await openPage('/');
    await ready(page, 'memories');
    expect(await page.locator('.memory-item').count()).toBe(14);
    await page.screenshot({ path: `${SHOTS}/memories.png`, fullPage: true });
    await page.selectOption('#field-type', 'feedback');
    await expect.poll(() => page.locator('.memory-item').count()).toBe(1);
    expect(await page.locator('.memory-name').textContent()).toBe('real-db-tests');
    await page.screenshot({ path: `${SHOTS}/memories-filtered.png`, fullPage: true });
    await page.selectOption('#field-type', '');
    await expect.poll(() => page.locator('.memory-item').count()).toBe(14);
    // Importance as a range: from 0.7, below 0.9 keeps only real-db-tests (0.8).
    await page.selectOption('#field-importanceAtLeast', '0.7');
    await page.selectOption('#field-importanceBelow', '0.9');
    await expect.poll(() => page.locator('.memory-item').count()).toBe(1);
    await expect.poll(() => page.locator('#list-summary').textContent()).toBe('Showing 1 of 1 memory, newest first.');
    await page.selectOption('#field-importanceAtLeast', '');
    await page.selectOption('#field-importanceBelow', '');
    await expect.poll(() => page.locator('.memory-item').count()).toBe(14);
    // Keyboard only: tab to the first memory's link and press Enter.
    await page.focus('#field-stale');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.className')).toBe('memory-name');
    await page.keyboard.press('Enter');
    await ready(page, 'memory');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('searches with every score part shown, without counting a hit', async () => {
    const { page, problems } = await openPage('/#/search');
    await ready(page, 'search');
    await page.fill('#search-query', 'how do we test against the database?');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.result');
    const first = page.locator('.result').first();
    expect(await first.locator('.memory-name').textContent()).toBe('real-db-tests');
    const parts = await first.locator('.parts th').allTextContents();
    expect(parts).toEqual([
      'Score',
      'Relevance',
      'Full text',
      'Vectors',
      'Context',
      'Signals',
      'Recency',
      'Importance weight',
    ]);
    expect(await page.locator('.results > p.muted').first().textContent()).toMatch(/^\d+ (?:memory|memories) in /);
    // 18's signals, as recall --explain's SIGNALS column shows them: the notes were written within one sitting.
    await page.fill('#search-query', 'deploy note staging cluster restarts nightly');
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => (await page.locator('.parts tr:has(th:text-is("Signals")) td').allTextContents()).join('|'))
      .toMatch(/sitting context \+0\.\d+/);
    await page.screenshot({ path: `${SHOTS}/search.png`, fullPage: true });
    expect((await fixture.store.get(testsId))!.hitCount).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('previews the static part and the <memory_context> block with tokens against the budget', async () => {
    const { page, problems } = await openPage('/#/preview');
    await ready(page, 'preview');
    await page.fill('#preview-message', 'Should the tests use the real database?');
    await page.fill('#preview-budget', '400');
    await page.click('form button[type=submit]');
    await page.waitForSelector('.token-summary');
    expect(await page.locator('.token-summary p').textContent()).toMatch(/^Block: \d+ of 400 tokens/);
    const block = await page.locator('pre[aria-label="Memory context block"]').textContent();
    expect(block).toContain('<memory_context>');
    expect(block).toContain('Integration tests use the real database');
    await page.screenshot({ path: `${SHOTS}/preview.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('edits a memory, forgets it, and undoes the forget from its history', async () => {
    const { page, problems } = await openPage(`/#/memory/${testsId}`);
    await ready(page, 'memory');
    await page.click('details.edit summary');
    await page.fill('#edit-content', 'Integration tests use the real database and a real queue, never mocks.');
    await page.click('details.edit button[type=submit]');
    await page.waitForSelector('.notice-ok');
    await page.locator('pre.content', { hasText: 'real queue' }).waitFor();
    expect((await fixture.store.get(testsId))!.content).toContain('a real queue');
    await page.locator('.diff .after').first().waitFor();
    await page.click('button:text("Forget")');
    await page.waitForSelector('button:text("Restore")');
    expect((await fixture.store.get(testsId))!.archived).toBe(true);
    expect(await page.locator('main').textContent()).not.toMatch(/\bnull\b|undefined|\[object/);
    await page.screenshot({ path: `${SHOTS}/memory.png`, fullPage: true });
    // The newest change (the archive) is first in the history: undo it.
    const newest = page.locator('.history .change').first();
    expect(await newest.locator('strong').textContent()).toBe('archive');
    await newest.locator('button').click();
    await page.waitForSelector('button:text("Forget")');
    expect((await fixture.store.get(testsId))!.archived).toBe(false);
    const actors = await page.locator('.history .change-head').allTextContents();
    expect(actors.every((text) => text.includes('by http') || text.includes('by library'))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('deletes for good only after confirmation, and undoing the delete brings the memory back', async () => {
    const id = (await fixture.engram.save({ content: 'A throwaway memory to delete.', name: 'throwaway' })).memory.id;
    const { page, problems } = await openPage(`/#/memory/${id}`);
    await ready(page, 'memory');
    await page.click('button:text("Delete…")');
    await page.click('dialog button:text("Cancel")');
    expect(await fixture.store.get(id)).toBeDefined();
    await page.click('button:text("Delete…")');
    await page.click('dialog button:text("Delete (undoable)")');
    await page.waitForSelector('h1:text("Deleted: throwaway")');
    expect(await fixture.store.get(id)).toBeUndefined();
    await page.locator('.history .change').first().locator('button').click();
    await page.waitForSelector('h1:text-is("throwaway")');
    expect(await fixture.store.get(id)).toBeDefined();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('purges only after confirmation, live or already deleted, and offers no undo of the purge', async () => {
    const id = (await fixture.engram.save({ content: 'A private note about zqxvortex.', name: 'private-note' })).memory
      .id;
    const { page, problems } = await openPage(`/#/memory/${id}`);
    await ready(page, 'memory');
    await page.click('button:text("Delete for good…")');
    await page.locator('dialog[open] button:text("Cancel")').click();
    expect(await fixture.store.get(id)).toBeDefined();
    await page.click('button:text("Delete for good…")');
    await page.locator('dialog[open] button:text("Delete for good")').click();
    await page.locator('p.warning', { hasText: 'purged' }).waitFor();
    expect(await fixture.store.get(id)).toBeUndefined();
    expect((await fixture.store.history(id)).map((entry) => entry.action)).toEqual(['purge']);
    expect(await page.locator('.history .change button').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain('zqxvortex');

    const deleted = (await fixture.engram.save({ content: 'Another private note, zqxbank.', name: 'deleted-note' }))
      .memory.id;
    await fixture.engram.forget(deleted, { hard: true });
    await page.goto(`${fixture.server.url}/#/memory/${deleted}`);
    await page.waitForSelector('h1:text("Deleted: deleted-note")');
    await page.click('button:text("Delete for good…")');
    await page.locator('dialog[open] button:text("Delete for good")').click();
    await page.locator('p.warning', { hasText: 'purged' }).waitFor();
    expect(JSON.stringify(await fixture.store.history(deleted))).not.toContain('zqxbank');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('calls an undoable delete by its name and keeps "Delete for good" for the purge, which says what it could not clear', async () => {
    const id = (
      await fixture.store.create(
        {
          scope: VIEWER_PROJECT,
          content: 'The staging vault word is zqxlanternfish.',
          name: 'vault-word',
          source: { sessionId: 'viewer-session', turnId: 'm1', origin: 'extraction' },
        },
        { actor: 'viewer-test' },
      )
    ).id;
    const { page, problems } = await openPage(`/#/memory/${id}`);
    await ready(page, 'memory');
    const buttons = await page.locator('section.actions > button').allTextContents();
    expect(buttons).toEqual(['Forget', 'Delete…', 'Delete for good…']);
    expect(await page.locator('main').textContent()).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:/);
    await page.click('button:text("Delete for good…")');
    await page.locator('dialog[open] button:text("Delete for good")').click();
    const notice = page.locator('#notice p');
    await notice.waitFor();
    // The agent's transcript of the session still holds the conversation: the page must not say "gone".
    expect(await notice.textContent()).toMatch(/^Purged from the store, but not everywhere: source-transcript: /);
    expect(await notice.textContent()).not.toMatch(/gone/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows dates in human form, not raw ISO text', async () => {
    const { page, problems } = await openPage(`/#/memory/${testsId}`);
    await ready(page, 'memory');
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    expect(await page.locator('dt:text-is("Created") + dd').textContent()).toMatch(/\d{4}.*\(.*(ago|just now)\)$/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows any project the store holds, says which one, and picks the service's own back", async () => {
    await fixture.store.create(
      { scope: 'project:acme-billing', content: 'Invoices close on the third working day.', name: 'invoice-close' },
      { actor: 'viewer-test' },
    );
    const { page, problems } = await openPage(`/?project=${encodeURIComponent('project:acme-billing')}#/memories`);
    await ready(page, 'memories');
    await page.locator('#project-note', { hasText: 'acme-billing' }).waitFor();
    expect(await page.locator('#project-note').textContent()).toBe(
      `Showing project:acme-billing; this service was started in ${VIEWER_PROJECT}.`,
    );
    await page.locator('main', { hasText: 'invoice-close' }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('real-db-tests');
    expect(page.url()).not.toContain('?project=');
    const options = await page.locator('#project-picker option').allTextContents();
    expect(options).toContain(`${VIEWER_PROJECT} (the service's)`);
    expect(options).toContain('project:acme-billing');
    await page.selectOption('#project-picker', VIEWER_PROJECT);
    await page.locator('#project-note', { hasText: 'the project this service was started in' }).waitFor();
    await page.locator('main', { hasText: 'real-db-tests' }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('invoice-close');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows a failed job with its reason and retries it', async () => {
    const { page, problems } = await openPage('/#/activity');
    await ready(page, 'activity');
    const row = page.locator(`tr[data-job="${failedJobId}"]`);
    expect(await row.textContent()).toContain('529 overloaded');
    await page.screenshot({ path: `${SHOTS}/activity.png`, fullPage: true });
    await row.locator('button:text("Retry")').click();
    await page.waitForSelector('.notice-ok');
    expect((await fixture.store.jobs.get(failedJobId))!.state).toBe('pending');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows consolidation runs with their change sets, and undoes a whole run', async () => {
    const { store } = fixture;
    const ids = await twoCopies('The release train leaves every second Thursday at noon.', 'train');
    const before = await snapshot();
    const report = await dream();
    expect(report.status).toBe('applied');
    const { page, problems } = await openPage('/#/activity');
    await ready(page, 'activity');
    const run = page.locator(`li[data-change-set="${report.changeSetId}"]`);
    await expect.poll(() => run.textContent()).toContain('improved');
    await run.locator('button', { hasText: /^Show the \d+ changes?$/ }).click();
    await run.locator('.changes li').first().waitFor();
    const changes = await run.locator('.changes li').allTextContents();
    expect(changes.some((text) => text.startsWith('invalidate') && text.includes('superseded by'))).toBe(true);
    await page.screenshot({ path: `${SHOTS}/activity-dream.png`, fullPage: true });
    await run.locator('button:text("Undo this run")').click();
    await page.waitForSelector('.notice-ok');
    await expect
      .poll(() => page.locator(`li[data-change-set="${report.changeSetId}"] .badge`).first().textContent())
      .toBe('undone');
    const after = JSON.parse(await snapshot());
    const restored = JSON.parse(before);
    // Every field is back except the version stamps the undo moved.
    const strip = (memories: Array<Record<string, unknown>>) =>
      memories
        .map(({ updatedAt: _updatedAt, ...rest }) => rest)
        .sort((a, b) => String(a.id).localeCompare(String(b.id)));
    expect(strip(after.memories)).toEqual(strip(restored.memories));
    for (const id of ids) expect((await store.get(id))!.invalidAt).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a memory's supersede chain both ways: what replaced it and what it replaced, with why and by whom", async () => {
    const { store } = fixture;
    const ids = await twoCopies('Code review needs two approvals before merging.', 'review');
    const report = await dream();
    expect(report.status).toBe('applied');
    const states = await Promise.all(ids.map((id) => store.get(id)));
    const old = states.find((memory) => memory?.supersededBy)!;
    expect(old).toBeDefined();
    const survivor = (await store.get(old.supersededBy!))!;
    try {
      const { page, problems } = await openPage(`/#/memory/${old.id}`);
      await ready(page, 'memory');
      const chain = page.getByRole('region', { name: 'Supersede chain' });
      const replacedBy = await chain.locator('.replaced-by li').allTextContents();
      expect(replacedBy).toHaveLength(1);
      expect(replacedBy[0]).toContain(survivor.name);
      expect(replacedBy[0]).toContain('by dream');
      expect(replacedBy[0]).toMatch(/merged into it|superseded/);
      await page.screenshot({ path: `${SHOTS}/memory-chain.png`, fullPage: true });
      // Its link, from the keyboard, opens the memory that replaced it, which lists this one.
      await chain.locator('.replaced-by a').focus();
      await page.keyboard.press('Enter');
      await page.waitForURL(`**/#/memory/${survivor.id}`);
      await ready(page, 'memory');
      await expect
        .poll(() => page.getByRole('region', { name: 'Supersede chain' }).locator('.replaces li').allTextContents())
        .toEqual([expect.stringContaining(old.name)]);
      expect(await page.locator('.replaced-by').count()).toBe(0);
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      // The run undone whole, so the tests after this one see the store as before it.
      const undone = await fetch(`${fixture.server.url}/v1/undo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ changeId: report.changeSetId }),
      });
      expect(undone.status).toBe(200);
    }
  });

  it('shows the recent extractions with what each wrote and dropped, from the store', async () => {
    // A real extraction: the Anthropic SDK against a loopback server, the run kept in the page's store.
    const server = await startAnthropicMessagesServer({
      respond: {
        message: {
          text: answer(
            { content: 'The nightly build publishes to the staging registry.', name: 'nightly-build-registry' },
            { content: '' },
          ),
        },
      },
    });
    try {
      const model = createLanguageModel(
        {
          model: {
            ...DEFAULT_SETTINGS.model,
            provider: 'anthropic',
            anthropicApiKey: 'sk-ant-test',
            anthropicBaseUrl: server.url,
            maxRetries: 0,
          },
        },
        { purpose: 'side' },
      )!;
      const extractor = new Extractor({ engram: fixture.engram, model, autoStart: false });
      await extractor.afterTurn({
        sessionId: 'viewer-chat-1',
        messages: turn(1, 'The nightly build publishes to the staging registry, remember that.'),
      });
      await extractor.drain();
    } finally {
      await server.close();
    }
    const { page, problems } = await openPage('/#/activity');
    await ready(page, 'activity');
    const run = page.locator('li.run', { hasText: 'session viewer-chat-1' });
    await expect.poll(() => run.count()).toBe(1);
    const written = run.locator('a', { hasText: 'nightly-build-registry' });
    expect(await written.count()).toBe(1);
    await run.locator('summary', { hasText: /^Dropped 1$/ }).click();
    expect(await run.locator('details li').allTextContents()).toEqual([expect.stringContaining('no-content')]);
    await page.screenshot({ path: `${SHOTS}/activity-extractions.png`, fullPage: true });
    // What it wrote opens from the run.
    await written.click();
    await ready(page, 'memory');
    expect(await page.locator('h1').textContent()).toBe('nightly-build-registry');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('draws the stats as charts', async () => {
    const { page, problems } = await openPage('/#/stats');
    await ready(page, 'stats');
    expect(await page.locator('svg.chart').count()).toBe(6);
    expect(await page.locator('svg.chart rect.bar').count()).toBeGreaterThan(5);
    // The count over time: every memory of the page's store is in recall this month.
    const overTime = page.locator('figure.chart-box', { hasText: "In recall at each month's end, by type" });
    await expect.poll(async () => overTime.locator('rect.bar').count()).toBeGreaterThan(0);

    // By scope: both scopes stacked, then one chosen in the selector; the drawing says what the API says.
    const usage = (await (await fetch(`${fixture.server.url}/v1/stats/usage`)).json()) as {
      usage: { inRecallByMonth: Array<{ month: string; byScope: Record<string, number> }> };
    };
    const thisMonth = usage.usage.inRecallByMonth.at(-1)!;
    expect(thisMonth.byScope[VIEWER_PROJECT]).toBeGreaterThan(0);
    expect(thisMonth.byScope.global).toBeGreaterThan(0);
    const byScope = page.locator('figure.chart-box', { hasText: "In recall at each month's end, by scope" });
    const bars = byScope.locator('rect.bar');
    const lastMonthBars = async () => {
      const all = await bars.evaluateAll((rects) =>
        rects.map((rect) => ({ x: Number(rect.getAttribute('x')), cls: rect.getAttribute('class') ?? '' })),
      );
      const lastX = Math.max(...all.map((bar) => bar.x));
      return all.filter((bar) => bar.x === lastX).map((bar) => bar.cls);
    };
    // The larger scope first (scope-0), the other stacked on it (scope-1).
    const [larger, smaller] = [VIEWER_PROJECT, 'global'].sort(
      (a, b) => thisMonth.byScope[b]! - thisMonth.byScope[a]! || (a < b ? -1 : 1),
    ) as [string, string];
    expect(await lastMonthBars()).toEqual(['bar scope-0', 'bar scope-1']);
    const total = thisMonth.byScope[VIEWER_PROJECT]! + thisMonth.byScope.global!;
    expect(await byScope.locator('svg.chart').getAttribute('aria-label')).toContain(`${thisMonth.month} ${total}`);
    expect(await byScope.locator('.legend li').allTextContents()).toEqual([larger, smaller]);

    const selector = byScope.getByLabel('Scope', { exact: true });
    expect(await selector.locator('option').allTextContents()).toEqual(['Every scope, stacked', larger, smaller]);
    await selector.focus();
    await selector.selectOption(smaller);
    await expect.poll(lastMonthBars).toEqual(['bar scope-1']);
    const alone = await byScope.locator('svg.chart').getAttribute('aria-label');
    expect(alone).toContain(`in ${smaller}: `);
    expect(alone).toContain(`${thisMonth.month} ${thisMonth.byScope[smaller]}`);
    expect(await byScope.locator('.legend li').allTextContents()).toEqual([smaller]);
    await selector.selectOption('');
    await expect.poll(lastMonthBars).toEqual(['bar scope-0', 'bar scope-1']);
    await page.screenshot({ path: `${SHOTS}/stats.png`, fullPage: true });
    await selector.selectOption(smaller);
    await byScope.screenshot({ path: `${SHOTS}/stats-one-scope.png` });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('renders hostile memory text as text, never as markup', async () => {
    const { page, problems } = await openPage(`/#/memory/${hostileId}`);
    await ready(page, 'memory');
    expect(await page.locator('pre.content').textContent()).toContain('<script>window.pwned = 1</script>');
    expect(await page.locator('main img, main script, main b, main i').count()).toBe(0);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    // The bidirectional override is shown as a mark, so it cannot reorder what follows.
    expect(await page.locator('pre.content').textContent()).toContain('⟨U+202E⟩');
    await page.goto(`${fixture.server.url}/#/memories`);
    await ready(page, 'memories');
    expect(await page.locator('.memory-description', { hasText: '<i>not italic</i>' }).count()).toBe(1);
    await page.screenshot({ path: `${SHOTS}/hostile.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('stays usable in a narrow window and at 200% zoom: no sideways scrolling', async () => {
    for (const [name, viewport, scale] of [
      ['narrow', { width: 360, height: 740 }, 1],
      ['zoom-200', { width: 640, height: 450 }, 2],
    ] as const) {
      const page = await browser.newPage({ viewport, deviceScaleFactor: scale });
      const { problems } = watchPage(page);
      for (const path of ['memories', `memory/${testsId}`, 'stats', 'activity']) {
        await page.goto(`${fixture.server.url}/#/${path}`);
        await ready(page, path.split('/')[0]!);
        const overflow = await page.evaluate<number>(
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow, `${name} ${path}`).toBeLessThanOrEqual(0);
      }
      await page.goto(`${fixture.server.url}/#/memory/${testsId}`);
      await ready(page, 'memory');
      await page.screenshot({ path: `${SHOTS}/memory-${name}.png`, fullPage: true });
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  it('a page on another loopback origin can change nothing, by form or by fetch', async () => {
    const target = fixture.server.url;
    const archived = (await fixture.engram.save({ content: 'Archived on purpose for the CSRF test.' })).memory.id;
    await fixture.engram.forget(archived);
    const change = (await fixture.engram.history(testsId))[0]!.id;
    const attacks: Array<{ method: string; path: string; body?: string }> = [
      { method: 'POST', path: '/v1/memories', body: '{"content":"planted"}' },
      { method: 'PATCH', path: `/v1/memories/${testsId}`, body: '{"content":"changed"}' },
      { method: 'DELETE', path: `/v1/memories/${testsId}` },
      { method: 'DELETE', path: `/v1/memories/${testsId}?hard=true` },
      { method: 'DELETE', path: `/v1/memories/${testsId}?purge=true` },
      { method: 'POST', path: `/v1/memories/${archived}/restore` },
      { method: 'POST', path: '/v1/undo', body: JSON.stringify({ changeId: change }) },
    ];
    const attackerPage = `<!doctype html><body>
      ${attacks
        .filter((attack) => attack.method === 'POST')
        .map(
          (attack, index) =>
            `<form id="f${index}" method="POST" action="${target}${attack.path}" enctype="text/plain" target="sink${index}">` +
            `<input name='${attack.body ?? ''}' value=''></form><iframe name="sink${index}"></iframe>`,
        )
        .join('\n')}
      <script>
        window.results = [];
        const attacks = ${JSON.stringify(attacks)};
        window.run = async () => {
          for (const form of document.forms) form.submit();
          for (const attack of attacks) {
            for (const mode of ['no-cors', 'cors']) {
              try {
                const response = await fetch(${JSON.stringify(target)} + attack.path, {
                  method: attack.method, mode, body: attack.body,
                  headers: mode === 'cors' ? { 'content-type': 'application/json' } : { 'content-type': 'text/plain' },
                });
                window.results.push(attack.method + ' ' + attack.path + ' ' + mode + ' ' + response.status);
              } catch (error) {
                window.results.push(attack.method + ' ' + attack.path + ' ' + mode + ' blocked');
              }
            }
          }
        };
      </script></body>`;
    const attacker: Server = createServer((_, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(attackerPage);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    const before = await snapshot();
    const answers: Array<{ method: string; status: number }> = [];
    const page = await browser.newPage();
    page.on('response', (response) => {
      if (response.url().startsWith(target))
        answers.push({ method: response.request().method(), status: response.status() });
    });
    try {
      await page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
      await page.evaluate('window.run()');
      await page.waitForTimeout(500);
      // Forms and no-cors fetches reach the service and are refused as cross-origin; PATCH and DELETE
      // need a CORS preflight, which the service never grants, so the browser does not even send them.
      const posts = attacks.filter((attack) => attack.method === 'POST').length;
      expect(answers.filter((answer) => answer.method === 'POST').length).toBeGreaterThanOrEqual(posts);
      for (const answer of answers) {
        if (answer.method === 'OPTIONS') expect(answer.status).toBeGreaterThanOrEqual(400);
        else expect(answer.status, answer.method).toBe(403);
      }
      expect(await snapshot()).toBe(before);
    } finally {
      await page.close();
      await new Promise<void>((resolve) => attacker.close(() => resolve()));
    }
  });
});

describe.skipIf(!chromiumAvailable)('the viewer with more than a page of memories', () => {
  it('draws the first page before its count, fills the count in, and pages on with "Show more"', async () => {
    const many = await startViewerFixture();
    const chromium = await launchChromium();
    try {
      await many.store.createMany(
        Array.from({ length: 73 }, (_, index) => ({
          scope: VIEWER_PROJECT,
          type: 'project' as const,
          content: `Paged note ${index}.`,
          name: `paged-${index}`,
        })),
        { actor: 'test' },
      );
      const page = await chromium.newPage();
      const { problems } = watchPage(page);
      const lists: string[] = [];
      page.on('request', (request) => {
        if (request.url().includes('/v1/memories?')) lists.push(new URL(request.url()).search);
      });
      await page.goto(`${many.server.url}/`);
      await page.waitForSelector('main[data-ready="memories"]');
      expect(await page.locator('.memory-item').count()).toBe(50);
      await expect
        .poll(() => page.locator('#list-summary').textContent())
        .toBe('Showing 50 of 73 memories, newest first.');
      // The page without its count, then the count alone.
      expect(lists[0]).toContain('total=false');
      expect(lists[1]).toContain('total=only');
      await page.locator('button', { hasText: 'Show more' }).click();
      await expect.poll(() => page.locator('.memory-item').count()).toBe(73);
      expect(await page.locator('#list-summary').textContent()).toBe('Showing 73 of 73 memories, newest first.');
      expect(await page.locator('button', { hasText: 'Show more' }).isHidden()).toBe(true);
      const names = await page.locator('.memory-name').allTextContents();
      expect(new Set(names).size).toBe(73);
      expect(problems).toEqual([]);
    } finally {
      await chromium.close();
      await many.close();
    }
  });
});

const outside = Object.values(networkInterfaces())
  .flat()
  .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;

describe.skipIf(!chromiumAvailable)('the viewer off loopback', () => {
  it('asks for the token, shows nothing without it, and works with it (never in the URL)', async () => {
    const token = 'viewer-test-token-0123456789abcdef';
    // A non-loopback address of this machine when it has one; else loopback with a token, which follows the same rules.
    const guarded = await startViewerFixture({ host: outside ?? '127.0.0.1', token });
    const chromium = await launchChromium();
    try {
      await guarded.engram.save({ content: 'Only for those with the token.', name: 'secret-plan' });
      const page = await chromium.newPage();
      const urls: string[] = [];
      const errors: string[] = [];
      page.on('request', (request) => urls.push(request.url()));
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`${guarded.server.url}/`);
      await page.waitForSelector('#token');
      expect(await page.locator('main').textContent()).not.toContain('secret-plan');
      const unauthorized = await page.evaluate(async () => (await fetch('/v1/memories')).status);
      expect(unauthorized).toBe(401);
      await page.fill('#token', 'wrong-token');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#token');
      await page.fill('#token', token);
      await page.keyboard.press('Enter');
      await page.waitForSelector('main[data-ready="memories"]');
      expect(await page.locator('.memory-name').allTextContents()).toContain('secret-plan');
      await page.screenshot({ path: `${SHOTS}/token.png` });
      expect(urls.some((url) => url.includes(token))).toBe(false);
      expect(errors).toEqual([]);
    } finally {
      await chromium.close();
      await guarded.close();
    }
  });
});
