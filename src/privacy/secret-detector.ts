/**
 * What every secret detector of src/privacy/secret-redaction.ts shares: the kinds of secret, the shape
 * of a detector, a detector made of one regular expression, and the values that name a secret
 * instead of holding one. Pure.
 */

/** Every kind of secret the redactor recognises; the placeholder names one of them. */
export const SECRET_KINDS = [
  'private-key',
  'anthropic-api-key',
  'openai-api-key',
  'openrouter-api-key',
  'perplexity-api-key',
  'supabase-key',
  'api-token',
  'aws-access-key-id',
  'aws-secret-access-key',
  'github-token',
  'github-fine-grained-token',
  'gitlab-token',
  'slack-token',
  'slack-webhook-url',
  'discord-webhook-url',
  'webhook-url',
  'stripe-key',
  'stripe-webhook-secret',
  'google-api-key',
  'google-oauth-client-secret',
  'google-oauth-access-token',
  'twilio-api-key',
  'sendgrid-api-key',
  'npm-token',
  'pypi-token',
  'huggingface-token',
  'mailgun-api-key',
  'shopify-token',
  'digitalocean-token',
  'linear-api-key',
  'vault-token',
  'age-secret-key',
  'telegram-bot-token',
  'azure-storage-key',
  'jwt',
  'bearer-token',
  'basic-auth-credentials',
  'url-password',
  'url-query-secret',
  'url-path-secret',
  'password',
  'credential-assignment',
  'mailchimp-api-key',
  'credential-in-prose',
  'password-hash',
  'recovery-code',
  'totp-secret',
  'high-entropy-token',
] as const;
export type SecretKind = (typeof SECRET_KINDS)[number];

/** One secret found: its kind and where its characters are in the text (end exclusive). */
export interface SecretMatch {
  kind: SecretKind;
  start: number;
  end: number;
}

/** Reports one secret; overlapping an earlier one, it is ignored. */
export type Emit = (kind: SecretKind, start: number, end: number) => void;

/** One rule of the redactor. */
export interface Detector {
  kind: SecretKind;
  /** Emits the secrets found; `protectedSpans` marks what the entropy rule must skip (URLs, public keys). */
  find(text: string, emit: Emit, protectedSpans: Uint8Array): void;
}

export const PLACEHOLDER_PREFIX = '[REDACTED:';

/** A detector from one regular expression; `group` names the capture that holds the secret (default: the whole match). */
export function pattern(
  kind: SecretKind,
  regex: RegExp,
  options: { group?: number; accept?: (value: string, match: RegExpExecArray, text: string) => boolean } = {},
): Detector {
  const flags = regex.flags.includes('d') ? regex.flags : `${regex.flags}d`;
  const compiled = new RegExp(regex.source, flags.includes('g') ? flags : `${flags}g`);
  return {
    kind,
    find(text, emit) {
      compiled.lastIndex = 0;
      for (let match = compiled.exec(text); match !== null; match = compiled.exec(text)) {
        if (match[0].length === 0) {
          compiled.lastIndex += 1;
          continue;
        }
        const group = options.group ?? 0;
        const span = match.indices?.[group];
        const value = match[group];
        if (!span || value === undefined || value.length === 0) continue;
        if (options.accept && !options.accept(value, match, text)) continue;
        emit(kind, span[0], span[1]);
      }
    },
  };
}

/** Values that name or describe a secret instead of holding one: placeholders, references, types. */
export const NOT_A_VALUE =
  /^(?:\*+|x{3,}|\.{3}|…|<[^>]*>|\$\{?[\w.:-]*\}?|%[\w]+%|\{\{.*\}\}|\[[A-Z_]*\]|null|none|nil|undefined|true|false|string|str|number|int|bool|boolean|any|required|optional|empty|redacted|hidden|changeme|example|dummy|placeholder|todo|tbd|n\/a|password|passwd|pass|pw|pwd|secret|token|key|your[_-][\w-]*|my[_-][\w-]*)$/i;

/** Whether a value is already a placeholder or names a secret rather than holding one. */
export function isNotAValue(value: string): boolean {
  return value.startsWith(PLACEHOLDER_PREFIX) || NOT_A_VALUE.test(value);
}
