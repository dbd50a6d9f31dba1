import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { ContentBlock } from '../../contracts/language-model.js';
import type {
  CompactBoundary,
  ResumedSession,
  SessionMessage,
  SessionMetadata,
  TodoItem,
} from '../../contracts/session-message.js';
import { validateSessionId } from './session-paths.js';
import { readBoundary, readMessage, readMetadata, readTodos } from './session-transcript-record-parsing.js';
import { DEFAULT_TRANSCRIPT_MAX_LINE_BYTES } from '../../kernel/transcript-lines.js';

/**
 * Resume: reads a session transcript (the writer's format, or a Claude Code file) and rebuilds
 * the live message list. The lines form a DAG through `parentUuid`; the conversation is the chain
 * from the latest leaf back to the latest compact boundary on it (the messages before a boundary
 * are replaced by its summary). Lines that are not JSON objects (a torn last line after a crash,
 * garbage, lines over the size limit) are skipped and counted, never fatal.
 */

/** A session read back from its transcript, with what could not be used. */
export interface ResumedTranscript extends ResumedSession {
  /** Lines that could not be used (torn, not JSON, not an object, over the size limit, malformed). */
  skippedLines: number;
  /** Why lines were skipped or the chain was cut (at most 20 listed). */
  warnings: string[];
}

export interface ReadSessionTranscriptOptions {
  /** Longer lines are skipped; default 32 MiB. */
  maxLineBytes?: number;
}

interface ChainNode {
  uuid: string;
  parentUuid: string | null | undefined;
  /** Set for user/assistant lines that hold a readable message. */
  message?: SessionMessage;
  boundary?: CompactBoundary;
  apiId?: string;
}

const CHUNK_BYTES = 4 * 1024 * 1024;
const MAX_WARNINGS = 20;

/** Rebuilds a session from its transcript file: messages from the latest leaf back to the latest boundary, todos, metadata. */
export async function readSessionTranscript(
  path: string,
  options: ReadSessionTranscriptOptions = {},
): Promise<ResumedTranscript> {
  if (typeof path !== 'string' || path.length === 0 || path.includes('\u0000'))
    throw new EngramError('INVALID_INPUT', 'Give the path of a session transcript (.jsonl).');
  const state = new TranscriptState();
  await forEachLine(
    path,
    options.maxLineBytes ?? DEFAULT_TRANSCRIPT_MAX_LINE_BYTES,
    (text, number) => state.add(text, number),
    (number) => state.skip(`line ${number} is over the line size limit: skipped`),
  );
  return state.finish(path);
}

/** Calls `onLine` for each line of the file, reading it in chunks; lines over `maxLineBytes` go to `onOversized` unread. */
async function forEachLine(
  path: string,
  maxLineBytes: number,
  onLine: (text: string, number: number) => void,
  onOversized: (number: number) => void,
): Promise<void> {
  const handle = await open(path, 'r').catch((error: NodeJS.ErrnoException) => {
    throw new EngramError(
      error.code === 'ENOENT' ? 'NOT_FOUND' : 'INVALID_INPUT',
      `Cannot read the session transcript ${path} (${error.code ?? 'error'}); list sessions to find one.`,
      { cause: error },
    );
  });
  try {
    const info = await handle.stat();
    if (!info.isFile())
      throw new EngramError('INVALID_INPUT', `${path} is not a regular file: give the path of a session transcript.`);
    // One buffer: the unfinished line is moved to its start and the next read lands after it (no concatenation).
    let buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let carried = 0;
    let oversized = false;
    let number = 0;
    for (;;) {
      if (carried === buffer.length) {
        const larger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(larger, 0, 0, carried);
        buffer = larger;
      }
      const { bytesRead } = await handle.read(buffer, carried, buffer.length - carried, null);
      if (bytesRead === 0) break;
      const filled = carried + bytesRead;
      let start = 0;
      for (let end = buffer.indexOf(10, carried); end !== -1 && end < filled; end = buffer.indexOf(10, end + 1)) {
        number += 1;
        if (oversized || end - start > maxLineBytes) onOversized(number);
        else if (end > start) onLine(buffer.toString('utf8', start, end), number);
        oversized = false;
        start = end + 1;
      }
      carried = filled - start;
      // The rest of an oversized line is dropped as it arrives, so memory stays bounded.
      if (carried > maxLineBytes) {
        oversized = true;
        carried = 0;
      } else if (start > 0) buffer.copy(buffer, 0, start, filled);
    }
    if (oversized) onOversized(number + 1);
    else if (carried > 0) onLine(buffer.toString('utf8', 0, carried), number + 1);
  } finally {
    await handle.close();
  }
}

/** The lines read so far, indexed for the chain walk. */
class TranscriptState {
  private readonly nodes = new Map<string, ChainNode>();
  private previousUuid: string | undefined;
  private leaf: ChainNode | undefined;
  private sidechainLeaf: ChainNode | undefined;
  private todos: TodoItem[] = [];
  private metadata: Partial<SessionMetadata> = {};
  private lineSessionId: string | undefined;
  private skipped = 0;
  private readonly warnings: string[] = [];

  skip(warning: string): void {
    this.skipped += 1;
    if (this.warnings.length < MAX_WARNINGS) this.warnings.push(warning);
  }

