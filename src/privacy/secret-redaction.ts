import { EngramError } from '../kernel/errors.js';
import { isHighEntropyToken } from './high-entropy-token.js';
import {
  assignmentDetector,
  basicAuthDetector,
  bearerDetector,
  commandLineDetector,
  curlUserDetector,
  proseDetector,
} from './secret-context-detectors.js';
import { PLACEHOLDER_PREFIX, type Detector, type Emit, type SecretKind, type SecretMatch } from './secret-detector.js';
import {
  conventionKeyDetector,
  credentialInProseDetector,
  multiWordPassphraseDetector,
  userPasswordPairDetector,
  valueBeforeWordDetector,
} from './secret-phrase-detectors.js';
import { PROVIDER_DETECTORS } from './secret-provider-patterns.js';
import { jwkDetector, pemDetector, puttyKeyDetector } from './secret-key-block-detectors.js';
import {
  connectionStringDetector,
  encodedAuthDetector,
  netrcDetector,
  passwordHashDetectors,
  pgpassDetector,
} from './secret-credential-line-detectors.js';
import { commandArgumentDetector } from './secret-command-argument-detectors.js';
import { recoveryCodeDetector, totpSeedDetector } from './secret-one-time-code-detectors.js';
import {
  otpMigrationDetector,
  URL_SPAN,
  urlPasswordDetector,
  urlPathDetector,
  urlQueryDetector,
} from './secret-url-detectors.js';

export type { SecretKind } from './secret-detector.js';

/**
 * Secret redaction (SPEC §3, "never stored"): finds credentials in text and replaces each with a
 * typed placeholder, `[REDACTED:<kind>]`, so a memory can still say what was there without holding it.
 *
 * Three families of rules, tried in this order (an earlier rule wins where two overlap):
 * 1. Key blocks and provider formats: PEM, PuTTY and JWK private keys (however wrapped, quoted or
 *    escaped) and password hashes (src/privacy/secret-key-block-detectors.ts,
 *    secret-credential-line-detectors.ts), then a fixed prefix and shape (`sk-ant-…`, `AKIA…`,
 *    `ghp_…`, `pplx-…`, webhook URLs) in src/privacy/secret-provider-patterns.ts. Precise, so they
 *    apply anywhere.
 * 2. Context: a value named as a secret (`password=…`, `"api_key": "…"`, `Authorization: Bearer …`,
 *    `mysql -p…`, "the password is …", in src/privacy/secret-context-detectors.ts), a command's
 *    password argument (`htpasswd -b f u PASS`, secret-command-argument-detectors.ts), in URLs
 *    (`scheme://user:pass@host`, `?sig=…`, `/hooks/<random>`, in src/privacy/secret-url-detectors.ts),
 *    in connection strings and credential files (`PWD={…}`, `.pgpass`, `.netrc`, `_auth=`), and
 *    second factors (recovery codes, TOTP seeds, secret-one-time-code-detectors.ts).
 *    Only the value is replaced: the key, the user name and the host stay, so the memory still reads.
 * 3. High entropy: a long random-looking token with no known format (src/privacy/high-entropy-token.ts),
 *    outside URLs, UUIDs and public keys.
 *
 * Pure and linear in the text's length: every pattern is a bounded regular expression or an indexOf
 * scan, so hostile input cannot make it backtrack. Redacting redacted text changes nothing.
 */

/** Text with every secret replaced, the kinds found (each once, in order of first appearance) and how many. */
export interface RedactionResult {
  text: string;
  kinds: SecretKind[];
  count: number;
}

const PLACEHOLDER = /\[REDACTED:[a-z0-9-]{1,40}\]/g;

/** The text that stands in for a secret of this kind. */
export function redactionPlaceholder(kind: SecretKind): string {
  return `${PLACEHOLDER_PREFIX}${kind}]`;
}

const CONTEXT_DETECTORS: readonly Detector[] = [
  bearerDetector,
  basicAuthDetector,
  curlUserDetector,
  commandLineDetector,
  commandArgumentDetector,
  otpMigrationDetector,
  urlPasswordDetector,
  urlQueryDetector,
  urlPathDetector,
  connectionStringDetector,
  pgpassDetector,
  netrcDetector,
  encodedAuthDetector,
  recoveryCodeDetector,
  totpSeedDetector,
  conventionKeyDetector,
  assignmentDetector,
  multiWordPassphraseDetector,
  proseDetector,
  valueBeforeWordDetector,
  userPasswordPairDetector,
  credentialInProseDetector,
];

