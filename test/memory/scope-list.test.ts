import { describe, expect, it } from 'vitest';
import { parseScopeList } from '../../src/memory/scope.js';

// Issue 17 item 8: one parser of scope lists for the CLI's --scope and REST's ?scope=, so the same
// text names the same scopes on both (tested end to end in cli-memory-commands and http-server).

describe('parseScopeList', () => {
  it('splits where a scope starts, so an id with a comma stays whole; trims and drops repeats', () => {
    expect(parseScopeList('project:/work/a,b,global')).toEqual(['project:/work/a,b', 'global']);
    expect(parseScopeList(' global , user:alice,global')).toEqual(['global', 'user:alice']);
    expect(parseScopeList('session:s1,project:x')).toEqual(['session:s1', 'project:x']);
  });

  it('refuses an empty list, an empty item and an invalid scope with INVALID_SCOPE', () => {
    for (const text of ['', ' ', 'global,', ',global', 'global, ,user:a', 'nope', 'project:', 'global,bogus:x']) {
      expect(() => parseScopeList(text), JSON.stringify(text)).toThrow(
        expect.objectContaining({ code: 'INVALID_SCOPE' }),
      );
    }
  });
});
