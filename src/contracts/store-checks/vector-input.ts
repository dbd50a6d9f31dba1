import { EngramError } from '../../kernel/errors.js';
import { assertMemoryType, type MemoryType } from '../../memory/memory.js';
import type { Scope } from '../../memory/scope.js';
import type { VectorEntry, VectorSearch, VectorSpace } from '../memory-store-vectors.js';
import { checkScopes } from './store-input.js';

/** Longest vector a store accepts (the largest common embedding models are 3072 or 4096 long). */
export const MAX_VECTOR_DIMENSIONS = 65_536;
const MAX_MODEL_LENGTH = 200;
const MAX_LIMIT = 100_000;

/** Checks a vector space: a model id and a whole-number length. */
export function checkVectorSpace(space: VectorSpace): VectorSpace {
  if (space === null || typeof space !== 'object')
    throw invalid('A vector space is an object with model and dimensions.');
  const { model, dimensions } = space;
  if (typeof model !== 'string' || model.trim() === '' || model.length > MAX_MODEL_LENGTH || model.includes('\u0000')) {
    throw invalid(`The vector space model must be a non-empty string of at most ${MAX_MODEL_LENGTH} characters.`);
  }
  if (
    typeof dimensions !== 'number' ||
    !Number.isInteger(dimensions) ||
    dimensions < 1 ||
    dimensions > MAX_VECTOR_DIMENSIONS
  ) {
    throw invalid(`The vector space dimensions must be a whole number from 1 to ${MAX_VECTOR_DIMENSIONS}.`);
  }
  return { model, dimensions };
}

/** Checks vectors to store against the space: Float32Array of its length, finite, not all zero. */
export function checkVectorEntries(entries: readonly VectorEntry[], space: VectorSpace | undefined): VectorEntry[] {
  if (!Array.isArray(entries)) throw invalid('vectors.put takes an array of { id, vector }.');
  if (entries.length === 0) return [];
  if (space === undefined)
    throw invalid('No vector space is set: call vectors.setSpace({ model, dimensions }) before storing vectors.');
  const seen = new Set<string>();
  return entries.map((entry, index) => {
    if (entry === null || typeof entry !== 'object' || typeof entry.id !== 'string' || entry.id === '')
      throw invalid(`Vector entry ${index} has no memory id.`);
    if (seen.has(entry.id)) throw invalid(`Memory ${entry.id} appears twice in one vectors.put call.`);
    seen.add(entry.id);
    checkVector(entry.vector, space.dimensions, `the vector of ${entry.id}`);
    if (!hasDirection(entry.vector))
      throw invalid(`The vector of ${entry.id} is all zeros: it has no direction, so no similarity can be computed.`);
    if (
      entry.updatedAt !== undefined &&
      (typeof entry.updatedAt !== 'string' || Number.isNaN(Date.parse(entry.updatedAt)))
    ) {
      throw invalid(`updatedAt of ${entry.id} must be an ISO-8601 date-time.`);
    }
    return entry;
  });
}

/** Checks a vector search; the query vector must have the space's length when a space is set. */
export function checkVectorSearch(
  query: VectorSearch,
  space: VectorSpace | undefined,
): { scopes: Scope[]; vector: Float32Array; limit: number; types?: MemoryType[] } {
  if (query === null || typeof query !== 'object')
    throw invalid('A vector search is an object with scopes, vector and limit.');
  if (typeof query.limit !== 'number' || !Number.isInteger(query.limit) || query.limit < 0 || query.limit > MAX_LIMIT) {
    throw invalid(`limit must be a whole number from 0 to ${MAX_LIMIT}.`);
  }
  checkVector(query.vector, space?.dimensions, 'the query vector');
  let types: MemoryType[] | undefined;
  if (query.types !== undefined) {
    if (!Array.isArray(query.types)) throw invalid('types must be an array.');
    types = query.types.map((type) => assertMemoryType(type));
  }
  return { scopes: checkScopes(query.scopes), vector: query.vector, limit: query.limit, ...(types && { types }) };
}

/** Checks the options of a backfill read (`vectors.missing`): a whole-number limit from 0 to 100000. */
export function checkBackfillLimit(options: { limit: number }): number {
  const limit = options?.limit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
    throw new EngramError('INVALID_INPUT', `vectors.missing takes { limit }: a whole number from 0 to ${MAX_LIMIT}.`);
  }
  return limit;
}

/** Whether a vector has a non-zero length (cosine similarity is undefined for zero vectors). */
export function hasDirection(vector: Float32Array): boolean {
  return vector.some((value) => value !== 0);
}

function checkVector(vector: unknown, dimensions: number | undefined, what: string): asserts vector is Float32Array {
  if (!(vector instanceof Float32Array)) throw invalid(`${what} must be a Float32Array.`);
  if (vector.length === 0 || vector.length > MAX_VECTOR_DIMENSIONS)
    throw invalid(`${what} must hold 1 to ${MAX_VECTOR_DIMENSIONS} numbers.`);
  if (dimensions !== undefined && vector.length !== dimensions) {
    throw invalid(
      `${what} has ${vector.length} dimensions but the store's vector space has ${dimensions}; run "engram reindex" after changing the embedding model.`,
    );
  }
  if (!vector.every((value) => Number.isFinite(value))) throw invalid(`${what} holds a number that is not finite.`);
}

function invalid(message: string): EngramError {
  return new EngramError('INVALID_INPUT', `Invalid vector input: ${message}`);
}
