import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EngramError } from '../../src/kernel/errors.js';
import { HIGH_ENTROPY_RULE, isHighEntropyToken, shannonEntropy } from '../../src/privacy/high-entropy-token.js';
import { SECRET_KINDS } from '../../src/privacy/secret-detector.js';
import { findSecrets, redactionPlaceholder, redactSecrets } from '../../src/privacy/secret-redaction.js';
import { NEAR_MISSES, SECRET_CASES } from '../fixtures/secrets-corpus.js';

const LOCOMO = new URL('../../../shared/data/locomo/locomo10.json', import.meta.url);
const MEMORYBANK = new URL('../../../shared/data/memorybank/memory_bank_en.json', import.meta.url);

describe('the secrets corpus', () => {
  it('holds at least 20 kinds, and a case of every kind the redactor names', () => {
    const kinds = new Set(SECRET_CASES.map((entry) => entry.kind));
    expect(kinds.size).toBeGreaterThanOrEqual(20);
    expect([...SECRET_KINDS].filter((kind) => !kinds.has(kind))).toEqual([]);
  });

  it.each(SECRET_CASES.map((entry, index) => [`${index} ${entry.kind}`, entry] as const))(
    'redacts %s and names its kind',
    (_label, entry) => {
      const result = redactSecrets(entry.text);
      for (const secret of entry.secrets) expect(result.text).not.toContain(secret);
      expect(result.kinds).toContain(entry.kind);
      expect(result.text).toContain(redactionPlaceholder(entry.kind));
      for (const kept of entry.keeps ?? []) expect(result.text).toContain(kept);
      // The report names kinds only: nothing of the secret travels with it.
      expect(JSON.stringify(result.kinds)).not.toContain(entry.secrets[0]!.slice(0, 12));
    },
  );

  it('redacts every secret of a document that holds them all, and counts them', () => {
    const document = SECRET_CASES.map((entry) => entry.text).join('\n\n');
    const result = redactSecrets(document);
    for (const entry of SECRET_CASES) for (const secret of entry.secrets) expect(result.text).not.toContain(secret);
    expect(result.count).toBeGreaterThanOrEqual(SECRET_CASES.length);
    expect(new Set(result.kinds)).toEqual(new Set(SECRET_CASES.map((entry) => entry.kind)));
  });

  it('leaves every near-miss exactly as it was (UUIDs, SHAs, identifiers, URLs without passwords, prose)', () => {
    for (const text of NEAR_MISSES) {
      const result = redactSecrets(text);
      expect(result, text).toEqual({ text, kinds: [], count: 0 });
    }
  });

  it('is idempotent: redacting redacted text changes nothing', () => {
    for (const text of [...SECRET_CASES.map((entry) => entry.text), ...NEAR_MISSES]) {
      const once = redactSecrets(text).text;
      expect(redactSecrets(once)).toEqual({ text: once, kinds: [], count: 0 });
    }
  });

  it('reports spans in text order without overlaps', () => {
    const document = SECRET_CASES.map((entry) => entry.text).join(' | ');
    const matches = findSecrets(document);
    for (let index = 1; index < matches.length; index += 1)
      expect(matches[index]!.start).toBeGreaterThanOrEqual(matches[index - 1]!.end);
  });
});

