import { execFileSync } from 'node:child_process';
import { canonicalJson } from '../../src/memory/record-canonical-form.js';
import type { Memory } from '../../src/memory/memory.js';
import type { OpenedEngram } from '../../src/node/open-engram.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import { conflictsOf, type ConflictRecord } from '../../src/sync/sync-conflicts.js';
import { FIELD_GROUPS, groupValue } from '../../src/sync/sync-fields.js';
import { parseLayoutPath } from '../../src/sync/sync-layout.js';
import { resolveSyncConflict, syncStatus, syncStore, type SyncReport } from '../../src/sync/node/sync-store.js';
import { startGitDaemon } from './git-daemon.js';
import { startGitHttpServer } from './git-http-server.js';
import { killedSync, type KillPoint } from './sync-kill.js';
import { cachesOf, makeSyncWorld, objectsHolding, type Machine, type SyncWorld } from './sync-machines.js';
import { SyncModel } from './sync-model.js';
import { createRandomSource } from '../../src/testing/store-suite-support.js';

/**
 * A seeded run of three machines and one remote: random writes, edits, invalidations, forgets,
 * purges and dreams on each, syncs in random order (alone, several at once, or SIGKILLed part way
 * as a process of their own), then syncs until quiet, and the checks of sync-model.ts: every
 * machine holds the same memories, each field the latest edit, no write lost, nothing duplicated,
 * no purged text in any object reachable on the remote (nor in any machine's cache), every lost
 * edit listed as a conflict; then every conflict resolved (either way, at random) and all checked
 * again. The same seed makes the same operations; a failure names the seed and the last steps.
 */

export type Transport = 'bare' | 'daemon' | 'http';

export interface ScenarioOptions {
  seed: number;
  transport: Transport;
  /** Operations before the final syncs (local changes and syncs alike). */
  operations: number;
  /** Share of operations that are a sync SIGKILLed part way (default 0.06). */
  killShare?: number;
}

export interface ScenarioSummary {
  seed: number;
  transport: Transport;
  operations: number;
  localChanges: number;
  syncs: number;
  concurrentSyncs: number;
  killedSyncs: number;
  killedAfterPush: number;
  dreams: number;
  purges: number;
  memories: number;
  conflictsListed: number;
  conflictsResolved: number;
}

const MACHINES = 3;
const WORDS = `amber basalt cedar delta ember fjord garnet harbor indigo jasper kelp lagoon marble nectar onyx
pepper quartz raven saffron tundra umber velvet willow xenon yarrow zephyr anchor beacon canyon dune
estuary falcon glacier heron island jungle kiln lantern meadow nebula orchard prairie quiver reef
summit thicket upland valley wharf yonder zenith bramble cobalt dahlia egret fennel grotto hollow
ivory juniper kestrel lichen mosaic nutmeg otter pylon quarry ridge sierra trellis urchin vortex
walnut yucca alpine bison cinder drift elm fern gale hazel iris jade kite lotus moss north oak`
  .split(/\s+/)
  .filter(Boolean);
// A token ends in a letter so that no token is part of another (zq2t2 of zq2t20): the checks for
// purged and session text look for tokens as substrings of the remote's objects.
const TOKEN = /zq\d+t\d+k/g;

export async function runSyncScenario(options: ScenarioOptions): Promise<ScenarioSummary> {
  const run = new ScenarioRun(options);
  try {
    await run.start();
    await run.operate();
    await run.finish();
    return run.summary;
  } catch (error) {
    const tail = run.steps.slice(-Number(process.env.ENGRAM_SYNC_STEPS ?? 25)).join('\n  ');
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(
      `Sync scenario seed ${options.seed} (${options.transport}, ${options.operations} operations) failed: ${message}\n` +
        `Run it again with ENGRAM_SYNC_SEEDS=${options.seed}:${options.transport} ENGRAM_SYNC_OPERATIONS=${options.operations}.\n` +
        `Last steps:\n  ${tail}`,
      { cause: error },
    );
  } finally {
    await run.close();
  }
}

