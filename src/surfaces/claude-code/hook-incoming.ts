import { readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import { hookProtocol, readAgentHookInput } from './agent-hook-protocols.js';
import { HOOK_EVENTS, MAX_HOOK_INPUT_BYTES } from './hook-input.js';
import { writeHookLog, type HookLogEntry } from './hook-log.js';
import { spoolHookEvent } from './hook-queue.js';
import { sessionProjectFolder } from './hook-session-root.js';
import { isAbandoned, spoolFolder, type SpoolEntry } from './hook-spool.js';
import { RECORDED_ENV, recordedHookEnv } from './hook-recorded-env.js';

/**
 * Raw events of the queueing hooks' fast path (plugins/engram/scripts/hook.sh): a POSIX `sh`
 * hook that starts no Node, so it cannot read settings, resolve the session's project or fingerprint
 * the store. It writes what the Node hook would have read instead, one file per event in
 * `<ENGRAM_HOME>/spool/incoming/ev-<pid>-<n>.json` (0600, written under a `.part` name and renamed
 * when whole): a first line of JSON `{"v":1,"event","agent"?,"pwd","env"}` (the hook's event, the
 * agent when not Claude Code, physical cwd and the environment variables the Node hook's decisions
 * read, RECORDED_ENV) and then the hook's stdin as the agent sent it, read by its protocol. An
 * adopter (`engram.mjs hook adopt-events`, which the sh hook starts when none runs; every spool
 * drainer too) turns each into the spool line the Node hook would have written, by the same code
 * (spoolHookEvent: hooks.extract, the session's project folder, the transcript checks, the store's
 * worker), then removes it. Adopting twice adds nothing (a spool line
 * queued twice adds nothing), so a file is taken by one rename and a dead adopter's is taken over.
 */

/** The worker-lock name of the adopter (hook-worker-lock.ts): `spool/worker-incoming.pid`. */
export const ADOPTER_LOCK = 'incoming';
/** More raw events than this waiting: the sh hook hands the event to the Node hook instead. */
export const INCOMING_MAX_FILES = 1_000;
/** A `.part` file older than this is a hook that died writing it. */
const PART_STALE_MS = 10 * 60_000;
const RAW = /^ev-\d+-\d+\.json$/;
const TAKEN = /^(ev-\d+-\d+\.json)\.(\d+)\.taking$/;
const PART = /^ev-\d+-\d+\.json\.part$/;

export function incomingFolder(home: string): string {
  return join(spoolFolder(home), 'incoming');
}

/** Raw events waiting (taken ones included), for `engram status` and the adopter's last look. */
export function countIncoming(home: string): number {
  try {
    return readdirSync(incomingFolder(home)).filter((name) => RAW.test(name) || TAKEN.test(name)).length;
  } catch {
    return 0;
  }
}

export interface AdoptOptions {
  home: string;
  /** The adopter's own environment: what an event did not record (the secrets) comes from it. */
  env: NodeJS.ProcessEnv;
  /** Start the store's worker as the Node hook would (the adopter process); a drainer that runs the spool itself does not. */
  startWorkers: boolean;
  now?: number;
}

export interface AdoptReport {
  /** Raw events turned into spool lines (or discarded as the Node hook would: hooks.extract off, no transcript). */
  adopted: number;
  /** Raw events that were not an event (logged). */
  skipped: number;
}

/** Adopts every raw event waiting now, oldest first. Never throws. */
export function adoptIncoming(options: AdoptOptions): AdoptReport {
  const { home } = options;
  const now = options.now ?? Date.now();
  const folder = incomingFolder(home);
  const report: AdoptReport = { adopted: 0, skipped: 0 };
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return report;
  }
  const waiting: { path: string; at: number }[] = [];
  for (const name of names) {
    const path = join(folder, name);
    const at = mtime(path);
    if (at === undefined) continue;
    const taken = TAKEN.exec(name);
    // A taken file whose adopter is gone (or older than a spool claim may be) is taken over.
    if (RAW.test(name) || (taken && isAbandoned(Number(taken[2]), at, now))) waiting.push({ path, at });
    else if (PART.test(name) && now - at > PART_STALE_MS) rmSync(path, { force: true });
  }
  waiting.sort((a, b) => a.at - b.at || a.path.localeCompare(b.path));
  for (const { path, at } of waiting) {
    const base = path.replace(/\.\d+\.taking$/, '');
    const mine = `${base}.${process.pid}.taking`;
    try {
      renameSync(path, mine);
    } catch {
      continue; // Another adopter took it.
    }
    if (adoptOne(mine, at, options)) report.adopted += 1;
    else report.skipped += 1;
    rmSync(mine, { force: true });
  }
  return report;
}

