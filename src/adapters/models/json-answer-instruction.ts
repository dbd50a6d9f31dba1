/**
 * Appended as the last, uncached part of the system prompt when a request asks for JSON: Anthropic
 * has no JSON mode without a schema, and OpenAI's json_object mode requires the word "JSON" in the
 * prompt. Placed after every cache mark, so the cached prefix stays byte-identical with or without it.
 */
export const JSON_ANSWER_INSTRUCTION =
  'Answer with exactly one JSON value and nothing else: no prose before or after it, no Markdown code fence.';
