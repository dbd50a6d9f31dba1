import { DEFAULT_SETTINGS } from './settings.js';

/**
 * SPEC §2's token estimate: about 4 bytes of UTF-8 per token for text, denser (2) for JSON. Used
 * where no tokenizer or API count is at hand; it errs on the high side for English prose.
 */
export interface TokenEstimateOptions {
  /** Bytes per token; default `tokens.bytesPerTextToken` (4), or `tokens.bytesPerJsonToken` (2) for JSON. */
  bytesPerToken?: number;
}

/** Estimated tokens of a text: UTF-8 bytes ÷ bytes per token, rounded up. */
export function estimateTextTokens(text: string, options: TokenEstimateOptions = {}): number {
  return tokensForBytes(utf8ByteLength(text), options.bytesPerToken ?? DEFAULT_SETTINGS.tokens.bytesPerTextToken);
}

/** Estimated tokens of a JSON document (as text): JSON tokenizes denser than prose. */
export function estimateJsonTokens(json: string, options: TokenEstimateOptions = {}): number {
  return tokensForBytes(utf8ByteLength(json), options.bytesPerToken ?? DEFAULT_SETTINGS.tokens.bytesPerJsonToken);
}

/** Tokens that `bytes` bytes of text are estimated at; the inverse of the budget check. */
export function tokensForBytes(
  bytes: number,
  bytesPerToken: number = DEFAULT_SETTINGS.tokens.bytesPerTextToken,
): number {
  if (!(bytesPerToken > 0) || !Number.isFinite(bytesPerToken))
    throw new RangeError(`bytesPerToken must be a positive number, got ${bytesPerToken}.`);
  return Math.ceil(bytes / bytesPerToken);
}

/** UTF-8 length of a string without encoding it (lone surrogates count as U+FFFD, 3 bytes, as encoders write them). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