/** One raw event into the spool, as the Node hook would have done it; false when it is not an event (logged). */
function adoptOne(path: string, at: number, options: AdoptOptions): boolean {
  const { home } = options;
  const started = Date.now();
  let event = 'hook';
  let sessionId: string | undefined;
  const log = (entry: Omit<HookLogEntry, 'at' | 'event'>): void =>
    writeHookLog(home, {
      at: new Date().toISOString(),
      event,
      ...(sessionId !== undefined && { sessionId }),
      ...entry,
      ms: entry.ms ?? Date.now() - started,
    });
  try {
    const text = readFileSync(path, 'utf8');
    const end = text.indexOf('\n');
    const header = readHeader(end < 0 ? text : text.slice(0, end));
    if (header === undefined) {
      log({ status: 'skipped', message: 'a fast-path hook event with an unreadable header was dropped' });
      return false;
    }
    event = header.event;
    const stdin = end < 0 ? '' : text.slice(end + 1);
    if (Buffer.byteLength(stdin) > MAX_HOOK_INPUT_BYTES) {
      log({ status: 'skipped', message: `stdin is over ${MAX_HOOK_INPUT_BYTES} bytes` });
      return false;
    }
    const protocol = hookProtocol(header.agent);
    if (protocol === undefined) {
      log({
        status: 'skipped',
        message: `a fast-path event of an unknown agent ${JSON.stringify(header.agent)} was dropped`,
      });
      return false;
    }
    // The hook's environment as recorded, over the adopter's own for what was not recorded.
    const env = recordedHookEnv(options.env, header.env);
    // The home is the one whose spool holds the event (the sh hook wrote it there from the same variables).
    if (!env.ENGRAM_HOME) env.ENGRAM_HOME = home;
    const parsed = readAgentHookInput(protocol, stdin, env);
    if (!parsed.input) {
      log({ status: 'skipped', message: parsed.problem ?? 'unreadable stdin' });
      return false;
    }
    const input = parsed.input;
    sessionId = input.sessionId;
    const cwd = sessionProjectFolder({ home: engramHome(env), input, env, cwd: header.pwd, protocol });
    if (cwd === undefined) {
      const named = input.cwd ?? header.pwd;
      log({ status: 'skipped', message: `the hook's cwd ${JSON.stringify(named.slice(0, 200))} is not a folder` });
      return false;
    }
    const loaded = loadSettings({ cwd, env });
    spoolHookEvent(header.event, input, cwd, loaded, log, {
      env,
      at: new Date(at).toISOString(),
      startWorker: options.startWorkers,
    });
    return true;
  } catch (error) {
    log({ status: 'failed', message: error instanceof Error ? error.message : String(error) });
    return false;
  }
}

interface RawHeader {
  event: SpoolEntry['event'];
  /** The agent whose hook wrote it (its protocol reads the stdin); none: Claude Code. */
  agent?: string;
  pwd: string;
  env: Record<string, string>;
}

const QUEUEING_EVENTS = new Set<string>([HOOK_EVENTS.stop, HOOK_EVENTS['pre-compact'], HOOK_EVENTS['session-end']]);

function readHeader(line: string): RawHeader | undefined {
  const header = readRawHeader(line, QUEUEING_EVENTS, RECORDED_ENV);
  if (header === undefined || (header.agent !== undefined && typeof header.agent !== 'string')) return undefined;
  return {
    event: header.event as SpoolEntry['event'],
    ...(typeof header.agent === 'string' && header.agent !== '' && { agent: header.agent }),
    pwd: header.pwd,
    env: header.env,
  };
}

/**
 * A raw event's header line (`{"v":1,"event","pwd","env"}`, and `agent` from the hook server's
 * client), or undefined when it is not one: an event of `events`, an absolute pwd, and of `env` only
 * the variables `names` lists.
 */
export function readRawHeader(
  line: string,
  events: ReadonlySet<string>,
  names: readonly string[],
): { event: string; agent?: unknown; pwd: string; env: Record<string, string> } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const record = value as { v?: unknown; event?: unknown; agent?: unknown; pwd?: unknown; env?: unknown };
  if (record.v !== 1 || typeof record.event !== 'string' || !events.has(record.event)) return undefined;
  if (typeof record.pwd !== 'string' || !record.pwd.startsWith('/')) return undefined;
  const env: Record<string, string> = {};
  if (record.env !== null && typeof record.env === 'object') {
    const recorded = new Set(names);
    for (const [name, text] of Object.entries(record.env as Record<string, unknown>))
      if (recorded.has(name) && typeof text === 'string') env[name] = text;
  }
  return { event: record.event, agent: record.agent, pwd: record.pwd, env };
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}
