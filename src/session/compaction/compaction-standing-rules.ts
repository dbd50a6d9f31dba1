import type { ContentBlock } from '../../contracts/language-model.js';
import type { CompactableMessage } from './compaction-summary.js';
import { detectExplicitMemory } from '../../remember/explicit-memory.js';

/**
 * "A compaction must never lose the user's standing rules" (issue 5). The rules the user stated in
 * the conversation ("always use tabs", "from now on, …", "I prefer …") are found by the same
 * explicit-memory rules the write path uses, asked for word for word in the summary prompt, and
 * appended to a summary (or to the session notes used as one) that left any of them out. A summary
 * message carries them in a section of its own, so the next compaction finds them again.
 */

/** The heading of the section that carries the rules in a summary message. */
export const STANDING_RULES_HEADING = 'Standing instructions from the user (still in force):';

function userText(message: CompactableMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((block): block is Extract<ContentBlock, { type: 'text' }> => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}

/** The rules carried by an earlier summary's standing-rules section. */
function rulesInSummary(text: string): string[] {
  const start = text.indexOf(STANDING_RULES_HEADING);
  if (start < 0) return [];
  const rules: string[] = [];
  for (const line of text
    .slice(start + STANDING_RULES_HEADING.length)
    .split('\n')
    .slice(1)) {
    const item = /^- (.+)$/.exec(line.trim());
    if (!item) break;
    rules.push(item[1]!.trim());
  }
  return rules;
}

/**
 * The standing rules of a conversation, oldest first, each once: statements in the user's own
 * messages (meta messages are engram's, not the user's) and the rules an earlier summary carried.
 */
export function standingRules(messages: readonly CompactableMessage[]): string[] {
  const rules: string[] = [];
  const add = (rule: string): void => {
    if (!rules.some((known) => sameRule(known, rule))) rules.push(rule);
  };
  for (const message of messages) {
    if (message.role !== 'user') continue;
    const text = userText(message);
    if (message.compactSummary) {
      rulesInSummary(text).forEach(add);
      continue;
    }
    if (message.meta || text.trim() === '') continue;
    let intents;
    try {
      intents = detectExplicitMemory(text);
    } catch {
      // Too long to be a statement the user typed (pasted text): no rules in it.
      continue;
    }
    for (const intent of intents) if (intent.kind === 'remember') add(intent.content);
  }
  return rules;
}

function normalized(text: string): string {
  return text
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[.!]+$/, '')
    .trim();
}

function sameRule(a: string, b: string): boolean {
  return normalized(a) === normalized(b);
}

/** The rules a summary does not contain word for word (case and trailing full stops aside). */
export function missingRules(summary: string, rules: readonly string[]): string[] {
  const haystack = summary.toLowerCase().replace(/\s+/g, ' ');
  return rules.filter((rule) => !haystack.includes(normalized(rule)));
}

/**
 * The summary followed by a standing-rules section listing every rule, so the rules survive even a
 * summarizer (or notes) that left one out, and the next compaction can read them back. A section
 * already in the summary is replaced. Unchanged when there are no rules.
 */
export function withStandingRules(summary: string, rules: readonly string[]): string {
  if (rules.length === 0) return summary;
  let body = summary;
  const start = body.indexOf(STANDING_RULES_HEADING);
  if (start >= 0) {
    const lines = body.slice(start).split('\n');
    let end = 1;
    while (end < lines.length && /^- /.test(lines[end]!.trim())) end += 1;
    body = body.slice(0, start) + lines.slice(end).join('\n');
  }
  return `${body.trim()}\n\n${STANDING_RULES_HEADING}\n${rules.map((rule) => `- ${rule}`).join('\n')}`;
}