class ScenarioRun {
  readonly steps: string[] = [];
  readonly summary: ScenarioSummary;
  readonly #options: ScenarioOptions;
  readonly #random: () => number;
  readonly #model = new SyncModel(MACHINES, TOKEN);
  #world!: SyncWorld;
  #machines: Machine[] = [];
  #opened: OpenedEngram[] = [];
  #closeServer: (() => Promise<void>) | undefined;
  #tokens = 0;

  constructor(options: ScenarioOptions) {
    this.#options = options;
    this.#random = generator(options.seed);
    this.summary = {
      seed: options.seed,
      transport: options.transport,
      operations: options.operations,
      localChanges: 0,
      syncs: 0,
      concurrentSyncs: 0,
      killedSyncs: 0,
      killedAfterPush: 0,
      dreams: 0,
      purges: 0,
      memories: 0,
      conflictsListed: 0,
      conflictsResolved: 0,
    };
  }

  async start(): Promise<void> {
    const transport = this.#options.transport;
    this.#world = makeSyncWorld(MACHINES, transport === 'bare' ? {} : { remote: 'served below' });
    if (transport !== 'bare') {
      const server =
        transport === 'daemon'
          ? await startGitDaemon(this.#world.root)
          : await startGitHttpServer(this.#world.root, { receivePack: true });
      this.#closeServer = () => server.close();
      for (const machine of this.#world.machines) machine.env.ENGRAM_SYNC_REMOTE = `${server.url}/remote.git`;
    }
    this.#machines = this.#world.machines;
    for (const machine of this.#machines) this.#opened.push(await machine.open());
  }

  async close(): Promise<void> {
    for (const opened of this.#opened.splice(0)) await opened.close().catch(() => undefined);
    await this.#closeServer?.();
    // ENGRAM_SYNC_KEEP=1 keeps the machines and the remote to look at after a failure.
    if (process.env.ENGRAM_SYNC_KEEP === '1') console.log(`kept ${this.#world?.root}`);
    else this.#world?.cleanup();
  }

  async operate(): Promise<void> {
    const share = this.#options.killShare ?? 0.06;
    for (let step = 0; step < this.#options.operations; step += 1) {
      const machine = this.#int(MACHINES);
      const roll = this.#random();
      if (roll < share) await this.#killedSync(machine);
      else if (roll < share + 0.05) await this.#concurrentSyncs();
      else if (roll < share + 0.22) await this.#sync(machine);
      else await this.#localChange(machine);
    }
  }

  async finish(): Promise<void> {
    await this.#converge();
    await this.#check('after the random operations');
    const listed = await this.#checkConflicts();
    this.summary.conflictsListed = listed;
    // Every conflict resolved, either way, one machine after another (each knowing the last one's choices).
    let resolvedBefore = false;
    for (let machine = 0; machine < MACHINES; machine += 1) {
      const opened = this.#opened[machine]!;
      if ((await syncStatus({ opened, cwd: this.#machines[machine]!.cwd })).conflicts.length === 0) continue;
      if (resolvedBefore) await this.#sync(machine);
      const status = await syncStatus({ opened, cwd: this.#machines[machine]!.cwd });
      const memoryIds = [...new Set(status.conflicts.map((conflict) => conflict.memoryId))];
      resolvedBefore = true;
      const before = await snapshot(opened);
      for (const memoryId of memoryIds) {
        const keep = this.#random() < 0.5 ? 'kept' : 'other';
        await resolveSyncConflict({ opened, memoryId, keep, actor: `person-${machine}` });
        this.steps.push(`m${machine + 1} resolve ${memoryId} keep ${keep}`);
        this.summary.conflictsResolved += 1;
      }
      this.#model.recordLocal(machine, before, await snapshot(opened), 'resolve');
      await this.#sync(machine);
    }
    await this.#converge();
    await this.#check('after resolving every conflict');
    for (let machine = 0; machine < MACHINES; machine += 1) {
      const status = await syncStatus({ opened: this.#opened[machine]!, cwd: this.#machines[machine]!.cwd });
      if (status.conflicts.length > 0)
        throw new Error(`m${machine + 1} still lists ${status.conflicts.length} conflict(s) after resolving them all`);
    }
  }

  // ---- operations ---------------------------------------------------------------------------

  async #localChange(machine: number): Promise<void> {
    const opened = this.#opened[machine]!;
    const { engram } = opened;
    const before = await snapshot(opened);
    const live = [...before.values()].filter((memory) => !memory.scope.startsWith('session:'));
    // Most edits go to a few memories every machine has, so that machines edit the same ones.
    const hot = [...live].sort((a, b) => (a.id < b.id ? -1 : 1)).slice(0, 4);
    const pool = hot.length > 0 && this.#random() < 0.6 ? hot : live;
    const target = pool.length > 0 ? pool[this.#int(pool.length)]! : undefined;
    const scopes = target ? { scopes: [target.scope] } : {};
    const roll = this.#random();
    let label: string;
    let removal: 'delete' | 'purge' = 'delete';
    if (target === undefined || roll < 0.28) {
      const kind = this.#random();
      const scope = kind < 0.15 ? 'global' : kind < 0.2 ? `session:s${machine}` : undefined;
      const dated = kind > 0.85;
      const content = dated
        ? `Yesterday the ${this.#words(3)} moved to ${this.#words(2)} ${this.#token()}.`
        : this.#sentence();
      const memory = await engram.remember({
        content,
        ...(scope !== undefined && { scope }),
        ...(dated && { createdAt: new Date(Date.now() - (2 + this.#int(4)) * 86_400_000).toISOString() }),
      });
      label = `remember ${memory.id} in ${memory.scope}${dated ? ' (dated)' : ''}`;
    } else if (roll < 0.48) {
      await engram.update(target.id, { content: this.#sentence() }, scopes);
      label = `edit content of ${target.id}`;
    } else if (roll < 0.56) {
      await engram.update(target.id, { description: this.#words(3) }, scopes);
      label = `edit description of ${target.id}`;
    } else if (roll < 0.63) {
      await engram.update(target.id, { importance: Math.round((0.1 + this.#random() * 0.8) * 100) / 100 }, scopes);
      label = `edit importance of ${target.id}`;
    } else if (roll < 0.68) {
      const valid = live.filter((memory) => memory.invalidAt === null);
      const chosen = valid.length > 0 ? valid[this.#int(valid.length)]! : undefined;
      if (chosen === undefined) return;
      const others = valid.filter((memory) => memory.id !== chosen.id && memory.scope === chosen.scope);
      const by = others.length > 0 && this.#random() < 0.5 ? others[this.#int(others.length)]! : undefined;
      await engram.invalidate(chosen.id, { scopes: [chosen.scope], ...(by && { supersededBy: by.id }) });
      label = `invalidate ${chosen.id}${by ? ` by ${by.id}` : ''}`;
    } else if (roll < 0.74) {
      if (target.archived) {
        await engram.restore(target.id, scopes);
        label = `restore ${target.id}`;
      } else {
        await engram.forget(target.id, scopes);
        label = `forget (archive) ${target.id}`;
      }
    } else if (roll < 0.81) {
      await engram.forget(target.id, { ...scopes, hard: true });
      label = `forget --hard ${target.id}`;
    } else if (roll < 0.86) {
      await engram.purge(target.id, scopes);
      label = `purge ${target.id}`;
      removal = 'purge';
      this.summary.purges += 1;
    } else {
      const report = await runDream(
        { store: engram.store, settings: opened.loaded.settings, now: () => new Date() },
        { trigger: 'manual', scopes: [engram.defaultScope] },
      );
      label = `dream: ${report.status}${report.changeSetId ? ` ${report.changeSetId}` : ''}`;
      this.summary.dreams += 1;
    }
    const events = this.#model.recordLocal(machine, before, await snapshot(opened), label, removal);
    this.summary.localChanges += 1;
    this.steps.push(`m${machine + 1} ${label} → ${events.length} event(s)`);
  }

  async #sync(machine: number): Promise<SyncReport> {
    const report = await syncStore({
      opened: this.#opened[machine]!,
      cwd: this.#machines[machine]!.cwd,
      acceptProjectRemote: true,
      onWarning: () => undefined,
    });
    this.#expectSynced(machine, report);
    this.#model.synced([machine]);
    this.summary.syncs += 1;
    this.steps.push(`m${machine + 1} sync: ${describe(report)}`);
    return report;
  }

  async #concurrentSyncs(): Promise<void> {
    const machines = this.#random() < 0.5 ? [0, 1, 2] : pickTwo(this.#int(3));
    const reports = await Promise.all(
      machines.map((machine) =>
        syncStore({
          opened: this.#opened[machine]!,
          cwd: this.#machines[machine]!.cwd,
          acceptProjectRemote: true,
          onWarning: () => undefined,
        }),
      ),
    );
    machines.forEach((machine, index) => this.#expectSynced(machine, reports[index]!));
    this.#model.synced(machines);
    this.summary.syncs += machines.length;
    this.summary.concurrentSyncs += 1;
    this.steps.push(
      `m${machines.map((machine) => machine + 1).join('+m')} sync at once: ${reports.map(describe).join(' | ')}`,
    );
  }

  async #killedSync(machine: number): Promise<void> {
    const roll = this.#random();
    const point: KillPoint =
      roll < 0.4
        ? { when: 'after', call: 1 + this.#int(16) }
        : roll < 0.7
          ? { when: 'before', call: 1 + this.#int(16) }
          : { when: 'after-push', delayMs: this.#int(60) };
    const result = await killedSync(this.#machines[machine]!, point, {
      root: this.#world.root,
      remoteGitDir: this.#world.remote,
    });
    const where = 'call' in point ? `${point.when} git ${point.call}` : `${point.when} +${point.delayMs} ms`;
    if (!result.killed) {
      if (result.code !== 0)
        throw new Error(`m${machine + 1}'s engram sync (not killed) exited ${result.code}: ${result.stderr}`);
      const document = JSON.parse(result.stdout) as SyncReport;
      this.#expectSynced(machine, document);
      this.#model.synced([machine]);
      this.summary.syncs += 1;
      this.steps.push(`m${machine + 1} sync as a process, kill ${where} never came: ${describe(document)}`);
      return;
    }
    this.#model.interrupted(machine, result.pushed);
    this.summary.killedSyncs += 1;
    if (result.pushed) this.summary.killedAfterPush += 1;
    this.steps.push(
      `m${machine + 1} sync SIGKILLed ${where} (${result.calls.join(' ')})${result.pushed ? ', its push landed' : ''}`,
    );
  }

  /** Syncs every machine in turn until a whole round changes nothing anywhere. */
  async #converge(): Promise<void> {
    for (let round = 0; round < 5; round += 1) {
      let moved = 0;
      for (let machine = 0; machine < MACHINES; machine += 1) {
        const report = await this.#sync(machine);
        for (const outcome of report.remotes)
          if (outcome.status === 'synced') {
            const { pulled, pushed } = outcome.report;
            moved += pulled.written + pulled.deleted + pulled.purged + pushed.written + pushed.tombstones;
          }
      }
      if (moved === 0) return;
    }
    throw new Error('five rounds of syncs in turn still moved memories');
  }

  #expectSynced(machine: number, report: SyncReport): void {
    for (const outcome of report.remotes) {
      if (outcome.status !== 'synced')
        throw new Error(`m${machine + 1} did not sync: ${JSON.stringify(outcome).slice(0, 600)}`);
      const { heldBack, rejected, complete } = outcome.report;
      if (heldBack.length > 0 || rejected.length > 0 || !complete)
        throw new Error(
          `m${machine + 1} synced with problems: ${JSON.stringify({ heldBack, rejected, complete }).slice(0, 800)}`,
        );
    }
  }

  // ---- checks -------------------------------------------------------------------------------

  async #check(when: string): Promise<void> {
    const model = this.#model;
    const states = await Promise.all(this.#opened.map((opened) => snapshot(opened)));
    const shared = states.map(
      (state) => new Map([...state].filter(([, memory]) => !memory.scope.startsWith('session:'))),
    );
    // The same memories everywhere, field by field.
    const first = shared[0]!;
    for (let machine = 1; machine < MACHINES; machine += 1) {
      const other = shared[machine]!;
      for (const id of new Set([...first.keys(), ...other.keys()])) {
        const a = first.get(id);
        const b = other.get(id);
        if (a === undefined || b === undefined)
          throw new Error(`${when}: ${id} is on m${a ? 1 : machine + 1} but not on m${a ? machine + 1 : 1}`);
        for (const group of FIELD_GROUPS)
          if (canonicalJson(groupValue(a, group)) !== canonicalJson(groupValue(b, group)))
            throw new Error(
              `${when}: ${id}'s ${group} differs: m1 ${canonicalJson(groupValue(a, group))}, m${machine + 1} ${canonicalJson(groupValue(b, group))}`,
            );
      }
    }
    // Nothing duplicated, nothing made up.
    const contents = new Map<string, string>();
    for (const memory of first.values()) {
      if (!model.scopes.has(memory.id)) throw new Error(`${when}: ${memory.id} was never written by any machine`);
      const seen = contents.get(memory.content);
      if (seen !== undefined) throw new Error(`${when}: ${seen} and ${memory.id} hold the same content`);
      contents.set(memory.content, memory.id);
    }
    // No acknowledged write lost; a delete only where no one's edit was unknown to it; each field its latest edit.
    for (const memoryId of model.scopes.keys()) {
      const expected = model.expectation(memoryId);
      const found = first.get(memoryId);
      if (expected.alive === true && found === undefined)
        throw new Error(`${when}: ${memoryId} is lost (${describeEvents(model, memoryId)})`);
      if (expected.alive === false && found !== undefined)
        throw new Error(`${when}: ${memoryId} should be gone (${describeEvents(model, memoryId)})`);
      if (expected.values && found)
        for (const [group, value] of expected.values)
          if (canonicalJson(groupValue(found, group)) !== value)
            throw new Error(
              `${when}: ${memoryId}'s ${group} is ${canonicalJson(groupValue(found, group))}, its latest edit ${value} (${describeEvents(model, memoryId)})`,
            );
    }
    // A session's memories never leave their machine.
    for (const [id, owner] of model.sessionIds)
      for (let machine = 0; machine < MACHINES; machine += 1)
        if (machine !== owner && states[machine]!.has(id))
          throw new Error(`${when}: session memory ${id} of m${owner + 1} is on m${machine + 1}`);
    // The remote's tip holds exactly the memories the machines hold.
    const files = remoteMemoryIds(this.#world.remote);
    for (const id of first.keys()) if (!files.has(id)) throw new Error(`${when}: ${id} has no file on the remote`);
    for (const id of files) if (!first.has(id)) throw new Error(`${when}: the remote holds ${id}, no machine does`);
    // A purged text in no object reachable on the remote, in no machine's cache, in no store.
    const purged = model.purgedTokens();
    const sessionTokens = [...model.sessionIds.keys()].flatMap((id) =>
      [...(states[model.sessionIds.get(id)!]!.get(id)?.content.match(TOKEN) ?? [])].filter(
        (token) => model.tokenOwners.get(token)?.size === 1,
      ),
    );
    // Sessions were written: the check below must have their text to look for, or it checks nothing.
    if (model.sessionIds.size > 0 && sessionTokens.length === 0)
      throw new Error(`${when}: ${model.sessionIds.size} session memories, but no token of theirs to look for`);
    for (const token of [...purged, ...sessionTokens]) {
      const found = objectsHolding(this.#world.remote, token);
      if (found.length > 0)
        throw new Error(`${when}: ${token} (purged or in a session) is in ${found.length} object(s) of the remote`);
    }
    for (const token of purged) {
      for (let machine = 0; machine < MACHINES; machine += 1) {
        for (const cache of cachesOf(this.#machines[machine]!.home))
          if (objectsHolding(cache, token, { all: true }).length > 0)
            throw new Error(`${when}: purged ${token} is still in m${machine + 1}'s cache ${cache}`);
        for (const memory of states[machine]!.values())
          if (memory.content.includes(token)) throw new Error(`${when}: purged ${token} is in ${memory.id}`);
      }
    }
    this.summary.memories = first.size;
  }

  /** Every edit lost without being seen is listed; every listed conflict is made of real edits. Returns how many were listed. */
  async #checkConflicts(): Promise<number> {
    const model = this.#model;
    const records: ConflictRecord[] = [];
    for (const opened of this.#opened)
      for (const memoryId of model.scopes.keys()) records.push(...(await conflictsOf(opened.engram.store, memoryId)));
    for (const record of records)
      for (const field of record.fields) {
        const values = model.valuesOf(record.memoryId, field.group);
        for (const value of [field.keptValue, field.otherValue])
          if (!values.has(canonicalJson(value)))
            throw new Error(
              `conflict ${record.id} of ${record.memoryId} lists ${field.group} ${canonicalJson(value)}, which no machine wrote`,
            );
      }
    for (const lost of model.mustList()) {
      const listed = records.some(
        (record) =>
          record.memoryId === lost.memoryId &&
          record.fields.some((field) => field.group === lost.group && canonicalJson(field.otherValue) === lost.value),
      );
      if (!listed)
        throw new Error(
          `the edit of ${lost.memoryId}'s ${lost.group} to ${lost.value} (m${lost.event.machine + 1}, ${lost.event.label}) was lost and is listed as a conflict nowhere`,
        );
    }
    return records.length;
  }

  // ---- random text --------------------------------------------------------------------------

  #int(below: number): number {
    return Math.floor(this.#random() * below);
  }

  #words(count: number): string {
    return Array.from({ length: count }, () => WORDS[this.#int(WORDS.length)]!).join(' ');
  }

  #token(): string {
    this.#tokens += 1;
    return `zq${this.#options.seed}t${this.#tokens}k`;
  }

  #sentence(): string {
    const words = this.#words(6);
    return `${words[0]!.toUpperCase()}${words.slice(1)} ${this.#token()}.`;
  }
}

/** Every memory of a store, any scope or state. */
async function snapshot(opened: OpenedEngram): Promise<Map<string, Memory>> {
  const out = new Map<string, Memory>();
  let after: string | undefined;
  for (;;) {
    const page = await opened.engram.store.records!.exportMemories({
      ...(after !== undefined && { after }),
      limit: 1000,
    });
    for (const memory of page) out.set(memory.id, memory);
    if (page.length < 1000) return out;
    after = page.at(-1)!.id;
  }
}

function remoteMemoryIds(gitDir: string): Set<string> {
  let listing: string;
  try {
    listing = execFileSync('git', ['--git-dir', gitDir, 'ls-tree', '-r', '--name-only', 'engram'], {
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 1 << 28,
    }).toString();
  } catch {
    return new Set();
  }
  const ids = new Set<string>();
  for (const path of listing.split('\n')) {
    const parsed = parseLayoutPath(path);
    if ('kind' in parsed && parsed.kind === 'memory') ids.add(parsed.id);
  }
  return ids;
}

function describe(report: SyncReport): string {
  return report.remotes
    .map((outcome) =>
      outcome.status === 'synced'
        ? `pulled ${outcome.report.pulled.written}w ${outcome.report.pulled.deleted}d ${outcome.report.pulled.purged}p, pushed ${outcome.report.pushed.written}w ${outcome.report.pushed.tombstones}t, ${outcome.report.conflicts.length} conflict(s), ${outcome.report.compared}, attempt ${outcome.report.attempts}`
        : outcome.status,
    )
    .join('; ');
}

function describeEvents(model: SyncModel, memoryId: string): string {
  return model
    .eventsOf(memoryId)
    .map(
      (event) =>
        `#${event.id} m${event.machine + 1} ${event.kind} ${[...event.groups.keys()].join(',')} at ${new Date(event.at).toISOString()} (${event.label})`,
    )
    .join('; ');
}

function pickTwo(skip: number): number[] {
  return [0, 1, 2].filter((machine) => machine !== skip);
}

/** mulberry32, the suites' seeded source: a failing case can be replayed from its seed. */
const generator = (seed: number): (() => number) => createRandomSource(seed).next;
