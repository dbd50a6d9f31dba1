import type { ConversationMessage } from '../../contracts/conversation.js';
import { cleanControlCharacters } from '../../kernel/text-cleaning.js';
import type { ParsedTranscript } from './claude-code-transcript.js';

/**
 * A transcript's messages with control characters replaced in their text and tool results (tab
 * and newline kept), and one warning saying how many were replaced in how many messages. Pure.
 */
export function cleanTranscriptText(parsed: ParsedTranscript): ParsedTranscript {
  let replaced = 0;
  let touched = 0;
  const messages = parsed.conversation.messages.map((message): ConversationMessage => {
    const text = cleanControlCharacters(message.text);
    let count = text.replaced;
    const toolResults = message.toolResults?.map((result) => {
      const content = cleanControlCharacters(result.content);
      count += content.replaced;
      return content.replaced === 0 ? result : { ...result, content: content.text };
    });
    if (count === 0) return message;
    replaced += count;
    touched += 1;
    return { ...message, text: text.text, ...(toolResults && { toolResults }) };
  });
  if (replaced === 0) return parsed;
  return {
    ...parsed,
    conversation: { ...parsed.conversation, messages },
    warnings: [
      ...parsed.warnings,
      `replaced ${replaced} control character${replaced === 1 ? '' : 's'} in ${touched} message${touched === 1 ? '' : 's'} (kept tab and newline)`,
    ],
  };
}
