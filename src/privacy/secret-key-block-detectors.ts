import type { Detector } from './secret-detector.js';

/**
 * Private keys as blocks of text: PEM (`-----BEGIN … PRIVATE KEY-----`), PuTTY's `.ppk` and JSON Web
 * Keys. Keys travel in damaged shapes: a header wrapped over two lines by a narrow terminal or a
 * mail client, every line behind an e-mail quote (`> `), inside JSON with its line ends escaped
 * (`\n`), or cut off. A private key is redacted whole; a public block is protected from the entropy
 * rule. Pure; every scan is bounded and moves forward.
 */

// Between the words of a PEM label, and between lines: spaces, a line end (escaped in JSON), a quote prefix.
const GAP = String.raw`(?:[ \t]|\r?\n(?:[ \t]*>)*[ \t]*|(?:\\r)?\\n)`;
const BEGIN = new RegExp(
  String.raw`-----BEGIN${GAP}{1,8}((?:[A-Z0-9]{1,20}${GAP}{1,8}){0,6}[A-Z0-9]{1,20})${GAP}{0,8}-----`,
  'g',
);

/**
 * PEM blocks: a private key is redacted whole, to its closing line or, cut off, to the end of its
 * base64; public ones are protected from the entropy rule. The closing line counts only where the
 * body ends, so a key never runs on into another block further down the text.
 */
export const pemDetector: Detector = {
  kind: 'private-key',
  find(text, emit, protectedSpans) {
    BEGIN.lastIndex = 0;
    for (let match = BEGIN.exec(text); match !== null; match = BEGIN.exec(text)) {
      const begin = match.index;
      const headerEnd = begin + match[0].length;
      const words = match[1]!.split(new RegExp(`${GAP}+`)).filter(Boolean);
      const label = words.join(' ');
      let end = base64BodyEnd(text, headerEnd);
      const closing = new RegExp(
        String.raw`${GAP}{0,8}-----END${GAP}{1,8}${words.join(`${GAP}{1,8}`)}${GAP}{0,8}-----`,
        'y',
      );
      closing.lastIndex = end;
      if (closing.exec(text)) end = closing.lastIndex;
      if (/PRIVATE KEY/.test(label)) emit('private-key', begin, end);
      else protectedSpans.fill(1, begin, end);
      BEGIN.lastIndex = Math.max(end, headerEnd);
    }
  },
};

// Cut off (a preview, a truncated paste): the key runs as far as its base64 goes: long chunks on the
// header's own line (a key pasted on one line), then whole lines of base64 or `Name: value` headers,
// lines ending in real or escaped line ends, behind e-mail quote marks.
const SAME_LINE_CHUNK = /[ \t]+[A-Za-z0-9+/=]{16,4096}/y;
const BODY_LINE =
  /(?:\r?\n(?:[ \t]*>)*|(?:\\r)?\\n)[ \t]*(?:[A-Za-z0-9+/=]{1,4096}|[A-Za-z][A-Za-z-]{0,40}:[^\n\\]{0,200})?[ \t]*(?=\r?\n|(?:\\r)?\\n|$|["'])/y;

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

// PuTTY keys: the private part is the base64 after `Private-Lines: N` (and its MAC).
const PUTTY_PRIVATE =
  /Private-Lines:[ \t]*\d{1,4}[ \t]*((?:\r?\n[ \t]*[A-Za-z0-9+/=]{4,4096}[ \t]*(?=\r?\n|$))+)(?:\r?\nPrivate-(?:MAC|Hash):[ \t]*[0-9a-fA-F]{16,128})?/g;

/** PuTTY `.ppk` files: the private lines and their MAC; the public lines and the comment stay. */
export const puttyKeyDetector: Detector = {
  kind: 'private-key',
  find(text, emit) {
    if (!text.includes('Private-Lines:')) return;
    PUTTY_PRIVATE.lastIndex = 0;
    for (let match = PUTTY_PRIVATE.exec(text); match !== null; match = PUTTY_PRIVATE.exec(text)) {
      const start = match.index + match[0].indexOf(match[1]!);
      emit('private-key', start, match.index + match[0].length);
    }
  },
};

// A JSON Web Key's private members (RFC 7518 §6): `d` and the CRT values of RSA and EC keys, `k` of an oct key.
const JWK_PRIVATE = /"(?:d|p|q|dp|dq|qi|k)"[ \t]*:[ \t]*"([A-Za-z0-9_-]{16,8192})"/g;

/** JSON Web Keys: inside an object that has `"kty"`, the private members' values. */
export const jwkDetector: Detector = {
  kind: 'private-key',
  find(text, emit) {
    if (!text.includes('"kty"')) return;
    JWK_PRIVATE.lastIndex = 0;
    for (let match = JWK_PRIVATE.exec(text); match !== null; match = JWK_PRIVATE.exec(text)) {
      // The same object: a "kty" between its opening brace and this member.
      const open = text.lastIndexOf('{', match.index);
      if (open === -1 || !text.slice(open, match.index).includes('"kty"')) continue;
      const start = match.index + match[0].length - 1 - match[1]!.length;
      emit('private-key', start, start + match[1]!.length);
    }
  },
};
