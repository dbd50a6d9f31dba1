import { EngramError, isEngramError } from '../../../kernel/errors.js';
import { detectAgents, whereLooked } from '../../claude-code/agent-presence.js';
import type { CommandInvocation, CommandOutput } from '../cli-command.js';

/** One agent's outcome under --detect. */
export interface DetectedOutcome {
  agent: string;
  found?: string;
  outcome: 'done' | 'not-found' | 'failed';
  /** The agent's own command output (done) or its error (failed). */
  data?: unknown;
  error?: { code: string; message: string };
}

/**
 * `engram install --detect` / `uninstall --detect`: runs the command once per agent detection found
 * (agent-presence.ts), exactly as `engram install <agent>` would, and reports one line per agent:
 * its command's first line (what it did), or "not found" with where it looked, or why it failed. One
 * agent's broken config file does not stop the others; the command then exits non-zero, naming it.
 * Uninstall also visits agents no longer found (their files may still hold engram's entries): each
 * says "not installed; nothing changed" when there is nothing to take out.
 */
export async function runForDetectedAgents(
  invocation: CommandInvocation,
  runOne: (invocation: CommandInvocation) => Promise<CommandOutput>,
  options: { everyAgent: boolean },
): Promise<CommandOutput> {
  if (invocation.positionals.length > 0)
    throw new EngramError(
      'INVALID_INPUT',
      `engram ${invocation.name} --detect takes no agent name (got ${JSON.stringify(invocation.positionals.join(' ').slice(0, 40))}): drop --detect to name one.`,
    );
  const outcomes: DetectedOutcome[] = [];
  const lines: string[] = [];
  let firstCode: EngramError['code'] | undefined;
  for (const detected of detectAgents(invocation.io.env)) {
    const where = detected.found === undefined ? '' : ` (found: ${detected.found})`;
    if (detected.found === undefined && !options.everyAgent) {
      outcomes.push({ agent: detected.agent, outcome: 'not-found' });
      lines.push(`${detected.agent}: not found (${whereLooked(detected.agent, invocation.io.env)})`);
      continue;
    }
    try {
      const output = await runOne({
        ...invocation,
        positionals: [detected.agent],
        values: { ...invocation.values, detect: false },
      });
      outcomes.push({
        agent: detected.agent,
        ...(detected.found !== undefined && { found: detected.found }),
        outcome: 'done',
        data: output.data,
      });
      const [first = '', ...rest] = output.text.split('\n');
      lines.push(
        `${detected.agent}: ${first.replace(/:$/, '')}${where}`,
        ...rest.filter((line) => line.startsWith('warning: ')).map((line) => `  ${line}`),
      );
    } catch (error) {
      const code = isEngramError(error) ? error.code : 'INTERNAL';
      firstCode ??= code;
      const message = (error as Error).message;
      outcomes.push({ agent: detected.agent, outcome: 'failed', error: { code, message } });
      lines.push(`${detected.agent}: FAILED${where}: ${message}`);
    }
  }
  const failed = outcomes.filter((entry) => entry.outcome === 'failed');
  if (failed.length > 0) {
    throw new EngramError(
      firstCode ?? 'INTERNAL',
      [
        ...lines,
        `${failed.length} agent(s) failed (${failed.map((entry) => entry.agent).join(', ')}); the others are done. Fix what is named above and run "engram ${invocation.name} --detect" again.`,
      ].join('\n'),
      { details: { agents: outcomes } },
    );
  }
  if (outcomes.every((entry) => entry.outcome === 'not-found'))
    lines.push(
      `No coding agent found here; nothing changed. engram looks for each agent's config folder and its command on PATH.`,
    );
  return { data: { agents: outcomes }, text: lines.join('\n') };
}
