import { createHash } from 'node:crypto';
import { estimateTextTokens } from '../kernel/token-estimate.js';

export interface SimulatedPromptCacheOptions {
  /** Prefixes shorter than this are never cached (the real APIs: 1,024 tokens for most models). */
  minCacheableTokens?: number;
}

/** Token counts of one request as a provider with a prompt cache would report them. */
export interface CachedUsage {
  /** Input tokens neither read from nor written to the cache. */
  input: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * A prompt cache as the loopback servers simulate it, so tests and benchmarks see the effect of a
 * byte-stable prefix: tokens are estimated from bytes (4 per token), and a prefix counts as cached
 * only when an earlier request sent exactly the same bytes for it.
 */
export class SimulatedPromptCache {
  readonly minCacheableTokens: number;
  readonly #entries = new Set<string>();
  readonly #recent: string[] = [];

  constructor(options: SimulatedPromptCacheOptions = {}) {
    this.minCacheableTokens = options.minCacheableTokens ?? 1_024;
  }

  /**
   * Anthropic's explicit caching: `segments` are the request's parts in prompt order (tools, system
   * blocks, message blocks) and `breakpoints` the indices of those carrying `cache_control`. The
   * longest earlier-written prefix ending at a breakpoint is read; the prefix up to the last
   * breakpoint is written when it is new.
   */
  explicit(model: string, segments: readonly string[], breakpoints: readonly number[]): CachedUsage {
    const total = estimateTextTokens(segments.join(''));
    const prefixAt = (end: number): { key: string; tokens: number } => {
      const text = segments.slice(0, end + 1).join('');
      return { key: digest(`${model}\u0000${text}`), tokens: estimateTextTokens(text) };
    };
    const ends = [...new Set(breakpoints)].sort((a, b) => a - b);
    const prefixes = ends.map(prefixAt).filter((prefix) => prefix.tokens >= this.minCacheableTokens);
    // Like the real API, a breakpoint also finds entries written at up to 20 block boundaries before it,
    // so marking only the latest message still reads back what the previous request wrote.
    let cacheRead = 0;
    search: for (const end of [...ends].reverse()) {
      for (let boundary = end; boundary >= Math.max(0, end - LOOKBACK_BLOCKS + 1); boundary -= 1) {
        const prefix = prefixAt(boundary);
        if (prefix.tokens < this.minCacheableTokens) break;
        if (this.#entries.has(prefix.key)) {
          cacheRead = prefix.tokens;
          break search;
        }
      }
    }
    const last = prefixes.at(-1);
    const cacheWrite = last && !this.#entries.has(last.key) ? last.tokens - cacheRead : 0;
    for (const prefix of prefixes) this.#entries.add(prefix.key);
    return { input: total - cacheRead - cacheWrite, cacheRead, cacheWrite };
  }

  /**
   * OpenAI's automatic caching: the longest prefix shared with a recent request, counted in steps of
   * 128 tokens from the minimum; nothing is reported as written.
   */
  automatic(model: string, serialized: string): CachedUsage {
    const text = `${model}\u0000${serialized}`;
    let shared = 0;
    for (const earlier of this.#recent) shared = Math.max(shared, commonPrefixLength(earlier, text));
    this.#recent.push(text);
    if (this.#recent.length > 32) this.#recent.shift();
    const total = estimateTextTokens(serialized);
    const sharedTokens = Math.min(total, estimateTextTokens(text.slice(model.length + 1, shared)));
    const cacheRead = sharedTokens >= this.minCacheableTokens ? Math.floor(sharedTokens / 128) * 128 : 0;
    return { input: total - cacheRead, cacheRead, cacheWrite: 0 };
  }
}

const LOOKBACK_BLOCKS = 20;

function commonPrefixLength(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let index = 0;
  while (index < limit && a.charCodeAt(index) === b.charCodeAt(index)) index += 1;
  return index;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
