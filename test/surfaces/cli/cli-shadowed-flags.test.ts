import { describe, expect, it } from 'vitest';
import { parseCommandArguments, type CommandDefinition } from '../../../src/surfaces/cli/cli-command.js';

// A command whose own boolean flags share the names of global options that take a value.
const shadowing: Pick<CommandDefinition, 'name' | 'options'> = {
  name: 'uninstall',
  options: {
    project: { type: 'boolean', description: 'this project only' },
    store: { type: 'boolean', description: 'a boolean named like the global --store' },
    limit: { type: 'string', description: 'a plain string option' },
  },
};
const plain: Pick<CommandDefinition, 'name' | 'options'> = {
  name: 'list',
  options: { limit: { type: 'string', description: 'a plain string option' } },
};

describe('command flags that share a global option name', () => {
  it('a command-level boolean wins after the command name, with or without a target after it', () => {
    for (const argv of [
      ['claude-code', '--project'],
      ['--project', 'claude-code'],
      ['--project', '--store', 'claude-code'],
    ]) {
      const parsed = parseCommandArguments(shadowing, argv);
      expect(parsed.values.project).toBe(true);
      expect(parsed.positionals).toEqual(['claude-code']);
      expect(parsed.global.project).toBeUndefined();
    }
    expect(parseCommandArguments(shadowing, ['claude-code', '--store']).values.store).toBe(true);
  });

  it('the global option stays reachable: before the command name, or with its value attached after it', () => {
    const before = parseCommandArguments(shadowing, ['claude-code', '--project'], ['--project', 'acme/app', '--json']);
    expect(before.values.project).toBe(true);
    expect(before.global).toEqual({ json: true, project: 'acme/app' });
    expect(before.positionals).toEqual(['claude-code']);
    const attached = parseCommandArguments(shadowing, ['--project=acme/web', 'claude-code', '--project']);
    expect(attached.values.project).toBe(true);
    expect(attached.global.project).toBe('acme/web');
    const store = parseCommandArguments(shadowing, ['--store=/tmp/x.db', 'claude-code']);
    expect(store.values.store).toBeUndefined();
    expect(store.global.store).toBe('/tmp/x.db');
    // The attached form after the name wins over the one before it.
    expect(parseCommandArguments(shadowing, ['--project=b'], ['--project', 'a']).global.project).toBe('b');
  });

  it('a global flag before the name is read with the global table alone: its value is never a positional', () => {
    const parsed = parseCommandArguments(shadowing, ['claude-code'], ['--project', 'claude-code-like-id']);
    expect(parsed.positionals).toEqual(['claude-code']);
    expect(parsed.global.project).toBe('claude-code-like-id');
    expect(parsed.values.project).toBeUndefined();
    // Command flags before the name are refused with a clear error, as unknown flags are.
    expect(() => parseCommandArguments(shadowing, ['claude-code'], ['--limit', '3'])).toThrow(/--limit/);
  });

  it('commands without a shadowing flag keep the globals anywhere', () => {
    const parsed = parseCommandArguments(plain, ['--project', 'acme/app', '--limit', '5', '--json', '--store', 'x.db']);
    expect(parsed.global).toEqual({ json: true, project: 'acme/app', store: 'x.db' });
    expect(parsed.values.limit).toBe('5');
    expect(() => parseCommandArguments(plain, ['--project'])).toThrow(/--project/);
  });
});
