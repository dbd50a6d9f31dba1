import { pattern, type Detector } from './secret-detector.js';

/**
 * The provider formats of secret redaction: credentials with a fixed prefix and shape (`sk-ant-…`,
 * `AKIA…`, `ghp_…`, webhook URLs, PEM private keys). Precise, so they apply anywhere, inside URLs
 * and code too. Pure; every pattern is bounded.
 */

/** PEM blocks: a private key is redacted whole (an unterminated one to the end of its base64); public ones are protected from the entropy rule. */
export const pemDetector: Detector = {
  kind: 'private-key',
  find(text, emit, protectedSpans) {
    // Labels known to have no closing line after a point: a text of many unterminated headers stays linear.
    const noCloseAfter = new Map<string, number>();
    let from = 0;
    while (from < text.length) {
      const begin = text.indexOf('-----BEGIN ', from);
      if (begin === -1) return;
      const labelEnd = text.indexOf('-----', begin + 11);
      const label = labelEnd === -1 ? '' : text.slice(begin + 11, labelEnd);
      if (labelEnd === -1 || label.length > 60 || /[^A-Z0-9 ]/.test(label)) {
        from = begin + 11;
        continue;
      }
      const closing = `-----END ${label}-----`;
      const known = noCloseAfter.get(label);
      const close = known !== undefined && known <= labelEnd ? -1 : text.indexOf(closing, labelEnd + 5);
      if (close === -1 && known === undefined) noCloseAfter.set(label, labelEnd);
      const end = close !== -1 ? close + closing.length : base64BodyEnd(text, labelEnd + 5);
      if (/PRIVATE KEY/.test(label)) emit('private-key', begin, end);
      else protectedSpans.fill(1, begin, end);
      from = end;
    }
  },
};

// Cut off (a preview, a truncated paste): the key runs as far as its base64 goes: long chunks on the
// header's own line (a key pasted on one line), then whole lines of base64 or `Name: value` headers.
const SAME_LINE_CHUNK = /[ \t]+[A-Za-z0-9+/=]{16,4096}/y;
const BODY_LINE = /\r?\n[ \t]*(?:[A-Za-z0-9+/=]{1,4096}|[A-Za-z][A-Za-z-]{0,40}:[^\n]{0,200})?[ \t]*(?=\r?\n|$)/y;

function base64BodyEnd(text: string, from: number): number {
  let end = from;
  for (const piece of [SAME_LINE_CHUNK, BODY_LINE]) {
    for (;;) {
      piece.lastIndex = end;
      const match = piece.exec(text);
      if (match === null || match[0].length === 0) break;
      end += match[0].length;
    }
  }
  return end;
}

// Provider formats, most specific first. Bounded quantifiers only; `\b` or look-arounds keep a match
// from starting inside a longer token.
export const PROVIDER_DETECTORS: Detector[] = [
  pattern('anthropic-api-key', /\bsk-ant-(?:api|admin|sid|oat|ort)\d{2}-[A-Za-z0-9_-]{20,300}/),
  pattern('anthropic-api-key', /\bsk-ant-[A-Za-z0-9_-]{32,300}/),
  pattern('openrouter-api-key', /\bsk-or-v1-[0-9a-f]{64}\b/),
  pattern('openai-api-key', /\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,300}/),
  pattern('openai-api-key', /\bsk-[A-Za-z0-9]{20,200}(?![A-Za-z0-9_-])/, {
    accept: (value) => /\d/.test(value) && /[A-Za-z]{2}/.test(value.slice(3)),
  }),
  pattern('aws-access-key-id', /\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z2-7]{16}\b/),
  pattern('github-fine-grained-token', /\bgithub_pat_[A-Za-z0-9_]{40,255}/),
  pattern('github-token', /\bgh[pousr]_[A-Za-z0-9]{36,251}\b/),
  pattern('gitlab-token', /\bgl(?:pat|dt|ptt|rt|soat|ft|cbt|imt|agent|oas)-[A-Za-z0-9_-]{20,100}/),
  pattern('slack-webhook-url', /hooks\.slack\.com\/(?:services|workflows|triggers)\/([A-Za-z0-9_/-]{16,200})/, {
    group: 1,
  }),
  pattern('discord-webhook-url', /discord(?:app)?\.com\/api\/webhooks\/\d{5,25}\/([A-Za-z0-9_-]{20,200})/, {
    group: 1,
  }),
  // Webhook URLs whose path is the credential: anyone holding the URL can post.
  pattern('webhook-url', /\bhooks\.zapier\.com\/hooks\/(?:catch|standard)\/\d{1,20}\/([A-Za-z0-9]{5,64})/, {
    group: 1,
  }),
  pattern(
    'webhook-url',
    /\bmaker\.ifttt\.com\/(?:trigger\/[^/\s]{1,100}\/(?:json\/)?with\/key|use)\/([A-Za-z0-9_-]{16,64})/,
    { group: 1 },
  ),
  pattern(
    'webhook-url',
    /(?:\.webhook\.office\.com\/webhookb2|outlook\.office(?:365)?\.com\/webhook)\/[0-9a-fA-F-]{36}@[0-9a-fA-F-]{36}\/IncomingWebhook\/([0-9a-fA-F]{32})/,
    { group: 1 },
  ),
  pattern('slack-token', /\bxox[abposre]-[A-Za-z0-9-]{10,250}/),
  pattern('slack-token', /\bxapp-\d-[A-Za-z0-9-]{20,250}/),
  pattern('stripe-key', /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{20,250}\b/, {
    accept: (value) => !value.startsWith('pk_'),
  }),
  pattern('stripe-webhook-secret', /\bwhsec_[A-Za-z0-9+/=]{24,100}/),
  pattern('google-api-key', /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/),
  pattern('google-oauth-client-secret', /\bGOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])/),
  pattern('google-oauth-access-token', /\bya29\.[0-9A-Za-z_-]{20,2048}/),
  pattern('sendgrid-api-key', /\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}(?![A-Za-z0-9_-])/),
  pattern('twilio-api-key', /\bSK[0-9a-fA-F]{32}\b/),
  pattern('npm-token', /\bnpm_[A-Za-z0-9]{36}\b/),
  pattern('pypi-token', /\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1000}/),
  pattern('huggingface-token', /\bhf_[A-Za-z0-9]{30,100}\b/),
  pattern('mailchimp-api-key', /\b[0-9a-f]{32}-us\d{1,2}\b/),
  pattern('mailgun-api-key', /\bkey-[0-9a-f]{32}\b/),
  pattern('shopify-token', /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b/),
  pattern('digitalocean-token', /\bdo[por]_v1_[a-f0-9]{64}\b/),
  pattern('linear-api-key', /\blin_api_[A-Za-z0-9]{40}\b/),
  pattern('vault-token', /\bhv[sbr]\.[A-Za-z0-9_-]{24,300}/),
  pattern('age-secret-key', /\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b/),
  pattern('telegram-bot-token', /\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/),
  pattern('jwt', /\beyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{0,4096}/),
  pattern(
    'azure-storage-key',
    /\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|sharedaccesskey)\s*=\s*([^;\s"']{8,500})/i,
    { group: 1 },
  ),
  pattern('aws-secret-access-key', /(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/, {
    accept: (value, match, text) =>
      /[a-z]/.test(value) &&
      /[A-Z]/.test(value) &&
      /[0-9]/.test(value) &&
      /aws|secret/i.test(text.slice(Math.max(0, match.index - 80), match.index)),
  }),
];
