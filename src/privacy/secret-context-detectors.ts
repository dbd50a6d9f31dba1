import { isNotAValue, pattern, type Detector } from './secret-detector.js';

/**
 * The context rules of secret redaction: a value named as a secret (`password=…`, `"api_key": "…"`,
 * `Authorization: Bearer …`, `mysql -p…`, `docker login -p …`, "the password is …"). Only the value
 * is replaced: the key, the user name and the command stay, so the memory still reads. Pure; every
 * pattern is bounded.
 */

// `pw` and `pass` count only as a whole word or after a separator (`DB_PASS`, `admin-pw`), never inside `bypass`.
// A key may carry a convention's suffix after the word: Rails' SECRET_KEY_BASE, JWT_SECRET_PROD, SIGNING_KEY_HEX.
const SECRET_KEY_WORDS =
  '(?:password|passwd|passphrase|pwd|(?<![A-Za-z])pw|(?<![A-Za-z])pass|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|' +
  'client[_-]?secret|auth[_-]?key|account[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|credentials?)' +
  '(?:[_.-](?:base|value|b64|base64|hex|raw|prod|production|live|staging|dev|test|v?\\d{1,2}))?';
const SECRET_KEY_HINT = /pass|pwd|pw|secret|token|key|credential/i;
const PASSWORD_KEY = /(?:password|passwd|passphrase|pwd|(?<![A-Za-z])pw|(?<![A-Za-z])pass)(?:[_.-]\w{1,10})?$/i;
// Unquoted values that are code, not data: a dotted path or call (`process.env.API_KEY`,
// `this.#apiKey`, `getToken()`), an index (`argv[index]`), a regex, array or object literal.
const CODE_REFERENCE = /^(?:[A-Za-z_$#][\w$#]*\.)+[A-Za-z_$#][\w$#]*(?:\(.*)?$|^[A-Za-z_$#][\w$#]*[([]|^[/[({\\#]/;
// A bare identifier without digits (`password: superuserPassword`, `token = nextToken`): a variable.
const BARE_IDENTIFIER = /^[A-Za-z_$][A-Za-z_$]*$/;

// Words that say something about a password, or name a variable holding one, rather than being
// one: "the password is incorrect", `password: input`. Shorter words than MIN_WORD_PASSWORD never count.
const DESCRIBES_A_PASSWORD = new Set(
  (
    'incorrect correct wrong invalid valid required optional expired missing empty blank strong short secure insecure unsafe ' +
    'same different mandatory needed necessary protected compromised leaked okay default random unique complex simple ' +
    'forgotten locked disabled enabled active inactive shared private public personal attached ready nothing something ' +
    'anything everything written given hidden broken stolen taken chosen known unknown shown visible invisible important ' +
    'sensitive insensitive always never still theirs these those which where whose ' +
    'input value values data hash plain plaintext field param params result response request config options settings ' +
    'login credentials prompt entry variable argument string number object'
  ).split(' '),
);
const MIN_WORD_PASSWORD = 5;

/**
 * A password of letters only (`sunflower`, `correcthorsebatterystaple`): taken when it is one plain
 * word (not camelCase), not a word about passwords or a participle ("stored", "changing"), and it
 * ends its clause. In code (`password: input,` or `input }`) a comma or bracket after it means a variable.
 */
function isWordPassword(value: string, after: string, code: boolean): boolean {
  if (value.length < MIN_WORD_PASSWORD || value.length > 64 || !/^[A-Za-z]+$/.test(value) || /[a-z][A-Z]/.test(value))
    return false;
  if (isNotAValue(value)) return false;
  const lower = value.toLowerCase();
  if (DESCRIBES_A_PASSWORD.has(lower) || /(?:ed|ing|ly)$/.test(lower)) return false;
  const clauseEnd = code
    ? /^(?:[ \t]*(?:\r?\n|$)|[.!?](?:\s|$)|[ \t]+\()/
    : /^(?:[ \t]*(?:\r?\n|$)|[.!?;,:)](?:\s|$)|[ \t]+(?:\(|(?:and|but|so|or|then)\b))/;
  return clauseEnd.test(after);
}

/** Whether an assigned value looks like a credential rather than a reference, a type or a word. */
function acceptAssignedValue(value: string, quoted: boolean, tight: boolean): boolean {
  if (isNotAValue(value)) return false;
  if (quoted) return value.trim().length >= 3;
  if (value.length < 4 || CODE_REFERENCE.test(value)) return false;
  // `PASSWORD=hunter` (no spaces around =) is how env files and URLs carry values: take it as one.
  if (tight) return true;
  return !BARE_IDENTIFIER.test(value) && (/\d/.test(value) || /[^A-Za-z0-9_$]/.test(value));
}

/** `key = value`, `key: value`, `"key": "value"`, `key := value`, `key => value`, where the key ends in a secret's name. */
const assignmentDetector: Detector = {
  kind: 'credential-assignment',
  find(text, emit) {
    if (!SECRET_KEY_HINT.test(text)) return;
    const regex = new RegExp(
      `(?<![A-Za-z0-9])[A-Za-z0-9_.-]{0,60}?(?:${SECRET_KEY_WORDS})(["'\`]?)([ \\t]*)(:=|=>|=|:)([ \\t]*)(?:"([^"\\n]{1,500})"|'([^'\\n]{1,500})'|\`([^\`\\n]{1,500})\`|([^\\s"'\`,;&)}\\]<>]{1,500}))`,
      'gid',
    );
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const key = text.slice(match.index, match.indices![1]![0]);
      const groupIndex = [5, 6, 7, 8].find((index) => match![index] !== undefined)!;
      const value = match[groupIndex]!;
      const quoted = groupIndex !== 8;
      const tight = !quoted && match[2] === '' && match[4] === '' && match[3] === '=';
      const span = match.indices![groupIndex]!;
      // `password: string` in a type, `token: Token`: a declaration, not a value.
      if (!quoted && match[3] === ':' && /^[A-Z][A-Za-z]*(?:\[\])?$/.test(value) && !/\d/.test(value)) continue;
      const isPassword = PASSWORD_KEY.test(key);
      const accepted =
        acceptAssignedValue(value, quoted, tight) ||
        (isPassword && !quoted && isWordPassword(value, text.slice(span[1], span[1] + 8), true));
      if (!accepted) continue;
      emit(isPassword ? 'password' : 'credential-assignment', span[0], span[1]);
    }
  },
};

/** "the password is Tr0ub4dor&3", "the wifi password is sunflower", "my PIN is 4821": prose that states a secret. */
const proseDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    const regex =
      /\b(password|passphrase|passcode|pin|pw|pass|api key|access key|secret key|secret|token)\b(?:\s+(?:for|of|to|on)\s+[^.\n:=]{1,60}?)?\s+(?:is|was|is set to|=|:)\s+(?:"([^"\n]{1,200})"|'([^'\n]{1,200})'|(\S{1,200}))/dgi;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const noun = match[1]!.toLowerCase();
      const groupIndex = match[2] !== undefined ? 2 : match[3] !== undefined ? 3 : 4;
      let value = match[groupIndex]!;
      const span = match.indices![groupIndex]!;
      let end = span[1];
      if (groupIndex === 4) {
        const trimmed = value.replace(/[.,;:!?)"'\]]+$/, '');
        end -= value.length - trimmed.length;
        value = trimmed;
      }
      if (isNotAValue(value)) continue;
      const quoted = groupIndex !== 4;
      // "the first pass is slow", "each pass is O(n)": a bare pw/pass holds a digit when it is a password.
      if ((noun === 'pw' || noun === 'pass') && (quoted ? false : !/\d/.test(value) || value.length < 6)) continue;
      const isPassword = noun === 'password' || noun === 'passphrase' || noun === 'pw' || noun === 'pass';
      const isPin = noun === 'pin' || noun === 'passcode';
      let accept: boolean;
      if (quoted) accept = value.trim().length >= 3;
      else if (isPin)
        accept = /^\d{4,12}$/.test(value) || (value.length >= 6 && /\d/.test(value) && /[A-Za-z]/.test(value));
      else if (isPassword)
        accept =
          (value.length >= 6 && /[A-Za-z]/.test(value) && /[\d\W_]/.test(value)) ||
          isWordPassword(value, text.slice(end, end + 8), false);
      else accept = value.length >= 12 && /\d/.test(value) && /[A-Za-z]/.test(value) && !/^https?:/.test(value);
      if (accept) emit(isPassword || isPin ? 'password' : 'credential-assignment', span[0], end);
    }
  },
};

