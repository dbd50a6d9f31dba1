/**
 * What keeps git in the sandbox from starting any program: the options and `-c` overrides given
 * to every git run, the environment it gets, the gpg format placeholders refused, and the config
 * keys whose value git would run (a repository setting one is refused, not trusted).
 */

/**
 * Options before the subcommand of every sandboxed git run (the checks' own runs included): no pager,
 * no fsmonitor hook, no hooks at all, no signature checks, no transport (a promisor remote's lazy
 * fetch would run ssh or a remote helper), no look into submodules (whose own config is not checked).
 */
export const GIT_SAFETY_OPTIONS: readonly string[] = [
  '--no-pager',
  ...[
    'core.fsmonitor=false',
    'core.hooksPath=/dev/null',
    'core.pager=cat',
    'color.ui=never',
    'log.showSignature=false',
    'diff.submodule=short',
    'diff.ignoreSubmodules=all',
    'status.submoduleSummary=false',
    'submodule.recurse=false',
    'protocol.allow=never',
    ...['file', 'git', 'ssh', 'http', 'https', 'ext', 'fd'].map((name) => `protocol.${name}.allow=never`),
  ].flatMap((setting) => ['-c', setting]),
];

/**
 * Environment variables for git: no system or global config (~/.gitconfig could name any program),
 * no system attributes, and no transport at all (GIT_ALLOW_PROTOCOL overrides every protocol.* setting,
 * the repository's own included; "none" names no protocol).
 */
export const GIT_SAFETY_ENVIRONMENT: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_ALLOW_PROTOCOL: 'none',
  GIT_PROTOCOL_FROM_USER: '0',
  GIT_TERMINAL_PROMPT: '0',
};

// `%G?`, `%GS`, `%GK`, `%GG`, `%GF`, `%GP`, `%GT` (and any later %G…) verify a signature with gpg.program;
// for-each-ref's `%(signature…)` does too. `%%` is a literal percent sign and is skipped.
const GPG_PLACEHOLDER = /%G|%\(signature/;

/** Whether a format text (an argument or a pretty.* setting) holds a placeholder that runs gpg. */
export function hasGpgPlaceholder(text: string): boolean {
  return GPG_PLACEHOLDER.test(text.replaceAll('%%', ''));
}

// Settings git runs as programs that are made harmless by GIT_SAFETY_OPTIONS / GIT_SAFETY_ENVIRONMENT
// rather than refused: common in real repositories (husky's core.hooksPath, per-repository ssh keys).
const NEUTRALISED = [
  /^core\.(fsmonitor|hookspath|pager|sshcommand)$/,
  /^pager\./,
  /^credential\.(.+\.)?helper$/,
  /^remote\..+\.(uploadpack|receivepack|vcs|proxy)$/,
];

// The last part of a key that names a program: filter.x.clean is covered by the whole filter section.
const PROGRAM_VARIABLE =
  /^(textconv|command|cmd|program|driver|helper|editor|askpass|gitproxy|sshcommand|difffilter|uploadpack|receivepack|vcs|browser|packobjectshook|alternaterefscommand|defaultkeycommand|smtpserver)$/;
const PROGRAM_SECTION = /^(filter|sendemail|instaweb)\./;
const TOOL_PATH = /^(browser|man|difftool|mergetool)\..+\.path$/;

/** Why a config key (as `git config --list` prints it) would make git start a program, or undefined. */
export function programValuedGitKey(key: string, value: string): string | undefined {
  const lower = key.toLowerCase();
  if (NEUTRALISED.some((pattern) => pattern.test(lower))) return undefined;
  if (PROGRAM_SECTION.test(lower)) return 'git runs it as a program';
  if (lower === 'diff.external') return 'git runs it as a program';
  if (TOOL_PATH.test(lower)) return 'it names a program';
  const variable = lower.slice(lower.lastIndexOf('.') + 1);
  if (PROGRAM_VARIABLE.test(variable)) return 'git runs it as a program';
  if ((lower.startsWith('pretty.') || lower === 'format.pretty') && hasGpgPlaceholder(value))
    return 'its format verifies signatures, which runs gpg';
  return undefined;
}

/**
 * The program-valued settings of a `git config --list --includes -z` listing (`key\nvalue\0` entries),
 * as `key (reason)` texts; empty when git can run without starting anything.
 */
export function programValuedGitSettings(listing: string): string[] {
  const found: string[] = [];
  for (const entry of listing.split('\0')) {
    if (entry === '') continue;
    const newline = entry.indexOf('\n');
    const key = newline === -1 ? entry : entry.slice(0, newline);
    const value = newline === -1 ? '' : entry.slice(newline + 1);
    const reason = programValuedGitKey(key, value);
    if (reason !== undefined) found.push(`${key} (${reason})`);
  }
  return [...new Set(found)];
}
