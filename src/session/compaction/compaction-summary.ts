import type { ContentBlock, ToolResultBlock } from '../../contracts/language-model.js';

/**
 * The text side of layer 4 compaction (SPEC §2): the nine-part summary prompt, cleaning the
 * summarizer's answer, the user message that carries the summary after the boundary (FORMATS §2.3),
 * and the message-list surgery a compaction request needs (API-round groups, dropping the oldest
 * ones when the request is too long, stripping bulky content). Pure: no I/O, inputs never mutated.
 */

/** The least a message needs here; SessionMessage satisfies it. */
export interface CompactableMessage {
  role: 'user' | 'assistant';
  content: string | readonly ContentBlock[];
  meta?: boolean;
  compactSummary?: boolean;
}

/** The nine sections every summary has, in order. */
export const COMPACTION_SUMMARY_SECTIONS = [
  'Primary Request and Intent',
  'Key Technical Concepts',
  'Files and Code Sections',
  'Errors and fixes',
  'Problem Solving',
  'All user messages',
  'Pending Tasks',
  'Current Work',
  'Optional Next Step',
] as const;

// A section title at the start of a line, as summarizers write them: "1. Title:", "## Title",
// "**Title**", "- 3) Title"; "&" for "and", any case and spacing.
function sectionPattern(title: string): RegExp {
  const words = title
    .split(' ')
    .map((word) => (word.toLowerCase() === 'and' ? '(?:and|&)' : word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(
    `^[\\t ]*(?:#{1,6}[\\t ]*)?(?:[-*+][\\t ]+)?[*_]{0,2}[\\t ]*(?:\\d{1,2}[.):][\\t ]*)?[*_]{0,2}[\\t ]*${words.join('\\s+')}\\b`,
    'im',
  );
}

const SECTION_PATTERNS = COMPACTION_SUMMARY_SECTIONS.map((title) => ({ title, pattern: sectionPattern(title) }));

/**
 * The sections of the nine-part summary that a summary lacks, in order ([] when it has all nine).
 * A summary without them would replace the conversation with less than SPEC's summary holds.
 */
export function missingSummarySections(summary: string): string[] {
  return SECTION_PATTERNS.filter(({ pattern }) => !pattern.test(summary)).map(({ title }) => title);
}

/** What the summarizer is told when its first answer lacked sections: the same request, once more, naming them. */
export function summaryRetryInstruction(instruction: string, missing: readonly string[]): string {
  return `${instruction}\n\nYour previous answer could not be used: its summary lacked ${missing.length === 1 ? 'the section' : 'the sections'} ${missing.map((title) => `"${title}"`).join(', ')}. Answer again with all nine sections, numbered and titled as above, inside <summary></summary>; write "None." under a section that has nothing to say.`;
}

/** The instruction sent to the summarizer after the conversation it summarizes. */
export const COMPACTION_SUMMARY_PROMPT = `Your task is to write a detailed summary of the conversation so far. It will replace the conversation: whoever continues the work will see only this summary (and the system prompt), so it must hold every fact, decision, file and instruction needed to carry on without loss.

Do not call any tools. Answer with text only.

Before the summary, you may think in an <analysis> block: walk through the conversation in order and note, for each part, what the user asked, what was done, the key decisions, file names, code, errors and fixes, and what the user said about how to work. This block is removed before the summary is used.

Then write the summary inside <summary></summary>, with these nine sections:

1. Primary Request and Intent: everything the user asked for, in detail, and why.
2. Key Technical Concepts: the technologies, frameworks and ideas the work relies on.
3. Files and Code Sections: every file read, created or changed, why it matters, what changed, with the important code snippets in full.
4. Errors and fixes: each error met and how it was fixed; any feedback the user gave about it.
5. Problem Solving: problems solved and troubleshooting still going on.
6. All user messages: list every message the user wrote (not tool results), in order. Copy every instruction, rule, preference and correction VERBATIM, above all standing rules such as "always …", "never …" or "from now on …": they stay in force after the summary.
7. Pending Tasks: what the user asked for that is not done yet.
8. Current Work: precisely what was being worked on just before this summary, with file names and code.
9. Optional Next Step: the next step, only if it follows directly from the user's most recent request; quote the latest request verbatim so the task is not misread.

Answer in this shape:

<analysis>
[your thinking]
</analysis>

<summary>
1. Primary Request and Intent:
   …
9. Optional Next Step:
   …
</summary>`;

/** How a summary message opens (FORMATS §2.3: Claude Code's `isCompactSummary` user message). */
export const COMPACT_SUMMARY_OPENING =
  'This session is being continued from a previous conversation that ran out of context.';

/** What goes into the summarizer instruction besides the fixed prompt. */
export interface SummaryInstructionOptions {
  /** The user's `/compact <instructions>`. */
  customInstructions?: string;
  /** Text the pre-compact hooks returned. */
  hookInstructions?: readonly string[];
  /** Standing rules found in the conversation: the summary must carry them word for word. */
  standingRules?: readonly string[];
}

/** The full instruction for one summarizer request: the nine-part prompt, then rules, hook text and the user's own instructions. */
export function summaryInstruction(options: SummaryInstructionOptions = {}): string {
  const parts = [COMPACTION_SUMMARY_PROMPT];
  if (options.standingRules && options.standingRules.length > 0) {
    parts.push(
      `The user gave these standing rules; copy each one word for word into section 6:\n${options.standingRules.map((rule) => `- ${rule}`).join('\n')}`,
    );
  }
  const hooks = (options.hookInstructions ?? []).map((text) => text.trim()).filter((text) => text !== '');
  if (hooks.length > 0) parts.push(`Additional instructions from the pre-compact hooks:\n${hooks.join('\n\n')}`);
  const custom = options.customInstructions?.trim();
  if (custom) parts.push(`Additional instructions from the user for this summary:\n${custom}`);
  return parts.join('\n\n');
}

/**
 * The summary in the summarizer's answer: `<analysis>` blocks removed (an unclosed one up to
 * `<summary>` or the end), the inside of `<summary>` when there is one, blank-line runs collapsed.
 * Empty when nothing usable is left.
 */
export function stripAnalysis(text: string): string {
  let rest = text.replace(/<analysis>[\s\S]*?<\/analysis>/gi, '');
  const open = rest.search(/<analysis>/i);
  if (open >= 0) {
    const summaryStart = rest.slice(open).search(/<summary>/i);
    rest = summaryStart >= 0 ? rest.slice(0, open) + rest.slice(open + summaryStart) : rest.slice(0, open);
  }
  const inside = /<summary>([\s\S]*?)(?:<\/summary>|$)/i.exec(rest);
  const summary = inside ? inside[1]! : rest;
  return summary
    .replace(/<\/?summary>/gi, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export interface CompactSummaryTextOptions {
  /** Where the whole transcript is, so the model can look up exact details from before the boundary. */
  transcriptPath?: string;
  /** The summary is the session notes (no summarizer ran). */
  fromNotes?: boolean;
  /** Recent messages follow the summary verbatim. */
  recentMessagesKept?: boolean;
  /** `auto`: the model is told to carry on with the task without asking; `manual`: the user speaks next. */
  trigger?: 'auto' | 'manual';
}

/** The user message that carries the summary after a compact boundary (FORMATS §2.3). */
export function compactSummaryText(summary: string, options: CompactSummaryTextOptions = {}): string {
  const source = options.fromNotes
    ? 'The session notes below were kept up to date during the earlier portion of the conversation and summarize it.'
    : 'The summary below covers the earlier portion of the conversation.';
  const parts = [`${COMPACT_SUMMARY_OPENING} ${source}`, summary.trim()];
  if (options.transcriptPath) {
    parts.push(
      `If you need specific details from before compaction (exact code snippets, error messages, content you produced), read the full transcript at: ${options.transcriptPath}`,
    );
  }
  if (options.recentMessagesKept) parts.push('Recent messages are preserved verbatim after this summary.');
  if (options.trigger !== 'manual') {
    parts.push(
      'Continue the conversation from where it left off without asking the user any further questions. Continue with the last task that you were asked to work on.',
    );
  }
  return parts.join('\n\n');
}

function isToolResultMessage(message: CompactableMessage): boolean {
  return (
    message.role === 'user' &&
    typeof message.content !== 'string' &&
    message.content.some((block) => block.type === 'tool_result')
  );
}

/**
 * Splits messages into API-round groups: a group starts at each user turn (a user message that is
 * not tool results) and at each assistant message that answers tool results (a new round of the
 * same turn). A tool_use and its tool_result always fall in the same group, so removing whole
 * groups from the front never orphans a tool result. Leading messages before any start form group 0.
 */
export function messageGroups<T extends CompactableMessage>(messages: readonly T[]): T[][] {
  const groups: T[][] = [];
  messages.forEach((message, index) => {
    const previous = messages[index - 1];
    const starts =
      groups.length === 0 ||
      (message.role === 'user' && !isToolResultMessage(message)) ||
      (message.role === 'assistant' && previous !== undefined && isToolResultMessage(previous));
    if (starts) groups.push([message]);
    else groups.at(-1)!.push(message);
  });
  return groups;
}

/**
 * The messages without their `count` oldest groups. A group that opens with an earlier compaction's
 * summary is kept (it is the only record of what came before), and the newest group is never
 * dropped, so the answer may drop fewer than asked. Returns a new array.
 */
export function dropOldestGroups<T extends CompactableMessage>(messages: readonly T[], count: number): T[] {
  const groups = messageGroups(messages);
  const droppable = groups.map((group, index) => index < groups.length - 1 && group[0]!.compactSummary !== true);
  let left = Math.max(0, Math.floor(count));
  const kept: T[] = [];
  groups.forEach((group, index) => {
    if (left > 0 && droppable[index]) {
      left -= 1;
      return;
    }
    kept.push(...group);
  });
  return kept;
}

/** How many groups `dropOldestGroups` could drop from these messages at most. */
export function droppableGroupCount(messages: readonly CompactableMessage[]): number {
  const groups = messageGroups(messages);
  return groups.filter((group, index) => index < groups.length - 1 && group[0]!.compactSummary !== true).length;
}

export interface StripBulkyOptions {
  /** Longer tool results (and string tool inputs) keep their head and tail around a cut marker. */
  toolResultMaxChars: number;
}

// Inline images (data URIs) carry nothing a text summary can use.
const DATA_URI = /data:[a-z]+\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=]{200,}/gi;

function cutMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars * 0.7);
  const tail = Math.floor(maxChars * 0.2);
  return `${text.slice(0, head)}\n[… ${text.length - head - tail} characters cut for the summary …]\n${text.slice(text.length - tail)}`;
}

function stripText(text: string): string {
  return text.replace(DATA_URI, '[image data removed]');
}

function stripBlock(block: ContentBlock, maxChars: number): ContentBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: stripText(block.text) };
    case 'tool_result': {
      const stripped: ToolResultBlock = { ...block, content: cutMiddle(stripText(String(block.content)), maxChars) };
      return stripped;
    }
    case 'tool_use': {
      const input = Object.fromEntries(
        Object.entries(block.input ?? {}).map(([key, value]) => [
          key,
          typeof value === 'string' ? cutMiddle(stripText(value), maxChars) : value,
        ]),
      );
      return { ...block, input };
    }
    default:
      // Images, documents and other attachments a transcript may carry: a placeholder names what was there.
      return {
        type: 'text',
        text: `[${String((block as { type?: unknown }).type ?? 'attachment')} removed for the summary]`,
      };
  }
}

/**
 * Copies of the messages fit to send a summarizer: inline images and attachments replaced by a
 * placeholder, very long tool results (and long string tool inputs) cut to their head and tail.
 */
export function stripBulkyContent<T extends CompactableMessage>(
  messages: readonly T[],
  options: StripBulkyOptions,
): T[] {
  return messages.map((message) => ({
    ...message,
    content:
      typeof message.content === 'string'
        ? stripText(message.content)
        : message.content.map((block) => stripBlock(block, options.toolResultMaxChars)),
  }));
}
