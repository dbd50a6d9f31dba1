import { isWordShaped } from './high-entropy-token.js';
import { isNotAValue, type Detector } from './secret-detector.js';

/**
 * Secrets that prose states without a `key = value` shape: the value before the word ("Use Winter0754!
 * as the admin password"), a `user / password` pair after a login word, a multi-word passphrase,
 * and a hex or base64 token next to a provider's name or a credential's ("Datadog API key <hex>").
 * Pure; every pattern is bounded.
 */

// A password as people choose one: 6+ characters, a letter and a digit, and a symbol or mixed case;
// not word-shaped (`OAuth2Flow`) unless it holds a symbol.
function isStrongPassword(value: string): boolean {
  if (value.length < 6 || value.length > 128 || isNotAValue(value)) return false;
  if (!/[A-Za-z]/.test(value) || !/\d/.test(value)) return false;
  const symbol = /[^A-Za-z0-9]/.test(value);
  const mixed = /[a-z]/.test(value) && /[A-Z]/.test(value);
  if (!symbol && !mixed) return false;
  return symbol || !isWordShaped(value);
}

const PASSWORD_NOUN = '(?:password|passphrase|passcode|passwd|pin|pw)';
// Where the noun phrase ends: a password "for the VPN" or "," — not "the password hash(ing)".
const NOUN_ENDS = String.raw`(?=[ \t]*(?:$|[.,;:!?)\n]|(?:for|on|in|to|of|at|and|but|so|until|when)\b))`;
const VALUE = String.raw`(?:"([^"\n]{3,128})"|'([^'\n]{3,128})'|\x60([^\x60\n]{3,128})\x60|([^\s"'\x60]{6,128}))`;
const BEFORE_THE_WORD: readonly RegExp[] = [
  // "Use X as the admin password", "Set X for the root password", "We chose X as our wifi passphrase"
  new RegExp(
    String.raw`\b(?:use|used|using|set|chose|choose|pick|picked|type|enter|try)[ \t]+${VALUE}[ \t]+(?:as|for)[ \t]+(?:the|our|my|your|its|their|a)?[ \t]*(?:[\w-]{1,30}[ \t]+){0,3}${PASSWORD_NOUN}${NOUN_ENDS}`,
    'gid',
  ),
  // "X is the password for the VPN", "X is our wifi password"
  new RegExp(
    String.raw`(?:^|[\s:(])${VALUE}[ \t]+(?:is|was|will be|becomes)[ \t]+(?:the|our|my|your|its|their)[ \t]+(?:[\w-]{1,30}[ \t]+){0,3}${PASSWORD_NOUN}${NOUN_ENDS}`,
    'gid',
  ),
];

/** "Use Winter0754! as the admin password", "kx7#Lq2mV9 is the password for the VPN". */
export const valueBeforeWordDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    if (!/pass|pin|pw/i.test(text)) return;
    for (const regex of BEFORE_THE_WORD) {
      regex.lastIndex = 0;
      for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
        const group = [1, 2, 3, 4].find((index) => match![index] !== undefined)!;
        const value = match[group]!;
        const quoted = group !== 4;
        if (quoted ? value.trim().length < 3 || isNotAValue(value) : !isStrongPassword(value)) continue;
        const span = match.indices![group]!;
        emit('password', span[0], span[1]);
      }
    }
  },
};

/** "Log in as admin / Qw3rty#1", "creds are root/Toor!2024", "login: deploy / Hj7&kLp2x": the password of the pair. */
export const userPasswordPairDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    const regex =
      /\b(?:log(?:ged)?[ \t-]?in|sign(?:ed)?[ \t-]?in|creds?|credentials|user(?:name)?|account)\b[^\n]{0,60}?(?<![\w.@-])[A-Za-z0-9_.@-]{2,64}[ \t]*\/[ \t]*([^\s"'`/]{6,128})/dgi;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const raw = match[1]!;
      const value = raw.replace(/[.,;:)\]]+$/, '');
      if (!isStrongPassword(value)) continue;
      const start = match.indices![1]![0];
      emit('password', start, start + value.length);
    }
  },
};

// Words of a sentence about a passphrase rather than the passphrase: "required for signing", "stored in the vault".
const FUNCTION_WORDS = new Set(
  (
    'the a an to of in on at for with by from as is are be was were been not no and or but if when that this these those ' +
    'it its we you they he she our your their my his her same also too very now still kept stored written required ' +
    'optional needed set saved changed rotated long short strong weak empty blank'
  ).split(' '),
);

/** "The GPG passphrase is correct horse battery staple", "seed phrase: abandon ability …": three or more plain words. */
export const multiWordPassphraseDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    const regex =
      /\b(?:pass[ -]?phrase|seed[ \t]+phrase|recovery[ \t]+phrase|mnemonic(?:[ \t]+phrase)?)(?:[ \t]+(?:is|was)|[ \t]*[:=])[ \t]+([a-z]{2,20}(?:[ \t]+[a-z]{2,20}){2,23})/dgi;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const words = match[1]!.split(/[ \t]+/);
      // "purple elephant dances quietly tonight": a participle or adverb may sit inside, not open the phrase.
      if (words.some((word) => FUNCTION_WORDS.has(word.toLowerCase())) || /(?:ed|ing|ly)$/i.test(words[0]!)) continue;
      const span = match.indices![1]!;
      emit('password', span[0], span[1]);
    }
  },
};

