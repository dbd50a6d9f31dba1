/** Options of one `embed` call. */
export interface EmbedOptions {
  /** Aborts the call (and any retry wait) with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Turns texts into vectors. engram stores the vectors beside the memories and fuses vector
 * similarity with full-text relevance at recall. Vectors of different models or lengths never
 * mix: the store records `model` and the vector length and drops old vectors when either changes.
 */
export interface Embedder {
  /** The model id, recorded with the stored vectors (e.g. `text-embedding-3-small`). */
  readonly model: string;
  /** The vector length: configured, or learned from the first answer; undefined until known. */
  readonly dimensions: number | undefined;
  /** One vector per text, in the order given; every vector has the same length. */
  embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]>;
}
