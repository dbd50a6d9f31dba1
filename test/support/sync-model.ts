import type { Memory } from '../../src/memory/memory.js';
import { canonicalJson } from '../../src/memory/record-canonical-form.js';
import { FIELD_GROUPS, groupValue, type FieldGroup } from '../../src/sync/sync-fields.js';

/**
 * What a person would expect of sync after a run of writes and syncs on several machines, worked
 * out from what each machine did and what each could have known when it did it. Every local
 * change is an event; each machine and the remote know a set of events, bounded below (surely
 * known) and above (perhaps known: a sync killed part way may or may not have landed).
 *
 * - A field holds the value of its latest edit, whoever made it (equal times: the larger value).
 * - A memory deleted somewhere stays deleted unless an edit was made that the deleting machine did
 *   not know of (an edit beats a concurrent delete); a purge always wins.
 * - An edit lost to a later edit of the same field that was made without knowing it is a conflict,
 *   listed on some machine.
 */

export type EventKind = 'write' | 'delete' | 'purge';

export interface ModelEvent {
  id: number;
  machine: number;
  memoryId: string;
  kind: EventKind;
  /** For a write: the groups it set, as canonical JSON. */
  groups: Map<FieldGroup, string>;
  /** When the implementation dates the edit (ms): a creation is as old as the memory. */
  at: number;
  knownMin: ReadonlySet<number>;
  knownMax: ReadonlySet<number>;
  label: string;
}

export interface Expectation {
  /** true: held by every machine; false: held by none; undefined: either can be right. */
  alive: boolean | undefined;
  /** For a memory never deleted: each group's value (canonical JSON). */
  values?: Map<FieldGroup, string>;
}

export interface MustList {
  memoryId: string;
  group: FieldGroup;
  value: string;
  event: ModelEvent;
}

export class SyncModel {
  readonly events: ModelEvent[] = [];
  /** Memory id → scope, of every memory a machine wrote outside a session. */
  readonly scopes = new Map<string, string>();
  /** Memory ids written in a session scope (they never leave their machine). */
  readonly sessionIds = new Map<string, number>();
  /** Content token → the memories whose content ever held it. */
  readonly tokenOwners = new Map<string, Set<string>>();
  readonly #min: Array<Set<number>>;
  readonly #max: Array<Set<number>>;
  #remoteMin = new Set<number>();
  #remoteMax = new Set<number>();

  constructor(
    machines: number,
    readonly tokenPattern: RegExp,
  ) {
    this.#min = Array.from({ length: machines }, () => new Set<number>());
    this.#max = Array.from({ length: machines }, () => new Set<number>());
  }

