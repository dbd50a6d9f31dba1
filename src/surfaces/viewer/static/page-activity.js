// Activity: the extraction queue (pending, running, failed with the reason; retry), the latest runs,
// and consolidation runs ("dream") with their change sets (what each changed; undo of a whole run).
import { api, query } from './api.js';
import { add, ago, count, h, replace } from './dom.js';
import { notify, refresh, showError } from './app.js';

export async function activityPage(container, { settings: info }) {
  const settings = await info;
  add(container, h('h1', {}, 'Activity'));
  if (!settings.extraction.queue) {
    add(container, h('p', {}, 'This store has no job queue: extraction cannot run here.'));
    await consolidationRuns(container);
    return;
  }
  const answer = await api('GET', `/v1/jobs${query({ state: 'pending,running,failed', limit: 200 })}`);
  const { counts } = answer;
  add(
    container,
    h(
      'ul',
      { class: 'counts', 'aria-label': 'Extraction queue' },
      ['pending', 'running', 'failed', 'done'].map((state) =>
        h('li', { class: `count state-${state}` }, h('strong', {}, String(counts[state])), ` ${state}`),
      ),
    ),
    settings.extraction.running ? null : h('p', { class: 'warning' }, 'This service runs no extraction worker.'),
    h('h2', {}, 'Queue'),
    answer.jobs.length === 0
      ? h('p', { class: 'muted' }, 'No pending, running or failed jobs.')
      : jobTable(answer.jobs),
    h('h2', {}, 'Recent extractions'),
    answer.recent.length === 0
      ? h('p', { class: 'muted' }, 'No extraction has finished yet.')
      : h('ol', { class: 'runs' }, answer.recent.map(runItem)),
  );
  await consolidationRuns(container);
}

async function consolidationRuns(container) {
  const answer = await api('GET', `/v1/change-sets${query({ limit: 20 })}`);
  const { dream } = answer;
  add(
    container,
    h('h2', {}, 'Consolidation runs'),
    dream
      ? h(
          'p',
          { class: 'muted' },
          dream.lastRunAt
            ? `Last dream ${ago(dream.lastRunAt)} (${dream.status ?? 'done'}). `
            : 'No dream has run yet. ',
          `${count(dream.sessionsNoted, 'session')} noted since.`,
        )
      : null,
    answer.changeSets.length === 0
      ? h('p', { class: 'muted' }, 'No change set yet: "engram dream" or the service’s schedule writes one per run.')
      : h('ol', { class: 'runs', 'aria-label': 'Consolidation runs' }, answer.changeSets.map(changeSetItem)),
  );
}

function changeSetItem(set) {
  const changes = h('div', { class: 'changes' });
  const undone = set.undoneAt !== undefined;
  return h(
    'li',
    { class: 'run', dataset: { changeSet: set.id } },
    h(
      'p',
      {},
      h('span', { class: `badge state-${undone ? 'failed' : 'done'}` }, undone ? 'undone' : 'applied'),
      ` ${set.summary ?? `${set.actor}: ${count(set.memoryCount, 'memory', 'memories')}`} · ${ago(set.stampedAt)} · `,
      h('code', {}, set.id),
    ),
    h(
      'p',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-expanded': 'false',
          on: { click: (event) => toggleChanges(event.currentTarget, set, changes) },
        },
        `Show the ${count(set.memoryCount, 'change')}`,
      ),
      undone
        ? h('span', { class: 'muted' }, ` Undone ${ago(set.undoneAt)}.`)
        : h(
            'button',
            { type: 'button', 'aria-label': `Undo the whole run ${set.id}`, on: { click: () => undoRun(set) } },
            'Undo this run',
          ),
    ),
    changes,
  );
}

