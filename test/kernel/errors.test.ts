import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EngramError, errorKind, isEngramError } from '../../src/kernel/errors.js';

const run = promisify(execFile);
const BUILT_ERRORS = fileURLToPath(new URL('../../dist/kernel/errors.js', import.meta.url));

/**
 * Two module instances of the built errors file, as two installed copies of engram would be: the
 * second URL differs by its query, so Node evaluates the file again and its EngramError is a
 * different class. Each copy judges errors made by the other.
 */
const TWO_COPIES = `
const first = await import(process.argv[1]);
const second = await import(process.argv[1] + '?second-copy');
const fromSecond = new second.EngramError('NOT_FOUND', 'No memory with id "m1".', { details: { id: 'm1' } });
const fromFirst = new first.EngramError('CONFLICT', 'Changed since.');
class FromSecondSubclass extends second.EngramError {}
console.log(JSON.stringify({
  distinctClasses: first.EngramError !== second.EngramError,
  instanceofAcross: fromSecond instanceof first.EngramError,
  firstSeesSecond: first.isEngramError(fromSecond),
  secondSeesFirst: second.isEngramError(fromFirst),
  firstSeesSubclass: first.isEngramError(new FromSecondSubclass('INVALID_INPUT', 'Bad.')),
  kindAcross: first.errorKind(fromSecond),
  unknownCodeKind: first.errorKind(new second.EngramError('SOME_FUTURE_CODE', 'From a newer copy.')),
  lookalike: first.isEngramError({ name: 'EngramError', code: 'NOT_FOUND', message: 'x' }),
  plainError: first.isEngramError(Object.assign(new Error('x'), { code: 'NOT_FOUND' })),
  brandWithoutCode: first.isEngramError({ [Symbol.for('engram.error')]: true }),
  ownKeys: Reflect.ownKeys(fromSecond).filter((key) => typeof key === 'symbol').length,
}));
`;

describe('EngramError across copies of engram', () => {
  it('isEngramError recognises an error made by a second copy of the module, and nothing that only looks like one', async () => {
    expect(existsSync(BUILT_ERRORS), 'run `npm run build` first: this test loads dist/kernel/errors.js twice').toBe(
      true,
    );
    const { stdout } = await run(process.execPath, [
      '--input-type=module',
      '-e',
      TWO_COPIES,
      pathToFileURL(BUILT_ERRORS).href,
    ]);
    expect(JSON.parse(stdout)).toEqual({
      distinctClasses: true,
      // What the brand is for: class identity does not cross copies.
      instanceofAcross: false,
      firstSeesSecond: true,
      secondSeesFirst: true,
      firstSeesSubclass: true,
      kindAcross: 'not-found',
      unknownCodeKind: 'internal',
      lookalike: false,
      plainError: false,
      brandWithoutCode: false,
      // The brand lives on the prototype: no own symbol key shows up in equality checks or logs.
      ownKeys: 0,
    });
  });

  it('in one copy, the brand changes nothing: instanceof, code, details and cause as before', () => {
    const cause = new Error('disk full');
    const error = new EngramError('STORE_ERROR', 'The store could not write.', { cause, details: { path: '/tmp/x' } });
    expect(error).toBeInstanceOf(Error);
    expect(isEngramError(error)).toBe(true);
    expect(errorKind(error)).toBe('store');
    expect({
      name: error.name,
      code: error.code,
      message: error.message,
      cause: error.cause,
      details: error.details,
    }).toEqual({
      name: 'EngramError',
      code: 'STORE_ERROR',
      message: 'The store could not write.',
      cause,
      details: { path: '/tmp/x' },
    });
    expect(isEngramError(null)).toBe(false);
    expect(isEngramError('NOT_FOUND')).toBe(false);
    expect(errorKind(new TypeError('x'))).toBe('internal');
  });
});
