import { pattern, type Detector } from './secret-detector.js';

/**
 * The provider formats of secret redaction: credentials with a fixed prefix and shape (`sk-ant-…`,
 * `AKIA…`, `ghp_…`, webhook URLs; PEM and other key blocks are in secret-key-block-detectors.ts).
 * Precise, so they apply anywhere, inside URLs and code too. Pure; every pattern is bounded.
 */

/**
 * Other services' tokens with a fixed prefix and shape (AI providers, databases, CI and hosting, mail).
 * Each needs its full length and a digit, so a model name (`pplx-70b-online`) or a prefix named in
 * prose (`the sbp_ prefix`) stays.
 */
const API_TOKEN_PREFIXES: readonly RegExp[] = [
  /\bgsk_[A-Za-z0-9]{48,56}\b/, // Groq
  /\bxai-[A-Za-z0-9]{70,100}\b/, // xAI
  /\br8_[A-Za-z0-9]{37}\b/, // Replicate
  /\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b/, // LangSmith
  /\bpcsk_[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,100}\b/, // Pinecone
  /\bdp\.(?:st|pt|ct|sa|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,44}\b/, // Doppler
  /\bpul-[a-f0-9]{40}\b/, // Pulumi
  /\bsntry[us]_[A-Za-z0-9+/=_-]{40,300}/, // Sentry
  /\bdapi[a-f0-9]{32}(?:-\d)?\b/, // Databricks
  /\bntn_[A-Za-z0-9]{40,50}\b/, // Notion
  /\bsecret_[A-Za-z0-9]{43}\b/, // Notion (older)
  /\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b/, // Airtable
  /\bfigd_[A-Za-z0-9_-]{40,100}/, // Figma
  /\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,64}/, // PlanetScale
  /\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b/, // Postman
  /\bglsa_[A-Za-z0-9]{32}_[a-f0-9]{8}\b/, // Grafana service account
  /\bglc_[A-Za-z0-9+/=]{32,400}/, // Grafana Cloud
  /\btskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,30}-[A-Za-z0-9]{20,60}\b/, // Tailscale
  /\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{27,60}/, // Docker Hub
  /\bnapi_[a-z0-9]{64}\b/, // Neon
  /\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b/, // Brevo
  /\bNRAK-[A-Z0-9]{27}\b/, // New Relic
  /\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100}/, // Terraform Cloud
  /\bsk_[a-f0-9]{48}\b/, // ElevenLabs
  /\btvly-(?:dev-|prod-)?[A-Za-z0-9]{32}\b/, // Tavily
  /\bfc-[a-f0-9]{32}\b/, // Firecrawl
  /\bre_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b/, // Resend
  /\bHRKU-[A-Za-z0-9_-]{50,70}/, // Heroku
  /\bnfp_[A-Za-z0-9]{36,40}\b/, // Netlify
  /\brnd_[A-Za-z0-9]{32}\b/, // Render
  /\bCFPAT-[A-Za-z0-9_-]{43}\b/, // Contentful
  /\bops_eyJ[A-Za-z0-9+/=_-]{100,4096}/, // 1Password service account
  /\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b/, // Dynatrace
  /\bATATT3[A-Za-z0-9_=-]{150,250}/, // Atlassian
  /\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}\b/, // Square
  /\bshippo_(?:live|test)_[a-f0-9]{40}\b/, // Shippo
  /\bpnu_[A-Za-z0-9]{36}\b/, // Prefect
  /\bapi_org_[A-Za-z0-9]{34}\b/, // Hugging Face organisation
  /\bjina_[A-Za-z0-9_-]{40,90}/, // Jina
  /\bsk\.eyJ[A-Za-z0-9_-]{20,2000}\.[A-Za-z0-9_-]{20,200}/, // Mapbox secret
];

// Provider formats, most specific first. Bounded quantifiers only; `\b` or look-arounds keep a match
// from starting inside a longer token.
export const PROVIDER_DETECTORS: Detector[] = [
  pattern('perplexity-api-key', /\bpplx-[A-Za-z0-9]{40,64}(?![A-Za-z0-9_-])/, { accept: hasDigitAndLetter }),
  pattern('supabase-key', /\bsbp_(?:v0_)?[a-f0-9]{40}\b/),
  pattern('supabase-key', /\bsb_secret_[A-Za-z0-9_-]{20,100}/),
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
  // A JWT whose JSON has spaces or line ends (`{ "alg": …}`) starts otherwise: its header says what it is.
  pattern('jwt', /\b(?:eyAi|ewo|ew0K|ewk|eyJ)[A-Za-z0-9_-]{6,4096}\.[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{16,4096}/, {
    accept: (value) => isJwtHeader(value.slice(0, value.indexOf('.'))),
  }),
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
  ...API_TOKEN_PREFIXES.map((regex) => pattern('api-token', regex, { accept: hasDigitAndLetter })),
];

function hasDigitAndLetter(value: string): boolean {
  return /\d/.test(value) && /[A-Za-z]/.test(value.replace(/^[a-z0-9]{1,10}[-_.]/i, ''));
}

/** Whether a base64url segment decodes to a JOSE header: a JSON object naming its algorithm. */
function isJwtHeader(segment: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as unknown;
    return header !== null && typeof header === 'object' && typeof (header as { alg?: unknown }).alg === 'string';
  } catch {
    return false;
  }
}
