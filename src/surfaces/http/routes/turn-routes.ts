import type { Conversation } from '../../../contracts/conversation.js';
import { recallResultJson } from '../../../recall/recall-result-json.js';
import { readRequiredJsonBody } from '../http-body.js';
import { HttpProblem } from '../http-errors.js';
import { contextBody, parseInput, recallBody, turnBody } from '../http-schemas.js';
import { ok, requestScopes, route, type JsonReply, type Route, type RouteContext } from '../http-route-context.js';

/** The turn's calls: recall, the injection preview (`/v1/context`), and a finished turn queued for extraction. */
export const turnRoutes: Route[] = [
  route('POST', '/v1/recall', recall),
  route('POST', '/v1/context', memoryContext),
  route('POST', '/v1/turns', queueTurn),
];

async function recall(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(
    recallBody,
    await readRequiredJsonBody(context.request, context.maxBodyBytes),
    'recall request',
  );
  const result = await context.engram.recall(input.query, {
    scopes: requestScopes(context, input.scopes),
    ...(input.topK !== undefined && { topK: input.topK }),
    ...(input.minScore !== undefined && { minScore: input.minScore }),
    ...(input.types && { types: input.types }),
    ...(input.recordAccess !== undefined && { recordAccess: input.recordAccess }),
    ...(input.asOf !== undefined && { asOf: input.asOf }),
    ...(input.includeInvalid === true && { includeInvalid: true }),
  });
  return ok(recallResultJson(result, new Date().toISOString(), context.engram.settings.recall));
}

/** The injection preview: the static part and the `<memory_context>` block a model would receive, with token counts. */
async function memoryContext(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(
    contextBody,
    await readRequiredJsonBody(context.request, context.maxBodyBytes),
    'context request',
  );
  const built = await context.engram.buildMemoryContext(input.query, {
    scopes: requestScopes(context, input.scopes),
    ...(input.maxTokens !== undefined && { maxTokens: input.maxTokens }),
    ...(input.topK !== undefined && { topK: input.topK }),
    ...(input.minScore !== undefined && { minScore: input.minScore }),
    ...(input.types && { types: input.types }),
    recordAccess: input.recordAccess ?? false,
  });
  const summary = (entry: (typeof built.included)[number]) => ({
    id: entry.memory.id,
    name: entry.memory.name,
    type: entry.memory.type,
    scope: entry.memory.scope,
    score: entry.score,
    source: entry.source,
    tokens: entry.tokens,
  });
  return ok({
    query: built.query,
    scopes: built.scopes,
    staticPart: built.staticPart,
    block: built.block,
    tokens: built.tokens,
    included: built.included.map(summary),
    omitted: built.omitted.map(summary),
    warnings: built.warnings,
  });
}

/** Queues a finished turn for background extraction and answers at once (202): the work runs in the service's worker. */
async function queueTurn(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(turnBody, await readRequiredJsonBody(context.request, context.maxBodyBytes), 'turn');
  if (!context.extractor) throw new HttpProblem('EXTRACTION_UNAVAILABLE', 'This server does not run extraction.');
  const { recalled, ...conversation } = input;
  const result = await context.extractor.afterTurn(conversation as Conversation, recalled ? { recalled } : {});
  return { status: 202, body: result };
}
