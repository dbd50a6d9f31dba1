import { isNotAValue, pattern, type Detector } from './secret-detector.js';

/**
 * Credentials in the lines of connection strings and credential files: the password field of an
 * ODBC, ADO.NET or JDBC connection string (`PWD={…}`, `Password=My Secret 9;`), `.pgpass` and
 * `.netrc` lines, the base64 `user:password` of `.npmrc`'s `_auth` and Docker's `"auth"`, and
 * password hashes (`.htpasswd`, `/etc/shadow`, bcrypt and argon2 strings), which are as good as the
 * password to anyone who can crack them. Pure; every pattern is bounded.
 */

// A key of a connection string other than the password: what makes `key=value;` pairs one.
const CONNECTION_KEY =
  /(?:^|[;\s"'])(?:server|data source|host|hostname|database|initial catalog|dbname|uid|user id|user|username|driver|provider|dsn|port|address|addr|network address|trusted_connection|encrypt|sslmode|charset)[ \t]*=/i;
// `PWD={a;b}}c}` (braces quote, `}}` is a brace), "…", '…', or a bare value that runs to the `;` (an apostrophe may sit inside it).
const PASSWORD_FIELD =
  /(^|[;\s"'(])(password|pwd|passwd|pass)[ \t]*=[ \t]*(?:\{((?:[^}\n]|\}\}){1,500})\}|"([^"\n]{1,500})"|'([^'\n]{1,500})'|([^;\n"'][^;\n"]{0,499}))/dgi;

const CONTEXT = 300;

/** The password field of a `key=value;` connection string, whatever it holds (spaces, `;` inside braces). */
export const connectionStringDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    if (!/p(?:ass)?w(?:or)?d|pass/i.test(text) || !text.includes('=')) return;
    PASSWORD_FIELD.lastIndex = 0;
    for (let match = PASSWORD_FIELD.exec(text); match !== null; match = PASSWORD_FIELD.exec(text)) {
      const group = [3, 4, 5, 6].find((index) => match![index] !== undefined)!;
      const span = match.indices![group]!;
      const braced = group === 3;
      let end = span[1];
      let value = match[group]!;
      if (!braced) {
        // Only inside a connection string: a `;` before the field or a `key=` pair after it, and another key on the line.
        // The line around it, at most CONTEXT characters either side (a huge line stays linear).
        const windowStart = Math.max(0, match.index - CONTEXT);
        const lineStart = windowStart + text.slice(windowStart, match.index).lastIndexOf('\n') + 1;
        const after = text.slice(end, end + CONTEXT);
        const lineEnd = end + (after.includes('\n') ? after.indexOf('\n') : after.length);
        const line = text.slice(lineStart, lineEnd);
        const before = match[1] === ';';
        const pairAfter = /^[ \t]*;[ \t]*[A-Za-z][A-Za-z _]{0,30}=/.test(after);
        if (!(before || pairAfter) || !CONNECTION_KEY.test(line.replace(match[0], ''))) continue;
        const trimmed = value.replace(/[ \t]+$/, '');
        end -= value.length - trimmed.length;
        value = trimmed;
      }
      if (
        value.trim().length < 3 ||
        isNotAValue(value.trim()) ||
        /^(?:your|my|the)[ _-]?(?:password|passwd|pass|pwd|secret)$/i.test(value.trim())
      )
        continue;
      emit('password', span[0], end);
    }
  },
};

/** `host:port:database:user:password`, a `.pgpass` line: the password. */
export const pgpassDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    const regex =
      /(?<![\w.:@/-])([A-Za-z0-9.*-]{1,253}):(\d{1,5}|\*):([^:\s]{1,64}):([^:\s]{1,64}):((?:\\:|[^:\s]){3,128})(?![:\w])/dg;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const fields = match.slice(1, 6) as string[];
      // Not an address or a clock: a host with a letter or a star, fields that are not all hex groups.
      if (!/[A-Za-z*]/.test(fields[0]!) || fields.every((field) => /^[0-9a-fA-F]{0,4}$/.test(field))) continue;
      const value = fields[4]!.replace(/[.,;)]+$/, '');
      if (isNotAValue(value) || value.length < 3) continue;
      const start = match.indices![5]![0];
      emit('password', start, start + value.length);
    }
  },
};

/** `machine host login user password secret`, a `.netrc` entry (on one line or several). */
export const netrcDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    const regex =
      /\b(?:machine[ \t]+\S{1,253}|default)(?:\s+(?:login|account|port)[ \t]+\S{1,256}){0,3}\s+password[ \t]+(\S{1,256})/dg;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const value = match[1]!;
      if (isNotAValue(value)) continue;
      const span = match.indices![1]!;
      emit('password', span[0], span[1]);
    }
  },
};

/** `.npmrc`'s `_auth=<base64>` and Docker's `"auth": "<base64 of user:password>"`. */
export const encodedAuthDetector: Detector = {
  kind: 'basic-auth-credentials',
  find(text, emit) {
    if (!/auth/.test(text)) return;
    const regex =
      /(?<![A-Za-z0-9])(_auth|"auth"|auth)["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9+/]{8,4096}={0,2})(?![A-Za-z0-9+/=])/dg;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const value = match[2]!;
      // A bare `auth` or Docker's "auth" is taken only when it decodes to `user:password`.
      if (match[1] !== '_auth' && !decodesToCredentials(value)) continue;
      const span = match.indices![2]!;
      emit('basic-auth-credentials', span[0], span[1]);
    }
  },
};

function decodesToCredentials(value: string): boolean {
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  return /^[\x21-\x7e]{1,128}:[\x20-\x7e]{1,256}$/.test(decoded) && !decoded.startsWith(':');
}

/** Password hashes: crypt(3) strings (`$2y$…`, `$6$…`, `$apr1$…`, `$y$…`), argon2, PBKDF2, LDAP's `{SSHA}`. */
export const passwordHashDetectors: readonly Detector[] = [
  pattern('password-hash', /\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}(?=\.?(?![./A-Za-z0-9]))/),
  pattern('password-hash', /\$[56]\$(?:rounds=\d{1,9}\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43,86}(?![./A-Za-z0-9])/),
  pattern('password-hash', /\$(?:1|apr1)\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}(?=\.?(?![./A-Za-z0-9]))/),
  pattern('password-hash', /\$y\$[./A-Za-z0-9]{1,20}\$[./A-Za-z0-9]{1,64}\$[./A-Za-z0-9]{43}(?=\.?(?![./A-Za-z0-9]))/),
  pattern(
    'password-hash',
    /\$argon2(?:id|i|d)\$v=\d{1,3}\$m=\d{1,10},t=\d{1,5},p=\d{1,5}\$[A-Za-z0-9+/]{8,128}\$[A-Za-z0-9+/]{16,256}/,
  ),
  pattern(
    'password-hash',
    /\b(?:pbkdf2_sha(?:1|256|512)|\$pbkdf2-sha(?:1|256|512))\$\d{1,9}\$[./A-Za-z0-9+]{4,128}\$[./A-Za-z0-9+=]{16,256}/,
  ),
  pattern('password-hash', /\{(?:SSHA|SHA|SSHA256|SSHA512|SMD5)\}[A-Za-z0-9+/]{20,256}={0,2}/),
];
