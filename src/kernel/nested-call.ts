/**
 * The guard against engram recursing into itself: the claude-code model provider runs the Claude
 * Code CLI for extraction with this variable set, and engram's Claude Code hooks do nothing when they
 * see it (the CLI also runs with --safe-mode, which fires no hooks; this is the second guard, since
 * the CLI's environment reaches any hook it might still start). Pure.
 */
export const ENGRAM_NESTED_ENV = 'ENGRAM_NESTED';

/** Whether this process runs inside a call engram itself started (its hooks must then do nothing). */
export function isNestedEngramCall(env: Readonly<Record<string, string | undefined>>): boolean {
  const value = env[ENGRAM_NESTED_ENV];
  return value !== undefined && value !== '' && value !== '0';
}
