import type { ToolUseBlock } from '../../contracts/language-model.js';

// What the chat terminal writes, made safe and short: text from any source (model output, memory
// names, file paths) without control characters, a tool call on one line, a token count in a few
// characters.

// C0 controls but tab and newline, DEL, and C1 controls: a model's answer (or a pasted line) must not
// move the cursor, clear the screen or retitle the terminal.
export const CONTROL_CHARACTERS = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
// Bidirectional embeddings, overrides and isolates: they reorder what follows on screen, so a path
// could read as another. Shown as visible escapes rather than dropped, so the oddity shows.
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/** Text for the terminal without control characters (tab and newline kept), bidi controls shown as `<U+202E>`. */
export function clean(text: string): string {
  return text
    .replace(CONTROL_CHARACTERS, '')
    .replace(BIDI_CONTROLS, (character) => `<U+${character.charCodeAt(0).toString(16).toUpperCase()}>`);
}

/** A tool call on one line: its name and a short view of its input. */
export function describeCall(call: ToolUseBlock): string {
  const parts = Object.entries(call.input).map(([key, value]) => {
    const shown =
      typeof value === 'string'
        ? JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)
        : JSON.stringify(value);
    return `${key}: ${shown !== undefined && shown.length > 80 ? `${shown.slice(0, 80)}…` : shown}`;
  });
  return `${call.name}(${parts.join(', ')})`;
}

/** 12345 → 12.3K, 200000 → 200K. */
export function shortTokenCount(tokens: number): string {
  if (tokens < 1_000) return String(tokens);
  if (tokens < 1_000_000) return `${Number((tokens / 1_000).toFixed(tokens < 10_000 ? 1 : 0))}K`;
  return `${Number((tokens / 1_000_000).toFixed(1))}M`;
}
