import type {
  Conversation,
  ConversationMessage,
  ConversationToolCall,
  ConversationToolResult,
} from '../../contracts/conversation.js';
import { MAX_CONVERSATION_ID_LENGTH } from '../../contracts/conversation.js';
import {
  objectField,
  readTranscriptLines,
  stringField,
  type TranscriptLine,
  type TranscriptLineOptions,
} from '../../kernel/transcript-lines.js';

/**
 * Claude Code session transcripts (`~/.claude/projects/<project>/<sessionId>.jsonl`, FORMATS.md §2).
 * The lines form a DAG through `parentUuid`; rewinds and edits leave sibling branches. The
 * conversation is the latest branch: from the last user or assistant line back to the root,
 * crossing compact boundaries through `logicalParentUuid`. Progress, system, attachment and other
 * lines are links of the chain but not messages. One API response is written as several assistant
 * lines (one content block each, same `message.id`): they become one message. A link to a line that
 * is not in the file (lost, torn, or a compact boundary whose logical parent is gone) does not end the
 * conversation: the walk goes on from the line before it in the file, and says so. Nothing is left
 * out uncounted: unreadable lines and message lines without a usable uuid are `skippedLines`,
 * message lines off the latest branch are `offBranchLines`, each with a warning.
 */

/** The result of reading a transcript: the conversation, and what was skipped and why. */
export interface ParsedTranscript {
  conversation: Conversation;
  warnings: string[];
  /** Lines that could not be used (torn, not JSON, too long; a message line without a usable uuid). */
  skippedLines: number;
  /**
   * Readable user and assistant lines the conversation does not hold: on a branch a rewind or an edit
   * left, or the file's other conversation (sidechain lines beside the main one). Readers without
   * branches leave it out.
   */
  offBranchLines?: number;
  /**
   * The file holds only a helper's (subagent's) lines: its conversation is kept under a session id of
   * its own (`<parent session>:agent-<agent id>`), so reading it never moves the parent session's cursor.
   */
  sidechain?: boolean;
}

export interface ClaudeCodeTranscriptOptions extends TranscriptLineOptions {
  /** Used when no line names its session (default `claude-code`). */
  sessionId?: string;
}

