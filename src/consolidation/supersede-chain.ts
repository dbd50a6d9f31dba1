import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryStore } from '../contracts/memory-store.js';

/** One link of a supersede chain: `from` is no longer true, `to` replaced it; `by` and `at` say who and when. */
export interface SupersedeLink {
  from: string;
  to: string;
  at: string | null;
  /** The actor of the change that set the link (`dream`, `cli (dedupe)`…). */
  by: string | null;
  /** Why, as far as the ledger tells: a merge (invalidated at the change) or an overturned fact (invalid from the newer one's time). */
  why: 'merged' | 'overturned' | 'superseded';
}

export interface SupersedeChain {
  /** What this memory was superseded by, and what superseded that, in order. */
  replacedBy: SupersedeLink[];
  /** The memories this one superseded directly. */
  replaces: SupersedeLink[];
}

const MAX_CHAIN = 20;

/** The chain around one memory, within the scopes: what superseded what, and why (for `engram show` and the viewer). */
export async function supersedeChain(
  store: MemoryStore,
  memory: Memory,
  scopes: readonly Scope[],
): Promise<SupersedeChain> {
  const replacedBy: SupersedeLink[] = [];
  const seen = new Set([memory.id]);
  let current: Memory | undefined = memory;
  while (current?.supersededBy && replacedBy.length < MAX_CHAIN && !seen.has(current.supersededBy)) {
    const next = await store.get(current.supersededBy, scopes);
    replacedBy.push(await link(store, current, current.supersededBy, next));
    seen.add(current.supersededBy);
    current = next;
  }
  const invalid = await store.list({ scopes, invalid: 'only', archived: 'include' });
  const replaces = await Promise.all(
    invalid.filter((other) => other.supersededBy === memory.id).map((other) => link(store, other, memory.id, memory)),
  );
  return { replacedBy, replaces };
}

async function link(
  store: MemoryStore,
  from: Memory,
  to: string,
  replacement: Memory | undefined,
): Promise<SupersedeLink> {
  const entry = (await store.history(from.id)).findLast(
    (candidate) => candidate.after?.supersededBy === to && candidate.before?.supersededBy !== to,
  );
  const why =
    replacement !== undefined && from.invalidAt === replacement.validFrom
      ? 'overturned'
      : entry && from.invalidAt === entry.after?.updatedAt
        ? 'merged'
        : 'superseded';
  return { from: from.id, to, at: from.invalidAt, by: entry?.actor ?? null, why };
}
