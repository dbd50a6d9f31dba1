import { isWordShaped } from './high-entropy-token.js';
import { isNotAValue, PLACEHOLDER_PREFIX, type Detector } from './secret-detector.js';

/**
 * Secrets inside URLs. A URL is full of random-looking identifiers that are not secrets (document
 * ids, image names, commit hashes), so the entropy rule never applies inside one; a value there is
 * a secret only when its place says so: the password of `user:password@`, a query value named as a
 * secret (`?sig=`, `&token=`), or a random path segment after a segment that names a credential
 * (`/hooks/…`, `/webhook/…`, `/token/…`, `/key/…`). Webhook URLs of known services are provider
 * formats (src/privacy/secret-provider-patterns.ts). Pure.
 */

/** A URL with a scheme, as far as it runs (quotes, spaces and angle brackets end it). */
export const URL_SPAN = /\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}:\/\/[^\s"'<>`]{1,4096}/g;

/**
 * `scheme://user:password@host`: the password goes, the user and the host stay. A password may hold
 * `@` and `:` (`mysql://root:Xq9@Pass7@host`): the user info runs to the last `@` before the host.
 */
export const urlPasswordDetector: Detector = {
  kind: 'url-password',
  find(text, emit) {
    const regex = /\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}:\/\/([^\s/?#'"<>]{1,256})@(?=[^\s/?#@'"<>]*(?:[\s/?#'"<>]|$))/g;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const userinfo = match[1]!;
      const colon = userinfo.indexOf(':');
      if (colon === -1) continue;
      const password = userinfo.slice(colon + 1);
      // `u:p@db` and `user:password@host` are how documentation writes the shape, not credentials.
      if (password.length < 3 || isNotAValue(password)) continue;
      const start = match.index + match[0].length - 1 - password.length;
      emit('url-password', start, start + password.length);
    }
  },
};

const URL_QUERY_SECRET_NAMES =
  'sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-signature|x-goog-credential|access_token|id_token|refresh_token|client_secret|api_key|apikey|api-key|key|token|auth|password|pass|pwd|secret';

/** `?sig=…`, `&token=…`, `#access_token=…`: a query or fragment value named as a secret. */
export const urlQueryDetector: Detector = {
  kind: 'url-query-secret',
  find(text, emit) {
    // A value ends at the next parameter: `&`, `#`, and `;` (JDBC's and old CGI's separator).
    const regex = new RegExp(`[?&;#](?:${URL_QUERY_SECRET_NAMES})=([^\\s&;#'"<>]{6,2048})`, 'gid');
    for (const url of text.matchAll(URL_SPAN)) {
      regex.lastIndex = 0;
      const body = url[0];
      for (let match = regex.exec(body); match !== null; match = regex.exec(body)) {
        const value = match[1]!;
        if (value.startsWith(PLACEHOLDER_PREFIX) || value.startsWith('%5BREDACTED')) continue;
        const span = match.indices![1]!;
        emit('url-query-secret', url.index + span[0], url.index + span[1]);
      }
    }
  },
};

/** `otpauth-migration://offline?data=…`: an authenticator's export, every TOTP seed it holds. */
export const otpMigrationDetector: Detector = {
  kind: 'url-query-secret',
  find(text, emit) {
    const regex = /otpauth-migration:\/\/offline\?data=([^\s&#'"<>]{8,8192})/dgi;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const span = match.indices![1]!;
      emit('url-query-secret', span[0], span[1]);
    }
  },
};

// Path segments that say the segments after them are a credential.
const PATH_SECRET_HINT =
  /^(?:hooks?|webhooks?|webhookb2|incomingwebhook|tokens?|keys?|secrets?|api[-_]?keys?|access[-_]?tokens?|signatures?|passwords?)$/i;
const UUID_SEGMENT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const MIN_PATH_SECRET = 8;

/** `https://mattermost.example/hooks/pzk6fr4qdbbu7jz1aidmqqajdh`, `https://n8n.example/webhook/<uuid>`: the random segments after the hint. */
export const urlPathDetector: Detector = {
  kind: 'url-path-secret',
  find(text, emit) {
    for (const url of text.matchAll(URL_SPAN)) {
      const body = url[0];
      const pathStart = body.indexOf('/', body.indexOf('://') + 3);
      if (pathStart === -1) continue;
      const queryStart = body.slice(pathStart).search(/[?#]/);
      const path = queryStart === -1 ? body.slice(pathStart + 1) : body.slice(pathStart + 1, pathStart + queryStart);
      let hinted = false;
      let offset = url.index + pathStart + 1;
      for (const segment of path.split('/')) {
        // A sentence may end right after the URL: its punctuation is not part of the segment.
        const value = segment.replace(/[.,;:!?)\]]+$/, '');
        if (hinted && looksLikePathSecret(value)) emit('url-path-secret', offset, offset + value.length);
        if (PATH_SECRET_HINT.test(value)) hinted = true;
        offset += segment.length + 1;
      }
    }
  },
};

// Random enough to be a credential: a UUID, or letters and digits that are not word-shaped (`v2`, `rsa2048-public` are not).
function looksLikePathSecret(segment: string): boolean {
  if (segment.length < MIN_PATH_SECRET || segment.length > 256 || segment.startsWith(PLACEHOLDER_PREFIX)) return false;
  if (UUID_SEGMENT.test(segment)) return true;
  if (!/^[A-Za-z0-9_-]+$/.test(segment) || !/[A-Za-z]/.test(segment) || !/[0-9]/.test(segment)) return false;
  return !isWordShaped(segment);
}
