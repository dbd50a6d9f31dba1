// The files and folders that usually hold credentials: the sandbox refuses to read them and leaves
// them out of searches, and instruction imports refuse them, from this one list.

/** A file name that usually holds credentials, as a shell glob on the last path segment. */
export interface SecretFileName {
  glob: string;
  /** Names the glob matches that are safe to read (templates, public keys). Searches skip them too. */
  except?: readonly string[];
  /** Match regardless of case (`KEY.PEM` on a case-insensitive disk). */
  ignoreCase?: boolean;
}

/**
 * The one list of files that usually hold credentials. Reading them gains a memory nothing it may
 * keep, so the path check refuses them, search_files skips them, and grep, rg and git get
 * exclusions derived from this list (see `secretSearchExclusions`).
 */
export const SECRET_FILE_NAMES: readonly SecretFileName[] = [
  { glob: '.env' },
  // direnv's .envrc exports the same variables a .env holds; Terraform state keeps every resource's secrets in clear.
  { glob: '.envrc' },
  ...['*.tfstate', '*.tfstate.backup'].map((glob) => ({ glob, ignoreCase: true })),
  { glob: '.env.*', except: ['.env.example', '.env.sample', '.env.template', '.env.dist'] },
  ...['*.pem', '*.key', '*.p12', '*.pfx', '*.jks', '*.keystore'].map((glob) => ({ glob, ignoreCase: true })),
  ...['id_rsa*', 'id_dsa*', 'id_ecdsa*', 'id_ed25519*'].map((glob) => ({ glob, except: ['*.pub'] })),
  // .credentials.json: Claude Code's login tokens (~/.claude/.credentials.json).
  ...['.npmrc', '.pypirc', '.netrc', '.git-credentials', '.pgpass', '.credentials.json'].map((glob) => ({ glob })),
  { glob: 'credentials' },
  {
    glob: 'credentials.*',
    except: [
      '*.ts',
      '*.tsx',
      '*.js',
      '*.mjs',
      '*.cjs',
      '*.py',
      '*.go',
      '*.rb',
      '*.java',
      '*.kt',
      '*.rs',
      '*.cs',
      '*.php',
      '*.md',
    ],
  },
];

/** Folders whose every file usually holds credentials. */
export const SECRET_DIRECTORY_NAMES: readonly string[] = ['.ssh', '.aws', '.gnupg', '.docker'];

/** Files known by their folder: `.git/config` holds remote URLs with tokens and credential settings. */
export const SECRET_NESTED_FILES: readonly string[] = ['.git/config', '.kube/config'];

/** Folders known by their parent: `.git/logs` holds every ref's history, tokens of fetched URLs included. */
export const SECRET_NESTED_DIRECTORIES: readonly string[] = ['.git/logs'];

/** The globs a recursive search leaves out: secret files (their exceptions too) and secret folders, plus `.git`. */
export function secretSearchExclusions(): { files: string[]; directories: string[] } {
  return {
    files: SECRET_FILE_NAMES.map((entry) => (entry.ignoreCase ? caseInsensitiveGlob(entry.glob) : entry.glob)),
    directories: [...SECRET_DIRECTORY_NAMES, '.git'],
  };
}

const SECRET_FILE = SECRET_FILE_NAMES.map((entry) => ({
  pattern: globRegExp(entry.glob, entry.ignoreCase === true),
  except: (entry.except ?? []).map((glob) => globRegExp(glob, entry.ignoreCase === true)),
}));

/** Whether a project-relative path names a file that usually holds secrets, or lies in such a folder. */
export function isSecretPath(relativePath: string): boolean {
  const segments = relativePath.split(/[\\/]/).filter((segment) => segment !== '' && segment !== '.');
  if (segments.some((segment) => SECRET_DIRECTORY_NAMES.includes(segment))) return true;
  const joined = segments.join('/');
  if (SECRET_NESTED_FILES.some((nested) => joined === nested || joined.endsWith(`/${nested}`))) return true;
  if (SECRET_NESTED_DIRECTORIES.some((nested) => joined.startsWith(`${nested}/`) || joined.includes(`/${nested}/`)))
    return true;
  const last = segments.at(-1) ?? '';
  return SECRET_FILE.some(({ pattern, except }) => pattern.test(last) && !except.some((safe) => safe.test(last)));
}

// A shell glob on one name (`*`, `?`) as an anchored regular expression.
function globRegExp(glob: string, ignoreCase: boolean): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, ignoreCase ? 'i' : '');
}

// `*.pem` as `*.[pP][eE][mM]`: grep's --exclude and rg's --glob compare case-sensitively.
function caseInsensitiveGlob(glob: string): string {
  return glob.replace(/[a-z]/gi, (letter) => `[${letter.toLowerCase()}${letter.toUpperCase()}]`);
}
