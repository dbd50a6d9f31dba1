import type { WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import { stripPrivateContent } from './private-content.js';
import { applyRedaction, findSecrets, redactSecrets, type SecretKind } from './secret-redaction.js';

/**
 * The privacy rule of every write (SPEC §3, "never stored"), applied where memories are validated
 * (`normalizeNewMemory`, `normalizePatch`), so every backend and every surface gets it without a
 * special case: private blocks and engram's injected blocks are stripped, then secrets redacted, in
 * the name, the description and the content. Idempotent: a clean memory passes unchanged.
 */

/** What sanitizing removed: the kinds of secret redacted (never the secrets) and the blocks stripped. */
export interface PrivacyReport {
  redacted: SecretKind[];
  secrets: number;
  privateBlocks: number;
  injectedBlocks: number;
}

/** Warnings a write reports when it stored less than it was given. */
export const PRIVACY_WARNINGS = {
  secretsRedacted: 'secrets-redacted',
  privateContentRemoved: 'private-content-removed',
} as const satisfies Record<string, WarningCode>;

/** Text safe to store or send: private and injected blocks out, then secrets redacted. */
export function sanitizeText(text: string): { text: string; report: PrivacyReport } {
  const { text: clean, report } = sanitizeWithFragments(text);
  return { text: clean, report };
}

// Pieces of a secret as a slug would hold them: lowercase runs of letters and digits.
const MIN_FRAGMENT = 6;

function sanitizeWithFragments(text: string): { text: string; report: PrivacyReport; fragments: string[] } {
  const stripped = stripPrivateContent(text);
  const matches = findSecrets(stripped.text);
  const redacted = applyRedaction(stripped.text, matches);
  const fragments = matches
    .flatMap(
      (match) =>
        stripped.text
          .slice(match.start, match.end)
          .toLowerCase()
          .match(/[a-z0-9]+/g) ?? [],
    )
    .filter((piece) => piece.length >= MIN_FRAGMENT);
  return {
    text: redacted.text,
    report: {
      redacted: redacted.kinds,
      secrets: redacted.count,
      privateBlocks: stripped.privateBlocks,
      injectedBlocks: stripped.injectedBlocks,
    },
    fragments,
  };
}

/**
 * A name derived from unredacted text (a slug: "deploy-token-is-d0d00bc1883b…") holds the secret
 * lowercased, where no provider format matches any more: every word of the name that is part of a
 * secret found in the content or description becomes `redacted`.
 */
function scrubName(name: string, fragments: readonly string[]): { name: string; scrubbed: number } {
  if (fragments.length === 0) return { name, scrubbed: 0 };
  let scrubbed = 0;
  const clean = name.replace(/[a-z0-9]+/gi, (word) => {
    if (word.length < MIN_FRAGMENT || !fragments.some((fragment) => fragment.includes(word.toLowerCase()))) return word;
    scrubbed += 1;
    return 'redacted';
  });
  return { name: clean, scrubbed };
}

/** The text fields a write may carry; anything else passes through untouched. */
interface TextFields {
  name?: unknown;
  description?: unknown;
  content?: unknown;
}

/**
 * Lengths past which a field is left unscanned, because the caller's validation refuses it anyway
 * (pass the same limits it validates with: settings.memory). A field without a limit is always
 * scanned, whatever its length: redaction never depends on a length nobody checks.
 */
export interface SanitizeLimits {
  maxContentChars?: number;
  maxNameChars?: number;
  maxDescriptionChars?: number;
}

/**
 * Sanitizes the name, description and content of a new memory or a patch. A name keeps its slug
 * shape (`redacted-<kind>` in place of a secret); a description left empty is dropped (a new memory
 * derives one from its content); content left empty means there was nothing but private text, which
 * is refused with INVALID_INPUT rather than stored as nothing.
 */
export function sanitizeMemoryFields<T extends TextFields>(
  input: T,
  options: SanitizeLimits = {},
): { value: T; report: PrivacyReport } {
  return sanitizeFields(input, options).result;
}

function sanitizeFields<T extends TextFields>(
  input: T,
  options: SanitizeLimits,
): { result: { value: T; report: PrivacyReport }; scannedAll: boolean } {
  const report: PrivacyReport = { redacted: [], secrets: 0, privateBlocks: 0, injectedBlocks: 0 };
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    return { result: { value: input, report }, scannedAll: false };
  passes += 1;
  let scannedAll = true;
  const value: T = { ...input };
  const absorb = (part: PrivacyReport): void => {
    for (const kind of part.redacted) if (!report.redacted.includes(kind)) report.redacted.push(kind);
    report.secrets += part.secrets;
    report.privateBlocks += part.privateBlocks;
    report.injectedBlocks += part.injectedBlocks;
  };
  const fragments: string[] = [];
  if (
    typeof input.content === 'string' &&
    input.content.length <= (options.maxContentChars ?? Number.POSITIVE_INFINITY)
  ) {
    const clean = sanitizeWithFragments(input.content);
    fragments.push(...clean.fragments);
    absorb(clean.report);
    if (clean.text.trim() === '' && input.content.trim() !== '') {
      throw new EngramError(
        'INVALID_INPUT',
        "Nothing to store: the content is all private (<private>…</private>) or engram's own injected memory. Write the fact itself, outside the private tags.",
      );
    }
    value.content = clean.text;
  } else if (input.content !== undefined) scannedAll = false;
  const within = (value: string, limit: number | undefined): boolean =>
    value.length <= (limit ?? Number.POSITIVE_INFINITY);
  if (typeof input.description === 'string' && within(input.description, options.maxDescriptionChars)) {
    const clean = sanitizeWithFragments(input.description);
    fragments.push(...clean.fragments);
    absorb(clean.report);
    if (clean.text.trim() === '' && input.description.trim() !== '') delete value.description;
    else value.description = clean.text;
  } else if (input.description !== undefined) scannedAll = false;
  if (typeof input.name === 'string' && within(input.name, options.maxNameChars)) {
    const clean = redactSecrets(input.name);
    absorb({ redacted: clean.kinds, secrets: clean.count, privateBlocks: 0, injectedBlocks: 0 });
    // A name is a slug: the placeholder becomes `redacted-<kind>` so the name stays valid.
    const slug = clean.count > 0 ? clean.text.replace(/\[REDACTED:([a-z0-9-]+)\]/g, 'redacted-$1') : input.name;
    const scrubbed = scrubName(slug, fragments);
    report.secrets += scrubbed.scrubbed;
    if (slug !== input.name || scrubbed.scrubbed > 0) value.name = scrubbed.name;
  } else if (input.name !== undefined) scannedAll = false;
  return { result: { value, report }, scannedAll };
}

// Values the write path's one pass produced (frozen, so their text cannot change after it): the
// validation below it (normalizeNewMemory, normalizePatch) and the store do not scan them again.
const CHECKED = new WeakSet<object>();
// Passes run in this process: how a test or the bench sees that a write is checked once.
let passes = 0;

/**
 * The write path's one privacy pass (`Engram.save`, `update`, `importMemories`): sanitizes like
 * `sanitizeMemoryFields` and, when every text field was scanned (none left for being over a
 * limit), returns the value frozen and known as checked, so `normalizeNewMemory`,
 * `normalizePatch` and the store's own check pass it through instead of scanning it again. The
 * report is this pass's: the caller carries it down to the result and the warnings.
 */
export function checkMemoryPrivacy<T extends TextFields>(
  input: T,
  options: SanitizeLimits = {},
): { value: T; report: PrivacyReport } {
  const { result, scannedAll } = sanitizeFields(input, options);
  return scannedAll ? { value: markPrivacyChecked(result.value), report: result.report } : result;
}

/** Whether a value came out of the write path's pass (see `checkMemoryPrivacy`) and is unchanged since. */
export function isPrivacyChecked(value: unknown): boolean {
  return value !== null && typeof value === 'object' && CHECKED.has(value);
}

/**
 * A frozen copy of a value known as checked. Only for values made of text a pass returned (a
 * merge's patch drawn from a checked memory, see memory.ts's `patchOfCheckedMemory`): anything
 * else would skip the store's check.
 */
export function markPrivacyChecked<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const frozen = Object.freeze({ ...value });
  CHECKED.add(frozen);
  return frozen;
}

/** How many memory privacy passes this process has run (diagnostics: the write path checks a memory once). */
export function privacyPassCount(): number {
  return passes;
}

/** The warnings a write passes on for what sanitizing removed (kinds only, never the secrets). */
export function privacyWarnings(report: PrivacyReport): WarningCode[] {
  const warnings: WarningCode[] = [];
  if (report.secrets > 0) warnings.push(PRIVACY_WARNINGS.secretsRedacted);
  if (report.privateBlocks + report.injectedBlocks > 0) warnings.push(PRIVACY_WARNINGS.privateContentRemoved);
  return warnings;
}

/** Whether sanitizing changed anything. */
export function isEmptyReport(report: PrivacyReport): boolean {
  return report.secrets === 0 && report.privateBlocks === 0 && report.injectedBlocks === 0;
}