  add(text: string, number: number): void {
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.skip(`line ${number} is not JSON (torn by a crash, or garbage): skipped`);
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.skip(`line ${number} is not a JSON object: skipped`);
      return;
    }
    const record = value as Record<string, unknown>;
    const type = record.type;
    if (this.lineSessionId === undefined && typeof record.sessionId === 'string') this.lineSessionId = record.sessionId;
    if (type === 'engram-todos') {
      const todos = readTodos(record.todos);
      if (todos) this.todos = todos;
      else this.skip(`line ${number} holds a malformed todo list: skipped`);
      return;
    }
    if (type === 'engram-metadata') {
      const metadata = readMetadata(record.metadata);
      if (metadata) this.metadata = { ...this.metadata, ...metadata };
      else this.skip(`line ${number} holds malformed metadata: skipped`);
      return;
    }
    if (type === 'custom-title' && typeof record.customTitle === 'string') {
      this.metadata.title = record.customTitle;
      return;
    }
    const uuid = record.uuid;
    if (typeof uuid !== 'string' || uuid.length === 0 || uuid.length > 200) {
      // Other line types (summaries, queue operations) have no uuid; a message line must.
      if (type === 'user' || type === 'assistant' || type === 'system')
        this.skip(`line ${number} is a ${type} line without a usable uuid: skipped`);
      return;
    }
    const parent = record.parentUuid;
    if (parent !== undefined && parent !== null && typeof parent !== 'string') {
      this.skip(`line ${number} has a parentUuid that is not a string: skipped`);
      return;
    }
    // Lines without the field (old files) hang from the line before them.
    // Only what the chain walk needs is kept: the rest of the parsed line is garbage at once.
    const node: ChainNode = { uuid, parentUuid: 'parentUuid' in record ? parent : (this.previousUuid ?? null) };
    this.previousUuid = uuid;
    if (type === 'system' && record.subtype === 'compact_boundary') node.boundary = readBoundary(uuid, record);
    if (type === 'user' || type === 'assistant') {
      const message = readMessage(uuid, type, record);
      if (!message) this.skip(`line ${number} is a ${type} line without a readable message: kept as a link only`);
      else {
        node.message = message;
        const body = record.message as Record<string, unknown>;
        if (typeof body.id === 'string') node.apiId = body.id;
      }
      if (record.isSidechain === true) this.sidechainLeaf = node;
      else this.leaf = node;
    }
    // A uuid written again (a kept message re-appended after a compaction) takes its latest line.
    this.nodes.set(uuid, node);
  }

  finish(path: string): ResumedTranscript {
    // A helper's own file holds sidechain lines only: its conversation is theirs.
    const leaf = this.leaf ?? this.sidechainLeaf;
    const chain: ChainNode[] = [];
    let boundary: CompactBoundary | undefined;
    const visited = new Set<string>();
    for (let node = leaf ? this.nodes.get(leaf.uuid) : undefined; node;) {
      if (visited.has(node.uuid)) {
        this.warnings.push(`the parentUuid links loop at ${node.uuid.slice(0, 60)}: the conversation starts there`);
        break;
      }
      visited.add(node.uuid);
      if (node.boundary) {
        boundary = node.boundary;
        break;
      }
      chain.push(node);
      const parent = node.parentUuid;
      if (typeof parent !== 'string') break;
      const next = this.nodes.get(parent);
      if (!next) {
        // The lines before the gap are not resumed: said, and counted, never dropped unseen.
        const onChain = new Set(chain.map((item) => item.uuid));
        const leftOut = [...this.nodes.values()].filter((item) => item.message && !onChain.has(item.uuid)).length;
        this.warnings.push(
          `a line names a parent ${JSON.stringify(parent.slice(0, 60))} that is not in the file (a lost or torn line): the conversation starts after it${leftOut > 0 ? `; ${leftOut} message line${leftOut === 1 ? '' : 's'} before it (or on other branches) left out` : ''}`,
        );
        break;
      }
      node = next;
    }
    chain.reverse();
    const messages = mergeReplies(chain);
    const sessionId = pickSessionId(path, this.lineSessionId);
    const metadata: SessionMetadata = {
      ...this.metadata,
      sessionId,
      messageCount: this.metadata.messageCount ?? [...this.nodes.values()].filter((node) => node.message).length,
    };
    if (messages.length > 0) {
      metadata.createdAt ??= messages[0]!.timestamp;
      metadata.updatedAt ??= messages.at(-1)!.timestamp;
    }
    const leafUuid = chain.at(-1)?.uuid ?? boundary?.uuid;
    return {
      sessionId,
      messages,
      ...(boundary && { boundary }),
      todos: this.todos,
      metadata,
      skippedLines: this.skipped,
      warnings: this.warnings,
      ...(leafUuid !== undefined && { leafUuid }),
    };
  }
}

/** Consecutive assistant lines of one API response (Claude Code writes one block per line) become one message. */
function mergeReplies(chain: readonly ChainNode[]): SessionMessage[] {
  const messages: SessionMessage[] = [];
  let lastApiId: string | undefined;
  for (const node of chain) {
    const message = node.message;
    if (!message) continue;
    const last = messages.at(-1);
    if (
      last &&
      lastApiId !== undefined &&
      node.apiId === lastApiId &&
      message.role === 'assistant' &&
      last.role === 'assistant'
    ) {
      last.content = [...asBlocks(last.content), ...asBlocks(message.content)];
      last.uuid = message.uuid;
      if (message.usage) last.usage = message.usage;
    } else if (typeof message.content === 'string' || message.content.length > 0) {
      messages.push(message);
      lastApiId = node.apiId;
    }
  }
  return messages;
}

function asBlocks(content: string | ContentBlock[]): ContentBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** The session id: the file's name when it is a valid id (the listing names sessions so), else the one its lines carry. */
function pickSessionId(path: string, fromLines: string | undefined): string {
  const name = basename(path).replace(/\.jsonl$/, '');
  for (const candidate of [name, fromLines]) {
    try {
      return validateSessionId(candidate);
    } catch {
      // try the next
    }
  }
  throw new EngramError(
    'INVALID_INPUT',
    `Neither the file name of ${path} nor its lines give a valid session id: name it <sessionId>.jsonl.`,
  );
}