  /** Records what a local operation on `machine` changed: the store before and after it. */
  recordLocal(
    machine: number,
    before: ReadonlyMap<string, Memory>,
    after: ReadonlyMap<string, Memory>,
    label: string,
    removal: 'delete' | 'purge' = 'delete',
  ): ModelEvent[] {
    const made: ModelEvent[] = [];
    const noteTokens = (memory: Memory): void => {
      for (const token of memory.content.match(this.tokenPattern) ?? []) {
        const owners = this.tokenOwners.get(token) ?? new Set<string>();
        owners.add(memory.id);
        this.tokenOwners.set(token, owners);
      }
    };
    const add = (memory: Memory, kind: EventKind, groups: Map<FieldGroup, string>, at: number): void => {
      if (memory.scope.startsWith('session:')) {
        // Its tokens too: the check that no session text reaches the remote looks them up here.
        this.sessionIds.set(memory.id, machine);
        if (groups.has('content')) noteTokens(memory);
        return;
      }
      this.scopes.set(memory.id, memory.scope);
      const event: ModelEvent = {
        id: this.events.length + 1,
        machine,
        memoryId: memory.id,
        kind,
        groups,
        at,
        knownMin: new Set(this.#min[machine]),
        knownMax: new Set(this.#max[machine]),
        label,
      };
      this.events.push(event);
      made.push(event);
      if (groups.has('content')) noteTokens(memory);
    };
    for (const [id, memory] of after) {
      const old = before.get(id);
      if (old === undefined) {
        add(memory, 'write', allGroups(memory), Date.parse(memory.createdAt));
        continue;
      }
      const changed = new Map<FieldGroup, string>();
      for (const group of FIELD_GROUPS) {
        const value = canonicalJson(groupValue(memory, group));
        if (value !== canonicalJson(groupValue(old, group))) changed.set(group, value);
      }
      if (changed.size > 0) add(memory, 'write', changed, Date.parse(memory.updatedAt));
    }
    for (const [id, memory] of before) if (!after.has(id)) add(memory, removal, new Map(), Date.now());
    for (const event of made) {
      this.#min[machine]!.add(event.id);
      this.#max[machine]!.add(event.id);
    }
    return made;
  }

  /** Machines that synced completely (together, in any order): each now knows the remote, which knows them all. */
  synced(machines: readonly number[]): void {
    const before = new Set(this.#remoteMin);
    for (const machine of machines) {
      for (const id of this.#min[machine]!) this.#remoteMin.add(id);
      for (const id of this.#max[machine]!) this.#remoteMax.add(id);
    }
    for (const machine of machines) {
      // Surely: what the remote held before, its own, and (when alone) everything the remote holds now.
      const min = machines.length === 1 ? new Set(this.#remoteMin) : new Set([...before, ...this.#min[machine]!]);
      this.#min[machine] = min;
      this.#max[machine] = new Set(this.#remoteMax);
    }
  }

  /** A sync stopped part way: its push landed or not; what it wrote here is unknown. */
  interrupted(machine: number, pushed: boolean): void {
    if (pushed) {
      for (const id of this.#min[machine]!) this.#remoteMin.add(id);
      for (const id of this.#max[machine]!) this.#remoteMax.add(id);
    }
    for (const id of this.#remoteMax) this.#max[machine]!.add(id);
  }

  eventsOf(memoryId: string): ModelEvent[] {
    return this.events.filter((event) => event.memoryId === memoryId);
  }

  expectation(memoryId: string): Expectation {
    const events = this.eventsOf(memoryId);
    if (events.some((event) => event.kind === 'purge')) return { alive: false };
    const deletes = events.filter((event) => event.kind === 'delete');
    const writes = events.filter((event) => event.kind === 'write');
    if (deletes.length === 0) return { alive: true, values: latestValues(writes) };
    // Alive when some write is known to no delete; gone when every write is known to some delete.
    let alive: boolean | undefined = false;
    for (const write of writes) {
      if (deletes.some((remove) => remove.knownMin.has(write.id))) continue;
      if (deletes.every((remove) => !remove.knownMax.has(write.id))) return { alive: true };
      alive = undefined;
    }
    return { alive };
  }

  /**
   * Edits of memories never deleted that lost to a later edit of their field made without knowing
   * them, and that no one overwrote knowingly either: each must be listed as a conflict somewhere.
   */
  mustList(): MustList[] {
    const out: MustList[] = [];
    for (const memoryId of this.scopes.keys()) {
      const expected = this.expectation(memoryId);
      if (expected.values === undefined) continue;
      const writes = this.eventsOf(memoryId).filter((event) => event.kind === 'write');
      for (const group of FIELD_GROUPS) {
        const final = expected.values.get(group)!;
        const touching = writes.filter((event) => event.groups.has(group));
        for (const event of touching) {
          const value = event.groups.get(group)!;
          if (value === final) continue;
          const others = touching.filter((other) => other !== event);
          if (others.some((other) => other.knownMin.has(event.id))) continue;
          if (others.some((other) => other.knownMax.has(event.id))) continue;
          out.push({ memoryId, group, value, event });
        }
      }
    }
    return out;
  }

  /** Every value a memory's group was ever given (a conflict lists only these). */
  valuesOf(memoryId: string, group: FieldGroup): Set<string> {
    return new Set(
      this.eventsOf(memoryId)
        .filter((event) => event.groups.has(group))
        .map((event) => event.groups.get(group)!),
    );
  }

  /** Tokens of purged memories' contents that no other memory ever held: found nowhere after a sync. */
  purgedTokens(): string[] {
    const purged = new Set(this.events.filter((event) => event.kind === 'purge').map((event) => event.memoryId));
    return [...this.tokenOwners]
      .filter(([, owners]) => [...owners].every((id) => purged.has(id)))
      .map(([token]) => token);
  }
}

function allGroups(memory: Memory): Map<FieldGroup, string> {
  return new Map(FIELD_GROUPS.map((group) => [group, canonicalJson(groupValue(memory, group))]));
}

/** Each group's value from its latest write (equal times: the larger value, as every machine decides). */
function latestValues(writes: readonly ModelEvent[]): Map<FieldGroup, string> {
  const values = new Map<FieldGroup, string>();
  for (const group of FIELD_GROUPS) {
    let best: { at: number; value: string } | undefined;
    for (const event of writes) {
      const value = event.groups.get(group);
      if (value === undefined) continue;
      if (best === undefined || event.at > best.at || (event.at === best.at && value > best.value))
        best = { at: event.at, value };
    }
    if (best !== undefined) values.set(group, best.value);
  }
  return values;
}
