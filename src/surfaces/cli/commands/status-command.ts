import { readFileSync } from 'node:fs';
import { selectLanguageModel } from '../../../adapters/models/create-language-model.js';
import { WRAPPER_MODEL_CHECKPOINT } from '../../sdk/extraction-model-choice.js';
import { loadSettings } from '../../../node/load-settings.js';
import { openEngram } from '../../../node/open-engram.js';
import { isAgentInstalled } from '../../claude-code/agent-installs.js';
import { detectAgents } from '../../claude-code/agent-presence.js';
import { AGENT_TARGETS } from './install-command.js';
import { claudeCodeLoadState } from '../../claude-code/claude-code-install.js';
import { duplicateServerWarning, otherEngramMcpServers } from '../../claude-code/claude-code-mcp-servers.js';
import { hookLogPath, readHookLog } from '../../claude-code/hook-log.js';
import { countSpooled } from '../../claude-code/hook-spool.js';
import { hookServerSocket } from '../../claude-code/hook-server-paths.js';
import { hookServerStatus } from '../../claude-code/hook-server-status.js';
import { noPositionals, type CommandDefinition, type CommandInvocation } from '../cli-command.js';
import { CLI_ACTOR, globalSettingFlags } from '../cli-engram.js';
import { formatFields } from '../table-format.js';

const LOG_LINES = 5;

/** `engram status`: whether Claude Code loads engram, the store and model in use, the queue, the last hook errors. */
export const statusCommand: CommandDefinition = {
  name: 'status',
  summary: 'Whether Claude Code loads engram, which store and model it uses, the last hook errors',
  usage: 'status [options]',
  options: {},
  details:
    'Never fails on a broken store or model: it says what is wrong. The hook log is <ENGRAM_HOME>/logs/claude-code-hooks.log (one JSON line per hook that answered without memory).',
  async run(invocation) {
    noPositionals(invocation);
    const status = await gatherStatus(invocation.io, globalSettingFlags(invocation.global));
    return { data: status.data, text: formatFields(statusFields(status)) };
  },
};

/** Everything `engram status` reports, as its --json prints it, with what the text lines read beside it. */
interface GatheredStatus {
  data: Record<string, unknown>;
  loaded: ReturnType<typeof loadSettings>;
  claudeCode: ReturnType<typeof claudeCodeLoadState>;
  otherMcpServers: ReturnType<typeof otherEngramMcpServers>;
  store: Record<string, unknown>;
  model: string;
  wrappers: string | undefined;
  vectorSearch: string;
  agents: Array<{ name: keyof typeof AGENT_TARGETS; state: { problems: string[] } }>;
  notInstalled: ReturnType<typeof detectAgents>;
  hookErrors: ReturnType<typeof readHookLog>;
  spooled: number;
  hookServer: Awaited<ReturnType<typeof hookServerStatus>>;
}