/** Private keys as blocks, and password hashes: found first, since their parts look like other things. */
const KEY_BLOCK_DETECTORS: readonly Detector[] = [pemDetector, puttyKeyDetector, jwkDetector, ...passwordHashDetectors];

/** Long random tokens with no known format (see HIGH_ENTROPY_RULE). */
const entropyDetector: Detector = {
  kind: 'high-entropy-token',
  find(text, emit, protectedSpans) {
    const regex = /[A-Za-z0-9+/_-]{20,}={0,3}/g;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const raw = match[0];
      // Padding and separators at either end are not part of the token.
      const lead = raw.length - raw.replace(/^[-_/=+]+/, '').length;
      const token = raw.slice(lead).replace(/[-_/+]+$/, '');
      const start = match.index + lead;
      const end = start + token.length;
      if (protectedSpans[start] === 1 || protectedSpans[end - 1] === 1) continue;
      if (isHighEntropyToken(token)) emit('high-entropy-token', start, end);
    }
  },
};

// URLs, UUIDs, ULIDs (`01ARZ3NDEK…`, `mem_01HZY3…`), SSH key fingerprints and OpenSSH public keys:
// long, random-looking, and not secrets by themselves.
const ULID = /\b(?:[a-z]{1,12}_)?[0-7][0-9A-HJKMNP-TV-Z]{25}\b/g;
const KEY_FINGERPRINT = /\bSHA256:[A-Za-z0-9+/]{43}(?![A-Za-z0-9+/])/g;
const UUID = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;
const SSH_PUBLIC_KEY =
  /\b(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d{3}|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) AAAA[A-Za-z0-9+/]{20,}={0,3}/g;

/** Finds every secret in a text, without overlaps, in text order. */
export function findSecrets(text: string): SecretMatch[] {
  if (typeof text !== 'string') throw new EngramError('INVALID_INPUT', 'Secret redaction takes a string of text.');
  if (text.length === 0) return [];
  // claimed: characters already inside a secret (or a placeholder); protected: skipped by the entropy rule.
  const claimed = new Uint8Array(text.length);
  const protectedSpans = new Uint8Array(text.length);
  for (const match of text.matchAll(PLACEHOLDER)) claimed.fill(1, match.index, match.index + match[0].length);
  const found: SecretMatch[] = [];
  const emit: Emit = (kind, start, end) => {
    if (end <= start) return;
    for (let index = start; index < end; index += 1) if (claimed[index] === 1) return;
    claimed.fill(1, start, end);
    found.push({ kind, start, end });
  };
  for (const detector of KEY_BLOCK_DETECTORS) detector.find(text, emit, protectedSpans);
  for (const detector of PROVIDER_DETECTORS) detector.find(text, emit, protectedSpans);
  for (const detector of CONTEXT_DETECTORS) detector.find(text, emit, protectedSpans);
  for (const regex of [URL_SPAN, UUID, ULID, KEY_FINGERPRINT, SSH_PUBLIC_KEY]) {
    for (const match of text.matchAll(regex)) protectedSpans.fill(1, match.index, match.index + match[0].length);
  }
  entropyDetector.find(text, emit, protectedSpans);
  return found.sort((a, b) => a.start - b.start);
}

/**
 * Replaces every secret in a text with `[REDACTED:<kind>]` and says which kinds it found; the
 * secret itself appears nowhere in the result.
 * @example
 * redactSecrets('key: sk-proj-Xy9…').text // 'key: [REDACTED:openai-api-key]'
 */
export function redactSecrets(text: string): RedactionResult {
  return applyRedaction(text, findSecrets(text));
}

/** Replaces the given matches (from `findSecrets` on the same text) with their placeholders. */
export function applyRedaction(text: string, matches: readonly SecretMatch[]): RedactionResult {
  if (matches.length === 0) return { text, kinds: [], count: 0 };
  let out = '';
  let position = 0;
  const kinds: SecretKind[] = [];
  for (const match of matches) {
    out += text.slice(position, match.start) + redactionPlaceholder(match.kind);
    position = match.end;
    if (!kinds.includes(match.kind)) kinds.push(match.kind);
  }
  out += text.slice(position);
  return { text: out, kinds, count: matches.length };
}
