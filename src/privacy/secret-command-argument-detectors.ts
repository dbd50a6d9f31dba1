import { isNotAValue, type Detector } from './secret-detector.js';

/**
 * Commands that take a password (or a token) as a plain argument, where only the command says what
 * it is: `htpasswd -b file user PASS`, `echo 'user:PASS' | chpasswd`, `rabbitmqctl add_user u PASS`,
 * `openssl … -pass pass:PASS`, `keytool -storepass PASS`, `zip -P PASS`, `sqlcmd -P PASS`,
 * `net user u PASS /add`, `ngrok config add-authtoken TOKEN`, `sqlplus u/PASS@db`,
 * `smbclient -U u%PASS`, `ldapsearch -w PASS`, `ssh-keygen -N PASS`. (mysql, docker login, sshpass,
 * redis-cli and `--password …` are in secret-context-detectors.ts.) Pure; every pattern is bounded.
 */

// A command-line value: quoted, or a run without spaces or quotes.
const ARGUMENT = `(?:'([^'\\n]{1,256})'|"([^"\\n]{1,256})"|([^\\s'"]{1,256}))`;
// Words and options of the same command before the one that matters: one line, one command.
const SAME_COMMAND = '[^\\n;|&]{0,300}?';
const WORD = `(?:'[^'\\n]{1,256}'|"[^"\\n]{1,256}"|[^\\s'"|;&]{1,256})`;

const ARGUMENT_PASSWORDS: readonly RegExp[] = [
  // echo 'user:PASS' | sudo chpasswd
  new RegExp(
    `\\becho[ \\t]+(?:-[ne][ \\t]+)?(['"]?)[^\\s:'"]{1,64}:([^\\s'"]{1,256})\\1[ \\t]*\\|[ \\t]*(?:sudo[ \\t]+)?chpasswd\\b`,
    'gd',
  ),
  // echo PASS | passwd --stdin user
  new RegExp(`\\becho[ \\t]+${ARGUMENT}[ \\t]*\\|[ \\t]*(?:sudo[ \\t]+)?passwd[ \\t]+--stdin\\b`, 'gd'),
  // rabbitmqctl add_user NAME PASS, rabbitmqctl change_password NAME PASS
  new RegExp(`\\brabbitmqctl[ \\t]+(?:add_user|change_password)[ \\t]+${WORD}[ \\t]+${ARGUMENT}`, 'gd'),
  // net user NAME PASS /add (not `*`, which asks for it)
  new RegExp(`\\bnet[ \\t]+user[ \\t]+${WORD}[ \\t]+${ARGUMENT}(?=[ \\t]+/|[ \\t]*(?:\\r?\\n|$))`, 'gd'),
  // openssl … -pass pass:PASS, -passin pass:PASS, -passout pass:PASS
  new RegExp(`[ \\t]-pass(?:in|out)?[ \\t]+(['"]?)pass:([^\\s'"]{1,256})\\1`, 'gd'),
  // openssl enc -k PASS
  new RegExp(`\\bopenssl[ \\t]+(?:enc|aes[\\w-]*|des[\\w-]*)\\b${SAME_COMMAND}[ \\t]-k[ \\t]+${ARGUMENT}`, 'gd'),
  // keytool -storepass PASS -keypass PASS -srcstorepass PASS -deststorepass PASS
  new RegExp(`[ \\t]-(?:src|dest|new)?(?:store|key)pass[ \\t]+${ARGUMENT}`, 'gd'),
  // zip -P PASS, unzip -P PASS
  new RegExp(`\\b(?:zip|unzip|zipcloak)\\b${SAME_COMMAND}[ \\t]-P[ \\t]+${ARGUMENT}`, 'gd'),
  // 7z a -pPASS, rar a -pPASS
  new RegExp(`\\b(?:7z|7za|7zr|rar|unrar)\\b${SAME_COMMAND}[ \\t]-p${ARGUMENT}`, 'gd'),
  // sqlcmd -P PASS, bcp … -P PASS, osql, isql
  new RegExp(`\\b(?:sqlcmd|bcp|osql|isql)\\b${SAME_COMMAND}[ \\t]-P[ \\t]*${ARGUMENT}`, 'gd'),
  // ngrok config add-authtoken TOKEN, ngrok authtoken TOKEN
  new RegExp(`\\bngrok[ \\t]+(?:config[ \\t]+add-)?authtoken[ \\t]+${ARGUMENT}`, 'gd'),
  // ldapsearch -w PASS (-W asks for it)
  new RegExp(
    `\\bldap(?:search|add|modify|delete|passwd|compare|whoami|modrdn)\\b${SAME_COMMAND}[ \\t]-w[ \\t]+${ARGUMENT}`,
    'gd',
  ),
  // ssh-keygen -N NEW -P OLD
  new RegExp(`\\bssh-keygen\\b${SAME_COMMAND}[ \\t]-[NP][ \\t]+${ARGUMENT}`, 'gd'),
  // az login -u NAME -p PASS
  new RegExp(`\\baz[ \\t]+login\\b${SAME_COMMAND}[ \\t]-p[ \\t]+${ARGUMENT}`, 'gd'),
  // mysqladmin -u root password NEW
  new RegExp(`\\bmysqladmin\\b${SAME_COMMAND}[ \\t]password[ \\t]+${ARGUMENT}`, 'gd'),
  // sqlplus user/PASS@db, rman target user/PASS@db, exp/imp/expdp/impdp
  new RegExp(
    `\\b(?:sqlplus|rman[ \\t]+target|expdp|impdp|exp|imp|sqlldr)(?:[ \\t]+-\\w+)*[ \\t]+[A-Za-z0-9_$#]{1,64}/([^\\s@/'"]{3,128})(?=@|[ \\t]|$)`,
    'gd',
  ),
  // smbclient -U user%PASS, rpcclient, mount.cifs: Samba's user%password
  new RegExp(`(?:^|[ \\t])(?:-U|--user(?:name)?=?)[ \\t]*["']?[\\w.\\\\@-]{1,64}%([^\\s"']{3,256})`, 'gd'),
];

