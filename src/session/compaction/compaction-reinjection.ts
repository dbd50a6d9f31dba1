import type { Settings } from '../../kernel/settings.js';
import { tokensForBytes, utf8ByteLength } from '../../kernel/token-estimate.js';

/**
 * What a compaction puts back after its summary (SPEC §2 layer 4 step 3): the files the session
 * read most recently and the plan, so the model does not have to read them again to carry on.
 * Within caps (`compaction.reinjectMaxFiles`, `reinjectFileMaxTokens`, `reinjectMaxTokens`). Pure.
 */

/** One todo item: the fields compaction reads (the session's TodoItem satisfies it). */
export interface PlanTodoItem {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
  activeForm?: string;
}

export interface ReinjectionInput {
  /** Files as last read, NEWEST FIRST; a path seen twice keeps its newest content. */
  recentFiles: ReadonlyArray<{ path: string; content: string }>;
  plan?: string;
  todos?: readonly PlanTodoItem[];
}

export interface Reinjection {
  /** Texts of the meta user messages to insert after the summary, in order (files, then the plan). */
  texts: string[];
  /** The files re-injected (cut or whole). */
  files: string[];
  /** The plan in force, as the boundary records it (plan text and/or the todo list). */
  plan?: string;
}

const TODO_MARKS: Record<PlanTodoItem['status'], string> = { completed: '[x]', in_progress: '[~]', pending: '[ ]' };

/** A todo list as text, one item a line: `[x]` done, `[~]` in progress, `[ ]` pending. */
export function renderTodos(todos: readonly PlanTodoItem[]): string {
  return todos
    .map(
      (todo) =>
        `- ${TODO_MARKS[todo.status] ?? '[ ]'} ${todo.status === 'in_progress' && todo.activeForm ? todo.activeForm : todo.content}`,
    )
    .join('\n');
}

/** The plan as the boundary keeps it: the plan text, then the todo list. Undefined when there is neither. */
export function planText(input: { plan?: string; todos?: readonly PlanTodoItem[] }): string | undefined {
  const parts: string[] = [];
  if (input.plan?.trim()) parts.push(input.plan.trim());
  if (input.todos && input.todos.length > 0) parts.push(`Todo list:\n${renderTodos(input.todos)}`);
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, cut at a line end when one is near. */
function cutToBytes(text: string, maxBytes: number): string {
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (utf8ByteLength(text.slice(0, middle)) <= maxBytes) low = middle;
    else high = middle - 1;
  }
  // Never split a surrogate pair.
  let end = low;
  if (end > 0 && end < text.length && /[\ud800-\udbff]/.test(text[end - 1]!)) end -= 1;
  const lineEnd = text.lastIndexOf('\n', end);
  return text.slice(0, lineEnd > end * 0.8 ? lineEnd : end);
}

/**
 * The re-injection messages. Files whose content is already in the kept messages (`alreadyPresent`)
 * are skipped; each file is cut to its cap with a note saying how to read the rest; files stop at
 * the file count or the total cap, newest first.
 */
export function reinjection(
  input: ReinjectionInput,
  settings: Pick<Settings, 'compaction' | 'tokens'>,
  alreadyPresent: (content: string) => boolean = () => false,
): Reinjection {
  const { reinjectMaxFiles, reinjectFileMaxTokens, reinjectMaxTokens } = settings.compaction;
  const bytesPerToken = settings.tokens.bytesPerTextToken;
  const texts: string[] = [];
  const files: string[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const file of input.recentFiles) {
    if (files.length >= reinjectMaxFiles) break;
    if (seen.has(file.path)) continue;
    seen.add(file.path);
    if (file.content === '' || alreadyPresent(file.content)) continue;
    const maxBytes = Math.min(reinjectFileMaxTokens, reinjectMaxTokens - total) * bytesPerToken;
    if (maxBytes <= 0) break;
    const whole = utf8ByteLength(file.content) <= maxBytes;
    const content = whole ? file.content : cutToBytes(file.content, maxBytes);
    if (content === '') continue;
    const note = whole
      ? ''
      : ` (cut after ${utf8ByteLength(content)} of ${utf8ByteLength(file.content)} bytes: read the file again for the rest)`;
    texts.push(
      `The file ${file.path} as it was last read before the conversation was compacted${note}:\n<file path=${JSON.stringify(file.path)}>\n${content}\n</file>`,
    );
    files.push(file.path);
    total += tokensForBytes(utf8ByteLength(content), bytesPerToken);
  }
  const plan = planText(input);
  if (plan)
    texts.push(`The plan in force when the conversation was compacted (keep following it):\n<plan>\n${plan}\n</plan>`);
  return { texts, files, ...(plan !== undefined && { plan }) };
}
