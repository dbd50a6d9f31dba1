/**
 * SPEC's "never stored" list, checked on what a model proposes (the prompt asks too, but a rule in
 * code does not depend on the model listening). Deliberately narrow: each rule fires on an
 * unmistakable shape, since dropping a real fact costs more than keeping a borderline one.
 * Secrets are not dropped here: they are redacted on every write path before storage.
 */
export type NeverStoredReason = 'conversation-summary' | 'code' | 'task-state' | 'git-history';

// Narration of the conversation itself, at the start of the text.
const SUMMARY_OPENING =
  /^(?:in (?:this|the) (?:conversation|session|chat|discussion)|(?:this|the) (?:conversation|session|chat) (?:was|is|covered|focused)|the user (?:(?:asked|wanted to know|requested|is asking|was asking) (?:how|what|why|when|where|which|whether|if|about|for help|the assistant)|and the assistant)|we (?:discussed|talked about|worked on|went over)|the assistant (?:explained|helped|suggested|provided|answered|fixed|said)|during (?:this|the) (?:conversation|session))\b/i;
// The state of the task at hand.
const TASK_STATE_OPENING =
  /^(?:(?:current(?:ly)?|next) (?:step|steps|task|status)|todo|to-do|in progress|still (?:need|needs|to do)|remaining (?:work|tasks?))\b[:\s]/i;
const HEX_TOKEN = /\b[0-9a-f]{7,40}\b/g;
const GIT_WORDS = /\b(?:commit(?:ted)?|merged?|rebased?|cherry-picked|reverted)\b/i;
const FENCE = /```[\s\S]*?(?:```|$)/g;

/** Why a proposed memory must not be stored, or undefined when none of the rules applies. */
export function neverStoredReason(content: string): { reason: NeverStoredReason; detail: string } | undefined {
  const text = content.trim();
  if (SUMMARY_OPENING.test(text))
    return {
      reason: 'conversation-summary',
      detail: 'it narrates this conversation instead of stating a lasting fact',
    };
  if (TASK_STATE_OPENING.test(text))
    return {
      reason: 'task-state',
      detail: 'it is the state of the task in progress, which belongs to the session, not long-term memory',
    };
  const fenced = (text.match(FENCE) ?? []).reduce((sum, block) => sum + block.length, 0);
  if (fenced > 0 && fenced >= text.length * 0.5)
    return { reason: 'code', detail: 'it is mostly code; code is read from the project, not remembered' };
  // A commit hash mixes digits and letters; "defaced" or "1234567" alone are not one.
  const hashes = (text.match(HEX_TOKEN) ?? []).filter((token) => /\d/.test(token) && /[a-f]/.test(token));
  if (hashes.length > 0 && GIT_WORDS.test(text)) {
    return { reason: 'git-history', detail: 'it records git history, which git already keeps' };
  }
  return undefined;
}
