import { isChangeSetId } from '../../../consolidation/change-sets.js';
import { changeSetUndoJson } from '../../../consolidation/engram-change-sets.js';
import { jobOutcomeJson } from '../../../extraction/engram-jobs.js';
import { readJsonBody, readRequiredJsonBody } from '../http-body.js';
import { changeSetsQuery, emptyBody, jobsQuery, parseInput, queryObject, undoBody } from '../http-schemas.js';
import {
  assertNoBody,
  ok,
  pathId,
  readableScopes,
  requestScopes,
  route,
  type JsonReply,
  type Route,
  type RouteContext,
} from '../http-route-context.js';

/** What background work did and undoing it: undo (a change or a whole change set), the job queue, change sets. */
export const activityRoutes: Route[] = [
  route('POST', '/v1/undo', undo),
  route('GET', '/v1/jobs', listJobs),
  route('POST', '/v1/jobs/:id/retry', retryJob),
  route('GET', '/v1/change-sets', listChangeSetsRoute),
  route('GET', '/v1/change-sets/:id', getChangeSet),
];

async function undo(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(undoBody, await readRequiredJsonBody(context.request, context.maxBodyBytes), 'undo request');
  // A change set (cs_…, a dream's run) is undone whole, as `engram undo <cs_…>` does.
  if (isChangeSetId(input.changeId)) {
    const result = await context.engram.changeSets.undo(input.changeId, {
      scopes: readableScopes(context, input.scopes),
      actor: context.actor,
    });
    return ok(changeSetUndoJson(result));
  }
  const undone = await context.engram.undo(input.changeId, {
    actor: context.actor,
    scopes: requestScopes(context, input.scopes),
  });
  return ok({ change: undone });
}

async function listJobs(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const query = parseInput(jobsQuery, queryObject(context.url.searchParams), 'query');
  const list = await context.engram.jobs.list({
    ...(query.state !== undefined && { states: query.state }),
    ...(query.limit !== undefined && { limit: query.limit }),
  });
  // Runs of every process that shares the store (hooks' workers, the CLI), kept in the store; a
  // store without checkpoints has only what this service ran since it started.
  const recent = (await context.engram.jobs.recent()) ?? (context.recentExtractions?.() ?? []).map(jobOutcomeJson);
  return ok({ ...list, recent });
}

/** Puts a failed job back to pending now (the worker picks it up). */
async function retryJob(context: RouteContext): Promise<JsonReply> {
  const id = pathId(context, 'job');
  parseInput(emptyBody, (await readJsonBody(context.request, context.maxBodyBytes)) ?? {}, 'body');
  parseInput(emptyBody, queryObject(context.url.searchParams), 'query');
  return ok({ job: await context.engram.jobs.retry(id) });
}

/** The viewer's consolidation runs: the latest change sets of the read scopes and the dream's state. */
async function listChangeSetsRoute(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const query = parseInput(changeSetsQuery, queryObject(context.url.searchParams), 'query');
  const scopes = readableScopes(context, query.scope);
  const [changeSets, dream] = await Promise.all([
    context.engram.changeSets.list({ scopes, ...(query.limit !== undefined && { limit: query.limit }) }),
    context.engram.dream.status(),
  ]);
  return ok({ changeSets, dream: dream ?? null });
}

/** One change set with the change it made to each memory (before and after). */
async function getChangeSet(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const id = pathId(context, 'change set');
  const scopes = readableScopes(context, undefined);
  return ok(await context.engram.changeSets.get(id, { scopes }));
}