describe('context rules keep what is not secret', () => {
  it.each([
    [
      'postgres://app:S3cretPw9@db.internal:5432/orders',
      'postgres://app:[REDACTED:url-password]@db.internal:5432/orders',
    ],
    ['DB_PASSWORD=correcthorse', 'DB_PASSWORD=[REDACTED:password]'],
    ['password: hunter22', 'password: [REDACTED:password]'],
    ['"api_key": "abc"', '"api_key": "[REDACTED:credential-assignment]"'],
    ['Authorization: Bearer abcDEF1234567890xyz', 'Authorization: Bearer [REDACTED:bearer-token]'],
    ['my PIN is 4821.', 'my PIN is [REDACTED:password].'],
    ['https://x.example/a?token=abcdef123456&page=2', 'https://x.example/a?token=[REDACTED:url-query-secret]&page=2'],
    ['mysql -u root -pS3cr3tPa55word db', 'mysql -u root -p[REDACTED:password] db'],
    ['docker login -p Sup3rS3cret! -u me', 'docker login -p [REDACTED:password] -u me'],
    ['Password: correcthorsebatterystaple', 'Password: [REDACTED:password]'],
    ['the wifi password is sunflower', 'the wifi password is [REDACTED:password]'],
    [
      'https://hooks.zapier.com/hooks/catch/1234567/abcdefXyZ12345QwErTy/',
      'https://hooks.zapier.com/hooks/catch/1234567/[REDACTED:webhook-url]/',
    ],
    [
      'POST to https://hooks.example.org/hooks/x9Fq2LmZ7pRt4Wv8 now',
      'POST to https://hooks.example.org/hooks/[REDACTED:url-path-secret] now',
    ],
    ['app#access_token=9f8e7d6c5b4a39&state=x', 'app#access_token=[REDACTED:credential-assignment]&state=x'],
  ])('%s', (input, expected) => {
    expect(redactSecrets(input).text).toBe(expected);
  });

  it.each([
    'password: string;',
    'const token = await getToken();',
    'apiKey: this.#apiKey ?? NO_KEY',
    'const token = argv[index]!;',
    'password: superuserPassword,',
    'max_tokens: 2000',
    'OPENAI_API_KEY=${OPENAI_API_KEY}',
    'password=<your password>',
    'api_key: process.env.API_KEY',
    'The token is valid for 3600 seconds.',
    'The password is stored in 1Password.',
    'postgres://u:p@db/engram',
  ])('leaves code and references alone: %s', (text) => {
    expect(redactSecrets(text).text).toBe(text);
  });
});

describe('the high-entropy rule', () => {
  // The same generator the corpus uses, with its own seed: random tokens as real secrets look.
  function randomTokens(count: number, length: number, alphabet: string, seed: number): string[] {
    let state = seed;
    const next = (): number => {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      return state / 2_147_483_648;
    };
    return Array.from({ length: count }, () =>
      Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''),
    );
  }
  const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

  it('catches most random base62 and base64 tokens of 32 characters or more', () => {
    for (const [alphabet, seed] of [
      [BASE62, 7],
      [`${BASE62}+/`, 11],
      [`${BASE62}-_`, 13],
    ] as const) {
      const tokens = randomTokens(400, 40, alphabet, seed);
      const caught = tokens.filter((token) => isHighEntropyToken(token)).length;
      expect(caught / tokens.length).toBeGreaterThan(0.85);
    }
  });

  it('never flags identifiers, paths, hex hashes, UUIDs or lowercase slugs', () => {
    for (const token of [
      'getUserProfileByIdAndTimestampWithRetry2',
      'parseHTTPResponseHeadersFromSocketV2Async',
      'MAX_CONCURRENT_EXTRACTION_JOBS_PER_WORKER_2',
      'src/adapters/sqlite/sqlite-memory-store2.ts',
      '9fceb02d0ae598e95dc970b74767f19372d61af8',
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      '3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b',
      'radiant-floating-music-2024-05-17-v2',
      '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    ]) {
      expect(isHighEntropyToken(token), token).toBe(false);
    }
  });

  it('needs the length, the character classes and the entropy it documents', () => {
    expect(HIGH_ENTROPY_RULE.minLength).toBe(20);
    expect(isHighEntropyToken('aB3dE5fG7hJ9kL1mN2p')).toBe(false); // 19 characters
    expect(isHighEntropyToken('ab3de5fg7hj9kl1mn2pq4rs6')).toBe(false); // no uppercase
    expect(isHighEntropyToken('aB3dE5fG7hJ9kL1mN2pQ4rS6')).toBe(true);
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
  });
});

