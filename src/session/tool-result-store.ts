/**
 * Layer 1's seam (SPEC §2): where a Session puts tool results over the threshold and how the
 * `read_persisted_output` tool pages through them. `ToolResultStorage` (session/node/) keeps them
 * as files; pure code names only this interface, so a host may store them elsewhere.
 */
export interface ToolResultStore {
  /** Where the results are kept, as the model is told (the preview names a place under it). */
  readonly directory: string;
  /** Results larger than this many UTF-8 bytes are stored. */
  readonly thresholdBytes: number;
  /** Most bytes one `read` returns. */
  readonly pageBytes: number;
  /**
   * The content the message should carry: unchanged at or under the threshold, else stored whole
   * and replaced by a frozen preview (the same id and content always give the same bytes).
   */
  store(toolUseId: string, content: string): Promise<StoredToolResult>;
  /** Part of a stored result: `limit` bytes (at most `pageBytes`) from byte `offset`. */
  read(toolUseId: string, options?: { offset?: number; limit?: number }): Promise<ToolResultPage>;
  /** The tool use id a path names when it is one of this store's results, else undefined. */
  toolUseIdForPath(path: string): string | undefined;
}

export interface StoredToolResult {
  /** What the message carries: the content itself (at or under the threshold) or the `<persisted-output>` replacement. */
  content: string;
  /** Set when the content was stored. */
  persisted?: { path: string; bytes: number };
}

export interface ToolResultPage {
  text: string;
  /** Byte offset where `text` starts (moved forward to a character boundary if the asked one split a character). */
  offset: number;
  totalBytes: number;
  /** Where the next page starts; absent at the end. */
  nextOffset?: number;
}