/** `curl -u user:password`, `--user user:password`: the password part. */
const curlUserDetector: Detector = {
  kind: 'basic-auth-credentials',
  find(text, emit) {
    const regex = /(?:^|\s)(?:-u|--user)(?:\s+|=)(["']?)([^\s:"']{1,128}):([^\s"']{1,256})\1(?=\s|$)/g;
    for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
      const password = match[3]!;
      if (isNotAValue(password)) continue;
      const end = match.index + match[0].length - match[1]!.length;
      emit('basic-auth-credentials', end - password.length, end);
    }
  },
};

// A command-line value: quoted, or a run without spaces or quotes.
const ARGUMENT = `(?:'([^'\\n]{1,256})'|"([^"\\n]{1,256})"|([^\\s'"]{1,256}))`;
// Command words, options and values before the one that holds the password: on one line, one command.
const SAME_COMMAND = '[^\\n;|&]{0,300}?';
const LOGIN_COMMANDS = 'docker|podman|nerdctl|buildah|skopeo|oras|crane|helm(?:[ \\t]+registry)?';

// Where a command takes a password as an option value. Each is taken whatever it looks like: the
// command says what it is. (`--password=…` and `PGPASSWORD=…` are assignments, found above.)
const COMMAND_PASSWORDS: readonly RegExp[] = [
  // mysql -pS3cret: attached to -p (a lone -p asks for it; -P is the port).
  new RegExp(
    `\\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlpump|mariadb(?:-dump|-admin)?)\\b${SAME_COMMAND}[ \\t]-p${ARGUMENT}`,
    'gd',
  ),
  // docker login -p S3cret, helm registry login --password S3cret
  new RegExp(
    `\\b(?:${LOGIN_COMMANDS})[ \\t]+(?:[^\\n;|&]{0,100}?[ \\t])?login\\b${SAME_COMMAND}[ \\t](?:-p|--password)(?:=|[ \\t]+)${ARGUMENT}`,
    'gd',
  ),
  // sshpass -p S3cret ssh host, redis-cli -a S3cret, mongosh -p S3cret
  new RegExp(
    `\\b(?:sshpass${SAME_COMMAND}[ \\t]-p|redis-cli${SAME_COMMAND}[ \\t](?:-a|--pass)|mongo(?:sh)?${SAME_COMMAND}[ \\t](?:-p|--password))(?:=|[ \\t]+)${ARGUMENT}`,
    'gd',
  ),
];
// `--password S3cret`, `--api-token abc123…` for any command: only values that look like credentials.
const SECRET_FLAG = new RegExp(
  `(?:^|[ \\t])--(?:[a-z0-9]+-)*(password|passwd|passphrase|token|secret|api-key|apikey|access-key|secret-key|client-secret)[ \\t]+${ARGUMENT}`,
  'gd',
);