/** Reads the settings, opens the store and model (a failure is reported, not thrown), and asks each agent and the hook server. */
async function gatherStatus(
  io: CommandInvocation['io'],
  flags: ReturnType<typeof globalSettingFlags>,
): Promise<GatheredStatus> {
  const loaded = loadSettings({ cwd: io.cwd, env: io.env, flags });
  const claudeCode = claudeCodeLoadState(io.env, loaded.project.root);
  const otherMcpServers = otherEngramMcpServers(io.env, loaded.project.root, {
    cwd: io.cwd,
    servePort: loaded.settings.server.port,
  });
  const { settings } = loaded;
  const store: Record<string, unknown> = { url: redactUrl(settings.store.url) };
  let model = `none (offline: only explicit "remember that …" statements are extracted): ${offlineReason(settings)}`;
  let wrappers: string | undefined;
  // Without an embedder, full-text recall is the configuration: said here, not warned on every recall.
  let vectorSearch =
    settings.embedding.provider === 'none'
      ? 'off (no embedder configured: full-text recall; set embedding.provider to add it)'
      : `${settings.embedding.provider} configured`;
  try {
    const opened = await openEngram({
      cwd: io.cwd,
      env: io.env,
      flags,
      actor: CLI_ACTOR,
    });
    try {
      const { engram } = opened;
      const info = engram.storage.info();
      store.backend = info.backend;
      store.location = info.location;
      store.memories = (await engram.stats(engram.readScopes)).active;
      if (engram.jobs.available) store.queue = await engram.jobs.counts();
      if (engram.model) model = `${engram.model.provider} ${engram.model.modelId}`;
      wrappers = wrapperModel(await engram.storage.readNote(WRAPPER_MODEL_CHECKPOINT));
      const embedder = engram.embedder;
      if (embedder)
        vectorSearch = engram.storage.keepsVectors
          ? `on (${embedder.model})`
          : `unavailable: ${embedder.model} is configured but this store keeps no vectors (full-text recall)`;
    } finally {
      await opened.close();
    }
    store.ok = true;
  } catch (error) {
    store.ok = false;
    store.error = (error as Error).message;
  }
  // Every agent `engram install <agent>` ran for, with what would keep it from running engram now.
  const agents = (Object.keys(AGENT_TARGETS) as Array<keyof typeof AGENT_TARGETS>).flatMap((name) => {
    const state = agentState(name, io.env, loaded);
    return state === undefined ? [] : [{ name, state }];
  });
  const notInstalled = foundWithoutEngram(io.env, loaded.home);
  const hookErrors = readHookLog(loaded.home, LOG_LINES);
  const spooled = countSpooled(loaded.home);
  const hookServer = await hookServerStatus(loaded.home);
  const data = {
    spooled,
    hookServer: hookServer ?? null,
    claudeCode: { ...claudeCode, hooks: settings.hooks, otherMcpServers },
    ...Object.fromEntries(agents.map(({ name, state }) => [name, state])),
    ...(notInstalled.length > 0 && { foundWithoutEngram: notInstalled }),
    project: loaded.project,
    store,
    model,
    ...(wrappers !== undefined && { wrappers }),
    vectorSearch,
    hookLog: hookLogPath(loaded.home),
    hookErrors,
  };
  return {
    data,
    loaded,
    claudeCode,
    otherMcpServers,
    store,
    model,
    wrappers,
    vectorSearch,
    agents,
    notInstalled,
    hookErrors,
    spooled,
    hookServer,
  };
}