/** Passwords given to commands as plain arguments, and `htpasswd -b`'s password (its place depends on the flags). */
export const commandArgumentDetector: Detector = {
  kind: 'password',
  find(text, emit) {
    for (const regex of ARGUMENT_PASSWORDS) {
      regex.lastIndex = 0;
      for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
        // The value is the last group that matched.
        let index = match.length - 1;
        while (index > 0 && match[index] === undefined) index -= 1;
        const value = match[index];
        if (value === undefined || index === 0 || !acceptValue(value)) continue;
        const span = match.indices![index]!;
        emit('password', span[0], span[1]);
      }
    }
    findHtpasswd(text, emit);
  },
};

function acceptValue(value: string): boolean {
  const trimmed = value.trim();
  return trimmed.length >= 3 && trimmed !== '*' && !trimmed.startsWith('-') && !isNotAValue(trimmed);
}

const HTPASSWD = /\bhtpasswd\b/g;
const TOKEN = /[ \t]+(?:'([^'\n]{0,256})'|"([^"\n]{0,256})"|([^\s'"|;&]{1,256}))/y;

/** `htpasswd -b[c…] file user PASS`, `htpasswd -nb user PASS`: with `b` in the flags, the last positional is the password. */
function findHtpasswd(text: string, emit: Parameters<Detector['find']>[1]): void {
  HTPASSWD.lastIndex = 0;
  for (let match = HTPASSWD.exec(text); match !== null; match = HTPASSWD.exec(text)) {
    let position = match.index + match[0].length;
    let flags = '';
    const positionals: Array<{ start: number; end: number; value: string }> = [];
    for (let count = 0; count < 12; count += 1) {
      TOKEN.lastIndex = position;
      const token = TOKEN.exec(text);
      if (!token) break;
      position = TOKEN.lastIndex;
      const group = [1, 2, 3].find((index) => token[index] !== undefined)!;
      const value = token[group]!;
      if (group === 3 && /^-[A-Za-z]+$/.test(value) && positionals.length === 0) {
        flags += value.slice(1);
        // -C cost and -r rounds take a number.
        if (/[Cr]$/.test(value)) {
          TOKEN.lastIndex = position;
          if (TOKEN.exec(text)) position = TOKEN.lastIndex;
        }
        continue;
      }
      const start = token.index + token[0].length - value.length - (group === 3 ? 0 : 1);
      positionals.push({ start, end: start + value.length, value });
    }
    if (!flags.includes('b')) continue;
    const password = positionals[flags.includes('n') ? 1 : 2];
    if (password && acceptValue(password.value)) emit('password', password.start, password.end);
  }
}
