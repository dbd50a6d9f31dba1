import type { SessionSummary } from '../../session/node/session-listing.js';
import type { ChatForgetResult, ChatMemoryReport } from './chat-agent-types.js';

/** The text of /memory: instruction files (like Claude Code's /memory), memories recalled and stored this session. */
export function formatMemoryReport(report: ChatMemoryReport): string {
  const lines: string[] = ['Instruction files (in load order; later ones win):'];
  if (report.instructions.length === 0) lines.push('  (none: add CLAUDE.md to the project, or ~/.claude/CLAUDE.md)');
  for (const file of report.instructions) {
    const scoped = file.paths ? ` · paths ${file.paths.join(', ')} (${file.active ? 'active' : 'inactive'})` : '';
    lines.push(
      `  ${file.scope.padEnd(7)} ${file.path} · ${file.lines} line${file.lines === 1 ? '' : 's'}, ${file.bytes} bytes${scoped}`,
    );
  }
  for (const warning of report.instructionWarnings) lines.push(`  warning: ${warning}`);
  lines.push(`Memories recalled this session (scopes ${report.scopes.join(', ')}):`);
  if (report.recalled.length === 0) lines.push('  (none yet)');
  for (const memory of report.recalled)
    lines.push(`  ${memory.id} ${memory.name} (${memory.turns} turn${memory.turns === 1 ? '' : 's'})`);
  lines.push('Memories stored by extraction this session:');
  if (report.stored.length === 0) lines.push('  (none yet: extraction runs in the background after each turn)');
  for (const memory of report.stored)
    lines.push(`  ${memory.id} ${memory.name} · ${memory.type}, ${memory.action} (${memory.origin})`);
  return lines.join('\n');
}

/** The text of /resume without an id: this project's sessions, newest first, the current one marked. */
export function formatSessionList(sessions: readonly SessionSummary[], currentId: string): string {
  if (sessions.length === 0) return 'No saved sessions in this project yet (a session is saved once it has a message).';
  const lines = ['Sessions of this project (newest first); /resume <id> continues one:'];
  for (const session of sessions.slice(0, 30)) {
    const label = session.title ?? session.lastPrompt ?? '';
    const marker = session.sessionId === currentId ? '*' : ' ';
    const count = session.messageCount === undefined ? '' : ` · ${session.messageCount} messages`;
    lines.push(
      `${marker} ${session.sessionId} · ${session.updatedAt}${count}${label ? ` · ${oneLine(label, 60)}` : ''}`,
    );
  }
  if (sessions.length > 30) lines.push(`  … and ${sessions.length - 30} older`);
  return lines.join('\n');
}

/** The text of /forget's answer. */
export function formatForgetResult(result: ChatForgetResult): string {
  if (result.status === 'archived')
    return `Forgot ${result.id} (${result.name}): archived, out of recall (engram restore ${result.id} brings it back).`;
  const listed = result.candidates.map((candidate) => `  ${candidate.id} ${candidate.name}`).join('\n');
  if (result.status === 'ambiguous') return `Several memories match; nothing was forgotten. Name one by id:\n${listed}`;
  return `No memory clearly matches; nothing was forgotten.${listed ? ` Closest:\n${listed}` : ''}`;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
