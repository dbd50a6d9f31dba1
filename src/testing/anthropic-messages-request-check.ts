// The Anthropic loopback server's request checks: what the real Messages API refuses (missing
// version header, malformed messages, orphan tool results, too many cache marks, context editing
// without its beta) that a client could get wrong, with the API's own error messages.
import type { RecordedModelRequest } from './loopback-model-server.js';

/** What the real API refuses that a client could get wrong; undefined when the request is fine. */
export function checkMessagesRequest(request: RecordedModelRequest, systemMessages = false): string | undefined {
  if (typeof request.headers['anthropic-version'] !== 'string') return 'anthropic-version: header is required';
  const body = request.body as Record<string, unknown> | null;
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return 'There was an error parsing the body of your request: it is not a JSON object.';
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1)
    return 'max_tokens: must be a positive integer';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  let marks = 0;
  const count = (block: unknown): void => {
    if (block && typeof block === 'object' && (block as { cache_control?: unknown }).cache_control) marks += 1;
  };
  (Array.isArray(body.tools) ? body.tools : []).forEach(count);
  (Array.isArray(body.system) ? body.system : []).forEach(count);
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    return 'system: Input should be a valid string or list';
  for (const block of Array.isArray(body.system) ? body.system : []) {
    if ((block as { text?: unknown })?.text === '') return 'system: text content blocks must be non-empty';
  }
  let previousToolUses = new Set<string>();
  for (const [index, message] of (body.messages as Array<{ role?: unknown; content?: unknown }>).entries()) {
    if (systemMessages && message?.role === 'system') continue;
    if (message?.role !== 'user' && message?.role !== 'assistant')
      return `messages.${index}.role: Input should be 'user' or 'assistant'`;
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (!Array.isArray(blocks)) return `messages.${index}.content: Input should be a valid string or list`;
    const toolUses = new Set<string>();
    for (const block of blocks as Array<Record<string, unknown>>) {
      count(block);
      if (block?.type === 'text' && block.text === '' && index < (body.messages as unknown[]).length - 1)
        return `messages.${index}: text content blocks must be non-empty`;
      if (block?.type === 'tool_use') toolUses.add(String(block.id));
      if (block?.type === 'tool_result' && !previousToolUses.has(String(block.tool_use_id))) {
        return `messages.${index}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
    previousToolUses = toolUses;
  }
  if (marks > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${marks}.`;
  return checkContextManagement(request, body.context_management);
}

/** Context editing needs its beta header, and each edit must have the shape the API documents (FORMATS §4.2). */
function checkContextManagement(request: RecordedModelRequest, management: unknown): string | undefined {
  if (management === undefined || management === null) return undefined;
  const betas = String(request.headers['anthropic-beta'] ?? '')
    .split(',')
    .map((beta) => beta.trim());
  if (!betas.includes('context-management-2025-06-27')) return 'context_management: Extra inputs are not permitted';
  const edits = (management as { edits?: unknown }).edits;
  if (edits !== undefined && !Array.isArray(edits)) return 'context_management.edits: Input should be a valid list';
  for (const [index, edit] of ((edits as Array<Record<string, unknown>> | undefined) ?? []).entries()) {
    const where = `context_management.edits.${index}`;
    if (edit?.type !== 'clear_tool_uses_20250919' && edit?.type !== 'clear_thinking_20251015')
      return `${where}.type: Input tag ${JSON.stringify(edit?.type)} does not match any of the expected tags`;
    for (const [field, types] of [
      ['trigger', ['input_tokens', 'tool_uses']],
      ['keep', ['tool_uses', 'thinking_turns']],
      ['clear_at_least', ['input_tokens']],
    ] as const) {
      const raw = edit[field];
      if (raw === undefined || raw === null || (field === 'keep' && raw === 'all')) continue;
      const value = raw as { type?: unknown; value?: unknown };
      if (
        !(types as readonly unknown[]).includes(value.type) ||
        typeof value.value !== 'number' ||
        !Number.isInteger(value.value) ||
        value.value < 0
      ) {
        return `${where}.${field}: expected {type: ${types.join('|')}, value: a whole number}`;
      }
    }
    if (
      edit.exclude_tools !== undefined &&
      edit.exclude_tools !== null &&
      !(Array.isArray(edit.exclude_tools) && edit.exclude_tools.every((name) => typeof name === 'string'))
    ) {
      return `${where}.exclude_tools: Input should be a valid list of strings`;
    }
  }
  return undefined;
}