describe('bad input', () => {
  it('refuses what is not text with a clear error', () => {
    for (const value of [undefined, null, 42, {}, ['sk-']]) {
      expect(() => redactSecrets(value as unknown as string)).toThrow(EngramError);
      try {
        redactSecrets(value as unknown as string);
      } catch (error) {
        expect((error as EngramError).code).toBe('INVALID_INPUT');
      }
    }
    expect(redactSecrets('')).toEqual({ text: '', kinds: [], count: 0 });
  });

  it('answers hostile 64 KB inputs: repeated headers, unterminated keys, endless tokens', () => {
    const size = 64 * 1024;
    const unterminated = redactSecrets('-----BEGIN RSA PRIVATE KEY-----'.repeat(size / 31));
    expect(unterminated.text).not.toContain('BEGIN RSA PRIVATE KEY');
    const body = `-----BEGIN PRIVATE KEY-----\n${'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3\n'.repeat(1_500)}`;
    expect(redactSecrets(body).text).toBe('[REDACTED:private-key]');
    // One random-looking token of 64 KB: long tokens are held to a capped entropy bar, so it is caught.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    const endless = Array.from(
      { length: size },
      (_, index) => alphabet[(index * 7919 + ((index * index) % 61)) % alphabet.length],
    ).join('');
    expect(redactSecrets(endless).text).toBe('[REDACTED:high-entropy-token]');
    // A long token of three letters is not random, whatever its length.
    expect(redactSecrets('aB3'.repeat(size / 3)).count).toBe(0);
    const hostile = [
      'password='.repeat(size / 9),
      'http://a:b'.repeat(size / 10),
      'Bearer '.repeat(size / 7),
      'a_'.repeat(size / 2),
      'eyJabcdefghij.'.repeat(size / 14),
      'docker login x '.repeat(size / 15),
      'mysql -u root '.repeat(size / 14),
      `--${'a-'.repeat(size / 2 - 2)}`,
      'https://x.example/hooks/'.repeat(size / 24),
      'the password is '.repeat(size / 16),
      'backup codes: '.repeat(size / 14),
      `recovery codes:\n${'1234 5678\n'.repeat(size / 10)}`,
      '-----BEGIN RSA PRIVATE\n'.repeat(size / 23),
      'Server=x;Password=aaaa '.repeat(size / 23),
      'htpasswd -b a b '.repeat(size / 16),
      'TOTP secret is '.repeat(size / 15),
      `authenticator key: ${'abcd '.repeat(size / 5)}`,
      'a:1:b:c:'.repeat(size / 8),
      'machine x login y '.repeat(size / 18),
      `Private-Lines: 3\n${'AAAA\n'.repeat(size / 5)}`,
      `{"kty":"d":"${'a'.repeat(size)}`,
      '$2y$10$'.repeat(size / 7),
    ];
    for (const text of hostile) {
      const result = redactSecrets(text);
      expect(typeof result.text).toBe('string');
      expect(redactSecrets(result.text).count).toBe(0);
    }
  });
});

// Real conversations as a false-positive check: no one in them shares a credential.
describe.skipIf(!existsSync(LOCOMO) || !existsSync(MEMORYBANK))(
  'no false positives on real conversations (skipped without ../shared/data)',
  () => {
    it('finds nothing in LoCoMo turns and captions or in MemoryBank logs', () => {
      const texts: string[] = [];
      for (const sample of JSON.parse(readFileSync(LOCOMO, 'utf8')) as Array<{
        conversation: Record<string, unknown>;
      }>) {
        for (const turns of Object.values(sample.conversation)) {
          if (!Array.isArray(turns)) continue;
          for (const turn of turns as Array<{ text: string; blip_caption?: string }>)
            texts.push(`${turn.text} ${turn.blip_caption ?? ''}`);
        }
      }
      texts.push(readFileSync(MEMORYBANK, 'utf8'));
      expect(texts.length).toBeGreaterThan(5_000);
      const found = texts.flatMap((text) =>
        findSecrets(text).map((match) => `${match.kind}: ${text.slice(match.start, match.end)}`),
      );
      expect(found).toEqual([]);
    });

    it('finds nothing in the image URLs LoCoMo shares but the signed tokens (JWTs) some of them carry', () => {
      const urls = [...new Set(readFileSync(LOCOMO, 'utf8').match(/https?:\/\/[^\s"']+/g) ?? [])];
      expect(urls.length).toBeGreaterThan(500);
      const kinds = urls.flatMap((url) => findSecrets(url).map((match) => match.kind));
      expect(kinds.filter((kind) => kind !== 'jwt')).toEqual([]);
    });
  },
);

describe('ordinary engineering text', () => {
  // Commit messages, hashes and UUIDs in prose, "password reset flow", "the key insight", config docs.
  const lines = readFileSync(new URL('../fixtures/ordinary-engineering-text.txt', import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');

  it('holds at least 150 lines, and every one comes through redaction unchanged', () => {
    expect(lines.length).toBeGreaterThanOrEqual(150);
    const changed = lines.filter((line) => redactSecrets(line).text !== line);
    expect(changed).toEqual([]);
    const document = lines.join('\n');
    expect(redactSecrets(document).text).toBe(document);
  });
});