/** The text lines of `engram status`, one field a line. */
function statusFields(status: GatheredStatus): Array<[string, string]> {
  const { loaded, claudeCode, otherMcpServers, store, model, wrappers, vectorSearch, agents, notInstalled } = status;
  const { hookErrors, spooled, hookServer } = status;
  const { settings } = loaded;
  const queue = store.queue as Record<string, number> | undefined;
  return [
    [
      'claude code',
      claudeCode.loads
        ? `loads engram (enabled in ${claudeCode.enabledIn})`
        : `will NOT load engram: ${claudeCode.problems.join('; ')}`,
    ],
    ...agents.map(({ name, state }): [string, string] => [
      name,
      state.problems.length === 0 ? AGENT_TARGETS[name].ready : `will NOT run engram: ${state.problems.join('; ')}`,
    ]),
    ...notInstalled.map((entry): [string, string] => [
      entry.agent,
      `found (${entry.found ?? ''}), engram not installed: "engram install ${entry.agent}" (or --detect) adds it`,
    ]),
    ...(otherMcpServers.length > 0
      ? ([
          [
            'mcp server',
            otherMcpServers
              .map((other) =>
                claudeCode.loads
                  ? duplicateServerWarning(other)
                  : `also added as "${other.name}" (${other.scope} scope, ${other.file})`,
              )
              .join('\n'),
          ],
        ] as Array<[string, string]>)
      : []),
    [
      'hooks',
      `recall ${settings.hooks.recall ? 'on' : 'off'}, extraction ${settings.hooks.extract ? 'on' : 'off'}, deadline ${settings.hooks.deadlineMs} ms`,
    ],
    [
      'hook server',
      hookServer === undefined
        ? `not running (${settings.hooks.server ? 'the next prompt or session-start hook starts it' : 'hooks.server is off'})`
        : `running, pid ${hookServer.pid} since ${hookServer.since}, ${hookServer.requests} hook(s) answered; stop it: kill ${hookServer.pid} (or remove ${hookServerSocket(loaded.home)})`,
    ],
    ['project', `${loaded.project.scope} (from ${loaded.project.source})`],
    [
      'store',
      store.ok === true
        ? `${String(store.backend)} ${String(store.location)}: ${String(store.memories)} active memories here`
        : `${String(store.url)}: cannot open (${String(store.error)})`,
    ],
    ['model', model],
    ...(wrappers !== undefined ? ([['wrapped clients', wrappers]] as Array<[string, string]>) : []),
    ['vector search', vectorSearch],
    ...(queue
      ? ([
          [
            'extraction queue',
            `${queue.pending ?? 0} pending, ${queue.running ?? 0} running, ${queue.failed ?? 0} failed`,
          ],
        ] as Array<[string, string]>)
      : []),
    [
      'hook spool',
      spooled === 0
        ? 'empty'
        : `${spooled} event(s) not yet queued (${settings.hooks.worker ? "the hooks' worker" : 'engram serve'} or "engram queue run" queues them)`,
    ],
    ['hook log', hookLogPath(loaded.home)],
    [
      'last hook errors',
      hookErrors.length === 0
        ? 'none'
        : hookErrors.map((entry) => `${entry.at} ${entry.event} ${entry.status}: ${entry.message}`).join('\n'),
    ],
  ];
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@');
}

/** Why no model is configured (the reason the settings' selection gives). */
function offlineReason(settings: Parameters<typeof selectLanguageModel>[0]): string {
  try {
    const selection = selectLanguageModel(settings);
    return selection.provider === 'none' ? selection.reason : `${selection.provider} is selected`;
  } catch (error) {
    return (error as Error).message;
  }
}

/** What the last withMemory or AI SDK middleware extracted with, as it noted in the store. */
function wrapperModel(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const noted = JSON.parse(value) as Record<string, string | undefined>;
    const when = noted.at ? ` (noted ${noted.at})` : '';
    if (noted.provider === 'none') return `extraction: none: ${noted.reason ?? 'no model'}${when}`;
    const where = noted.endpoint ? ` at ${noted.endpoint}` : '';
    return `extraction: ${noted.provider} ${noted.model}${where}, chosen by ${noted.chosenBy}${when}`;
  } catch {
    return undefined;
  }
}

/** An installed agent's problems now (what would keep it from running engram); undefined when not installed. */
function agentState(
  name: keyof typeof AGENT_TARGETS,
  env: Record<string, string | undefined>,
  loaded: ReturnType<typeof loadSettings>,
): { problems: string[] } | undefined {
  try {
    if (!isAgentInstalled(loaded.home, name)) return undefined;
  } catch (error) {
    return { problems: [(error as Error).message] };
  }
  const read = (file: string): string | undefined => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  };
  return { problems: AGENT_TARGETS[name].description(env, loaded).problems(read) };
}

/** Agents found on this machine (agent-presence.ts) that engram is not installed in; Claude Code has its own line. */
function foundWithoutEngram(env: Record<string, string | undefined>, home: string): ReturnType<typeof detectAgents> {
  return detectAgents(env).filter((entry) => {
    if (entry.agent === 'claude-code' || entry.found === undefined) return false;
    try {
      return !isAgentInstalled(home, entry.agent);
    } catch {
      return false; // An unreadable record: the agent's own status line says so.
    }
  });
}