async function toggleChanges(button, set, changes) {
  if (button.getAttribute('aria-expanded') === 'true') {
    button.setAttribute('aria-expanded', 'false');
    replace(changes);
    return;
  }
  try {
    const answer = await api('GET', `/v1/change-sets/${encodeURIComponent(set.id)}`);
    button.setAttribute('aria-expanded', 'true');
    replace(
      changes,
      h(
        'ul',
        { class: 'plain', 'aria-label': `Changes of ${set.id}` },
        answer.entries.map((entry) =>
          h(
            'li',
            {},
            h('span', { class: 'badge' }, entry.action),
            ' ',
            h('a', { href: `#/memory/${encodeURIComponent(entry.memoryId)}` }, entry.after?.name ?? entry.memoryId),
            entry.after?.supersededBy
              ? [
                  ' → superseded by ',
                  h(
                    'a',
                    { href: `#/memory/${encodeURIComponent(entry.after.supersededBy)}` },
                    entry.after.supersededBy,
                  ),
                ]
              : '',
          ),
        ),
      ),
    );
  } catch (error) {
    showError(error);
  }
}

async function undoRun(set) {
  try {
    const answer = await api('POST', '/v1/undo', { changeId: set.id });
    notify(`Undid ${set.id}: ${count(answer.undone.length, 'memory', 'memories')} back as they were.`);
    await refresh();
  } catch (error) {
    showError(error);
  }
}

function jobTable(jobs) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'jobs' },
      h('caption', { class: 'visually-hidden' }, 'Extraction jobs'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['State', 'Tries', 'Queued', 'Session', 'Reason', ''].map((name) => h('th', { scope: 'col' }, name)),
        ),
      ),
      h(
        'tbody',
        {},
        jobs.map((job) =>
          h(
            'tr',
            { dataset: { job: job.id } },
            h('td', {}, h('span', { class: `badge state-${job.state}` }, job.state)),
            h('td', {}, `${job.attempts}/${job.maxAttempts}`),
            h('td', {}, ago(job.createdAt)),
            h('td', { class: 'wrap' }, job.sessionId ?? job.key),
            h(
              'td',
              { class: 'wrap' },
              job.lastError ?? (Date.parse(job.runAt) > Date.now() ? `retry ${ago(job.runAt)}` : ''),
            ),
            h(
              'td',
              {},
              job.state === 'failed'
                ? h('button', { type: 'button', class: 'secondary', on: { click: () => retry(job) } }, 'Retry')
                : null,
            ),
          ),
        ),
      ),
    ),
  );
}

async function retry(job) {
  try {
    await api('POST', `/v1/jobs/${encodeURIComponent(job.id)}/retry`);
    notify(`Job ${job.id} is pending again.`);
    await refresh();
  } catch (error) {
    showError(error);
  }
}

function runItem(run) {
  if (run.state !== 'done') {
    return h(
      'li',
      { class: 'run' },
      h(
        'p',
        {},
        h('span', { class: 'badge state-failed' }, run.state),
        ` ${run.job.sessionId ?? run.job.key}: `,
        run.error,
      ),
    );
  }
  const { report } = run;
  return h(
    'li',
    { class: 'run' },
    h(
      'p',
      {},
      h('span', { class: 'badge state-done' }, report.status),
      ` ${report.mode} · session ${report.sessionId} · ${count(report.span.messages, 'message')} · ${count(report.modelCalls, 'model call')}`,
    ),
    report.written.length > 0
      ? h(
          'ul',
          { class: 'plain' },
          report.written.map((memory) =>
            h(
              'li',
              {},
              `${memory.action} `,
              h('a', { href: `#/memory/${encodeURIComponent(memory.id)}` }, memory.name),
              ` (${memory.type})`,
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'Wrote nothing.'),
    report.dropped.length > 0
      ? h(
          'details',
          {},
          h('summary', {}, `Dropped ${report.dropped.length}`),
          h(
            'ul',
            { class: 'plain' },
            report.dropped.map((item) => h('li', {}, `${item.reason}: ${item.name ?? ''} ${item.detail}`)),
          ),
        )
      : null,
  );
}