/** Passwords given to commands as options: `mysql -p…`, `docker login -p …`, `sshpass -p …`, `--password …`. */
const commandLineDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    if (!/-p|-a|--pass|--[a-z-]*(?:token|secret|key)/i.test(text)) return;
    const value = (
      match: RegExpExecArray,
      first: number,
    ): { value: string; span: [number, number]; quoted: boolean } | undefined => {
      const index = [first, first + 1, first + 2].find((group) => match[group] !== undefined);
      if (index === undefined) return undefined;
      return { value: match[index]!, span: match.indices![index]! as [number, number], quoted: index !== first + 2 };
    };
    for (const regex of COMMAND_PASSWORDS) {
      regex.lastIndex = 0;
      for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
        const found = value(match, 1);
        if (!found || found.value.trim().length < 3 || isNotAValue(found.value) || found.value.startsWith('-'))
          continue;
        emit('password', found.span[0], found.span[1]);
      }
    }
    SECRET_FLAG.lastIndex = 0;
    for (let match = SECRET_FLAG.exec(text); match !== null; match = SECRET_FLAG.exec(text)) {
      const found = value(match, 2);
      if (!found || found.value.startsWith('-') || !acceptAssignedValue(found.value, found.quoted, false)) continue;
      emit(/^pass/.test(match[1]!) ? 'password' : 'credential-assignment', found.span[0], found.span[1]);
    }
  },
};

/** `Authorization: Bearer …` and bare `Bearer …` tokens. */
export const bearerDetector = pattern('bearer-token', /\bBearer\s+([A-Za-z0-9._~+/-]{12,4096}=*)/i, {
  group: 1,
  accept: (value) => /\d/.test(value) || (/[a-z]/.test(value) && /[A-Z]/.test(value)),
});

/** `Authorization: Basic …`: the base64 of `user:password`. */
export const basicAuthDetector = pattern(
  'basic-auth-credentials',
  /\bAuthorization\s*:\s*Basic\s+([A-Za-z0-9+/]{8,4096}=*)/i,
  { group: 1 },
);

export { assignmentDetector, commandLineDetector, curlUserDetector, proseDetector };
