/** Which checkpoints `Checkpoints.delete` removes: names starting with `prefix` (taken literally) last set before `updatedBefore`. */
export interface CheckpointFilter {
  prefix: string;
  updatedBefore: string;
}

/**
 * The checkpoints role (`store.checkpoints`): small named values with compare-and-set (an
 * extraction cursor, a turn's progress). Optional: without it extraction cannot queue turns.
 */
export interface Checkpoints {
  /** Reads a named checkpoint; undefined if never set. */
  get(name: string): Promise<string | undefined>;
  /**
   * Sets a named checkpoint. With `expected` given (undefined-as-absent is `null`), it is a
   * compare-and-set: returns false and changes nothing when the stored value differs.
   */
  set(name: string, value: string, options?: { expected?: string | null }): Promise<boolean>;
  /** Deletes the checkpoints the filter names; returns how many. */
  delete(filter: CheckpointFilter): Promise<number>;
}