/** Line types that are messages; every other type with a uuid is only a link of the chain. */
const MESSAGE_TYPES = new Set(['user', 'assistant']);
/** A user line whose text is one of these was produced by Claude Code, not typed. */
const GENERATED_USER_TEXT =
  /^\s*(?:<command-(?:name|message|args)>|<local-command-(?:stdout|stderr)>|\[Request interrupted by user)/;
const MEMORY_CONTEXT_TAG = '<memory_context>';
/** Gaps in the parentUuid chain named one by one; past this many, one line counts the rest. */
const MAX_GAP_WARNINGS = 10;

interface ChainNode {
  uuid: string;
  line: TranscriptLine;
}

/** Rebuilds the latest branch of a Claude Code transcript as a conversation. Pure: takes the file's text. */
export function parseClaudeCodeTranscript(text: string, options: ClaudeCodeTranscriptOptions = {}): ParsedTranscript {
  const read = readTranscriptLines(text, options);
  const warnings = [...read.warnings];
  const byUuid = new Map<string, ChainNode>();
  const previousInFile = new Map<string, string>();
  const previousInLane: Record<'main' | 'sidechain', string | undefined> = { main: undefined, sidechain: undefined };
  let leaf: ChainNode | undefined;
  let sidechainLeaf: ChainNode | undefined;
  let skippedLines = read.skipped;
  const messageNodes: ChainNode[] = [];
  for (const line of read.lines) {
    const uuid = stringField(line.record, 'uuid');
    if (
      uuid === undefined ||
      uuid.length === 0 ||
      uuid.length > MAX_CONVERSATION_ID_LENGTH ||
      /[\u0000-\u001F]/.test(uuid)
    ) {
      // Other line types (summaries, snapshots, queue operations) have no uuid; a message line must.
      const type = stringField(line.record, 'type');
      if (type === 'user' || type === 'assistant' || type === 'system') {
        skippedLines += 1;
        warnings.push(`line ${line.line} is a ${type} line without a usable uuid: skipped`);
      }
      continue;
    }
    // A uuid written twice (a resumed session re-appending) keeps its first line.
    if (byUuid.has(uuid)) continue;
    const node = { uuid, line };
    byUuid.set(uuid, node);
    // The line before, in the same conversation: a helper's sidechain lines between are not the main chain's.
    const lane = line.record.isSidechain === true ? 'sidechain' : 'main';
    const previousUuid = previousInLane[lane];
    if (previousUuid !== undefined) previousInFile.set(uuid, previousUuid);
    previousInLane[lane] = uuid;
    const type = stringField(line.record, 'type');
    if (type !== undefined && MESSAGE_TYPES.has(type)) {
      messageNodes.push(node);
      if (line.record.isSidechain !== true) leaf = node;
      else sidechainLeaf = node;
    }
  }
  // A helper's own file (subagents/agent-<id>.jsonl) holds sidechain lines only: its conversation is theirs.
  const sidechain = leaf === undefined && sidechainLeaf !== undefined;
  leaf ??= sidechainLeaf;
  const chain = leaf ? walkBack(leaf, byUuid, previousInFile, warnings) : [];
  const onChain = new Set(chain.map((node) => node.uuid));
  const offBranchLines = messageNodes.filter((node) => !onChain.has(node.uuid)).length;
  if (offBranchLines > 0)
    warnings.push(
      `${offBranchLines} user or assistant line${offBranchLines === 1 ? ' is' : 's are'} not on the latest branch (left by a rewind or an edit, or another conversation in the file): left out`,
    );
  const messages = chainToMessages(chain);
  const named =
    (leaf && validId(stringField(leaf.line.record, 'sessionId'))) ??
    read.lines.map((line) => validId(stringField(line.record, 'sessionId'))).find((id) => id !== undefined) ??
    options.sessionId ??
    'claude-code';
  // Sidechain lines carry the parent's sessionId: the helper's own id keeps the two cursors apart.
  const agentId = sidechain && leaf ? (validId(stringField(leaf.line.record, 'agentId')) ?? 'sidechain') : undefined;
  const sessionId = agentId === undefined ? named : `${named}:agent-${agentId}`.slice(0, MAX_CONVERSATION_ID_LENGTH);
  return {
    conversation: { sessionId, messages },
    warnings,
    skippedLines,
    offBranchLines,
    ...(sidechain && { sidechain: true }),
  };
}

/**
 * Walks from the leaf to the root: parentUuid, or logicalParentUuid at a compact boundary, or the
 * previous line when the field is absent (old files) or names a line that is not in the file.
 */
function walkBack(
  leaf: ChainNode,
  byUuid: Map<string, ChainNode>,
  previousInFile: Map<string, string>,
  warnings: string[],
): ChainNode[] {
  const chain: ChainNode[] = [];
  const visited = new Set<string>();
  let gaps = 0;
  let node: ChainNode | undefined = leaf;
  while (node) {
    if (visited.has(node.uuid)) {
      warnings.push(`the parentUuid links loop at line ${node.line.line}: the conversation starts there`);
      break;
    }
    visited.add(node.uuid);
    chain.push(node);
    const record = node.line.record;
    const boundary = stringField(record, 'subtype') === 'compact_boundary';
    let parent: unknown = record.parentUuid;
    // A compact boundary is never a root: its logical parent, else the line before it, goes on.
    if ((parent === null || parent === undefined) && boundary) parent = record.logicalParentUuid ?? '';
    if (parent === undefined && !('parentUuid' in record)) parent = previousInFile.get(node.uuid) ?? null;
    if (typeof parent !== 'string') break;
    const next = byUuid.get(parent);
    if (next) {
      node = next;
      continue;
    }
    const before = previousInFile.get(node.uuid);
    const bridge = before === undefined || visited.has(before) ? undefined : byUuid.get(before);
    gaps += 1;
    if (gaps <= MAX_GAP_WARNINGS) {
      const named =
        parent === ''
          ? 'no logical parent'
          : `a ${boundary ? 'logical ' : ''}parent ${JSON.stringify(parent.slice(0, 60))} that is not in the file (a lost or torn line)`;
      warnings.push(
        `line ${node.line.line}${boundary ? ', a compact boundary,' : ''} names ${named}: ${bridge ? `the conversation goes on from line ${bridge.line.line}, the line before it in the file` : 'the conversation starts there'}`,
      );
    }
    node = bridge;
  }
  if (gaps > MAX_GAP_WARNINGS)
    warnings.push(`… and ${gaps - MAX_GAP_WARNINGS} more links to lines not in the file, each bridged the same way`);
  return chain.reverse();
}

function chainToMessages(chain: readonly ChainNode[]): ConversationMessage[] {
  const messages: ConversationMessage[] = [];
  let reply: { apiId: string; message: ConversationMessage } | undefined;
  // One hook's output is written several times over (its stdout, its context, the system message):
  // kept once until the next message.
  let injectedSince = new Set<string>();
  for (const { uuid, line } of chain) {
    const record = line.record;
    const type = stringField(record, 'type');
    const timestamp = stringField(record, 'timestamp');
    if (type === 'assistant') {
      const body = objectField(record, 'message');
      const apiId = (body && stringField(body, 'id')) ?? uuid;
      const parts = readBlocks(body?.content);
      if (reply && reply.apiId === apiId) {
        // The same API response continued on another line: one message, named by its latest line.
        const message = reply.message;
        message.text = [message.text, parts.text].filter((part) => part !== '').join('\n');
        if (parts.toolCalls.length > 0) message.toolCalls = [...(message.toolCalls ?? []), ...parts.toolCalls];
        message.partIds = [...(message.partIds ?? [message.id]), uuid];
        message.id = uuid;
        continue;
      }
      const message: ConversationMessage = {
        id: uuid,
        role: 'assistant',
        text: parts.text,
        ...(parts.toolCalls.length > 0 && { toolCalls: parts.toolCalls }),
        ...(timestamp && { timestamp }),
      };
      messages.push(message);
      reply = { apiId, message };
      continue;
    }
    reply = undefined;
    if (type === 'user' || type === 'assistant') injectedSince = new Set();
    if (type === 'user') {
      const body = objectField(record, 'message');
      const parts = readBlocks(body?.content);
      const generated =
        record.isMeta === true ||
        record.isCompactSummary === true ||
        record.isVisibleInTranscriptOnly === true ||
        GENERATED_USER_TEXT.test(parts.text);
      const role = parts.toolResults.length > 0 ? 'tool' : 'user';
      // Readers that rewrite another agent's lines into this shape (Qwen Code) put the hook context
      // that came inside the user's message here: engram's block is kept as a meta message before it.
      const injectedHere = collectStrings(record.attachment).filter((value) => value.includes(MEMORY_CONTEXT_TAG));
      if (injectedHere.length > 0)
        messages.push({
          id: `${uuid}:context`,
          role: 'user',
          text: injectedHere.join('\n'),
          meta: true,
          ...(timestamp && { timestamp }),
        });
      messages.push({
        id: uuid,
        role,
        text: parts.text,
        ...(parts.toolResults.length > 0 && { toolResults: parts.toolResults }),
        ...(timestamp && { timestamp }),
        ...(generated && role === 'user' && { meta: true }),
      });
      continue;
    }
    // Hook output (engram's own <memory_context> among it) arrives as attachments: keep the injected
    // text, decoded from the shape that carries it, as a meta message so extraction knows which
    // memories were recalled (and strips them: private-content.ts).
    const injected = (hookOutputTexts(record) ?? collectStrings(record)).filter(
      (value) => value.includes(MEMORY_CONTEXT_TAG) && !injectedSince.has(value),
    );
    for (const value of injected) injectedSince.add(value);
    if (injected.length > 0)
      messages.push({ id: uuid, role: 'user', text: injected.join('\n'), meta: true, ...(timestamp && { timestamp }) });
  }
  return messages.filter(
    (message) =>
      message.text.trim() !== '' || (message.toolCalls?.length ?? 0) > 0 || (message.toolResults?.length ?? 0) > 0,
  );
}

interface BlockParts {
  text: string;
  toolCalls: ConversationToolCall[];
  toolResults: ConversationToolResult[];
}

/** Text, tool calls and tool results of a message's content (a string or an array of blocks); thinking is left out. */
function readBlocks(content: unknown): BlockParts {
  const parts: BlockParts = { text: '', toolCalls: [], toolResults: [] };
  if (typeof content === 'string') {
    parts.text = content;
    return parts;
  }
  if (!Array.isArray(content)) return parts;
  const texts: string[] = [];
  for (const block of content) {
    if (block === null || typeof block !== 'object') continue;
    const item = block as Record<string, unknown>;
    const type = stringField(item, 'type');
    if (type === 'text' && typeof item.text === 'string') texts.push(item.text);
    else if (type === 'image' || type === 'document') texts.push(`[${type}]`);
    else if (type === 'tool_use') {
      const id = stringField(item, 'id') ?? '';
      const name = stringField(item, 'name') ?? 'unknown';
      const input = objectField(item, 'input') ?? {};
      parts.toolCalls.push({ id, name, input });
    } else if (type === 'tool_result') {
      parts.toolResults.push({
        toolUseId: stringField(item, 'tool_use_id') ?? '',
        content: resultText(item.content),
        ...(item.is_error === true && { isError: true }),
      });
    }
  }
  parts.text = texts.join('\n');
  return parts;
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => {
      if (block === null || typeof block !== 'object') return '';
      const item = block as Record<string, unknown>;
      if (typeof item.text === 'string') return item.text;
      return typeof item.type === 'string' ? `[${item.type}]` : '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

/**
 * What a hook's output put in a line, as text (test/support/claude-code-cli.md §3.2, recorded from
 * Claude Code 2.1.332): an attachment `hook_additional_context` (`content`: the context strings),
 * `hook_system_message` (`content`), `hook_success` and the other `hook_*` results (`stdout`: the
 * hook's JSON answer as a string, read for its `additionalContext`, `systemMessage` and `reason`, or
 * plain text), and the `stop_hook_summary` system line (`hookAdditionalContext`). Undefined for a
 * line of another kind or shape; the rendered copies (`rendered`, system reminders) are left out.
 */
function hookOutputTexts(record: Record<string, unknown>): string[] | undefined {
  const texts: string[] = [];
  const add = (value: unknown): void => {
    if (typeof value === 'string' && value.trim() !== '') texts.push(value);
    else if (Array.isArray(value)) for (const item of value) add(item);
  };
  const attachment = objectField(record, 'attachment');
  const kind = attachment && stringField(attachment, 'type');
  if (attachment && kind?.startsWith('hook_')) {
    add(attachment.content);
    const stdout = stringField(attachment, 'stdout');
    if (stdout !== undefined) add(hookAnswerTexts(stdout));
    // A shape of a later version: every string it holds is read (collectStrings).
    return texts.length > 0 || 'content' in attachment || stdout !== undefined ? texts : undefined;
  }
  if (stringField(record, 'subtype') === 'stop_hook_summary') {
    add(record.hookAdditionalContext);
    return texts;
  }
  return undefined;
}

/** The texts of a hook's stdout: the fields of its JSON answer that reach the model or the user, else the text itself. */
function hookAnswerTexts(stdout: string): string[] {
  if (!stdout.trimStart().startsWith('{')) return [stdout];
  let answer: unknown;
  try {
    answer = JSON.parse(stdout);
  } catch {
    return [stdout]; // Not JSON: Claude Code gives it to the model as plain text.
  }
  if (answer === null || typeof answer !== 'object') return [stdout];
  const record = answer as Record<string, unknown>;
  const specific = objectField(record, 'hookSpecificOutput');
  return [specific?.additionalContext, record.systemMessage, record.reason, record.stopReason].filter(
    (value): value is string => typeof value === 'string',
  );
}

/** Every string inside a value, depth-first (bounded, for hostile nesting). */
function collectStrings(value: unknown, found: string[] = [], depth = 0): string[] {
  if (depth > 20) return found;
  if (typeof value === 'string') found.push(value);
  else if (Array.isArray(value)) for (const item of value) collectStrings(item, found, depth + 1);
  else if (value !== null && typeof value === 'object')
    for (const item of Object.values(value)) collectStrings(item, found, depth + 1);
  return found;
}

function validId(value: string | undefined): string | undefined {
  return value !== undefined &&
    value.length > 0 &&
    value.length <= MAX_CONVERSATION_ID_LENGTH &&
    !/[\u0000-\u001F\u007F-\u009F]/.test(value)
    ? value
    : undefined;
}