const PROVIDERS =
  'datadog|twilio|mailchimp|sendgrid|stripe|algolia|segment|new[ \\t]?relic|heroku|pagerduty|mapbox|cloudflare|sentry|' +
  'mailgun|postmark|mixpanel|amplitude|intercom|zendesk|okta|auth0|pusher|braintree|paypal|square|plaid|contentful|' +
  'airtable|asana|atlassian|jira|bitbucket|circleci|travis|netlify|vercel|fastly|akamai|firebase|supabase|openai|anthropic|' +
  'cohere|replicate|elastic|splunk|rollbar|bugsnag|honeycomb|launchdarkly|optimizely|shopify|hubspot|salesforce|slack|discord|' +
  'telegram|github|gitlab|docker|npm|aws|azure|gcp|google|vault|consul|terraform';
// A credential named by its kind ("auth token", "license key", "api key"), or a bare "key"/"token"/"secret" after a provider.
const CREDENTIAL_PHRASE =
  /\b(?:api|app(?:lication)?|admin|auth(?:entication)?|access|secret|signing|license|licence|private|client|integration|routing|write|ingest(?:ion)?|service|master|deploy|personal|bot)[ \t_-]?(?:key|token|secret)s?\b|\bsecret\b|\bpassword\b|\bcredentials?\b/i;
const PROVIDER_CREDENTIAL = new RegExp(`\\b(?:${PROVIDERS})\\b[^\\n.;]{0,60}?\\b(?:keys?|tokens?|secrets?)\\b`, 'i');
const NOT_A_CREDENTIAL =
  /\b(?:commit|sha-?\d*|hash|digest|checksum|revision|fingerprint|object|blob|tree|trace|span|request|correlation|session|idempotency|monitor|dashboard|message|build)\b/i;
// Hex (which the entropy rule skips), a UUID, or base62/base64 of 20+ characters.
const TOKEN =
  /(?<![A-Za-z0-9_+/-])(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{24,128}[A-Z]{0,4}|[A-Za-z0-9+/_-]{20,256}={0,2})(?![A-Za-z0-9_+/=-])/g;

/** "Datadog API key <hex>", "Twilio … auth token <hex>", "Heroku API key is <uuid>": a token the sentence names as a credential. */
export const credentialInProseDetector: Detector = {
  kind: 'credential-in-prose',
  find(text, emit) {
    if (!/key|token|secret|password|credential/i.test(text)) return;
    TOKEN.lastIndex = 0;
    for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
      const token = match[0];
      // Hex letters form word-like runs (`cadeebdb`) by chance: only non-hex tokens are judged by their shape.
      const isHex = /^[0-9a-fA-F-]+[A-Z]{0,4}$/.test(token);
      if (!/\d/.test(token) || !/[A-Za-z]/.test(token) || (!isHex && isWordShaped(token))) continue;
      // The sentence before the token, and the few words after it ("<token> as the key for mail").
      const before = text.slice(Math.max(0, match.index - 100), match.index);
      const sentence = before.slice(Math.max(before.lastIndexOf('\n'), before.search(/[.;!?]\s[^.;!?]*$/)) + 1);
      const after = text.slice(match.index + token.length, match.index + token.length + 40).split(/[\n.;]/)[0]!;
      const context = `${sentence} ${after}`;
      const named =
        CREDENTIAL_PHRASE.test(sentence) ||
        PROVIDER_CREDENTIAL.test(sentence) ||
        (new RegExp(`\\b(?:${PROVIDERS})\\b`, 'i').test(context) && /\b(?:keys?|tokens?|secrets?)\b/i.test(after));
      if (!named || NOT_A_CREDENTIAL.test(context)) continue;
      emit('credential-in-prose', match.index, match.index + token.length);
    }
  },
};

/** `MAILCHIMP_KEY=<hex>-us6`, `ANALYTICS_KEY=<hex>`, `APP_KEY=base64:…`: a `*_KEY` whose value is hex or base64 key material. */
export const conventionKeyDetector: Detector = {
  kind: 'credential-assignment',
  find(text, emit) {
    const regex =
      /(?<![A-Za-z0-9])[A-Za-z0-9]{1,30}(?:[_.-][A-Za-z0-9]{1,30}){0,4}[_.-]key(?:[_.-]base)?["']?[ \t]*[:=][ \t]*["']?(?:base64:)?([0-9a-fA-F]{16,256}(?:-[a-z]{2,4}\d{1,2})?|[A-Za-z0-9+/]{20,256}={0,2})(?![A-Za-z0-9+/=_-])/dgi;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const value = match[1]!;
      if (!/\d/.test(value) || isWordShaped(value)) continue;
      const span = match.indices![1]!;
      emit('credential-assignment', span[0], span[1]);
    }
  },
};
