import { describe, expect, it } from 'vitest';
import { isSecretPath } from '../../src/privacy/secret-files.js';
import { SECRET_PATHSPECS } from '../../src/sandbox/sandbox-git.js';

// Issue 17, item 8: the one list of secret files (sandbox reads, searches, git diffs, instruction imports).
describe('files that hold secrets', () => {
  it('include direnv files, kubeconfigs, Terraform state and git reflogs, at any depth', () => {
    for (const path of [
      '.envrc',
      'services/api/.envrc',
      '.kube/config',
      'ops/.kube/config',
      'terraform.tfstate',
      'infra/prod/terraform.tfstate',
      'infra/prod/terraform.tfstate.backup',
      'network.tfstate',
      '.terraform/terraform.tfstate',
      '.git/logs/HEAD',
      '.git/logs/refs/heads/main',
      'vendor/lib/.git/logs/HEAD',
    ]) {
      expect(isSecretPath(path), path).toBe(true);
    }
  });

  it('leave ordinary neighbours readable', () => {
    for (const path of [
      'envrc.md',
      'docs/kube/config.md',
      '.kube/README.md',
      'terraform/main.tf',
      'logs/app.log',
      '.git/HEAD',
    ]) {
      expect(isSecretPath(path), path).toBe(false);
    }
  });

  it('are excluded from git diffs by pathspec', () => {
    for (const expected of ['**/.envrc', '**/*.tfstate', '**/.kube/config'])
      expect(
        SECRET_PATHSPECS.some((spec) => spec.endsWith(expected)),
        expected,
      ).toBe(true);
  });
});
