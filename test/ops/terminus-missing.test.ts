/**
 * Which load failures of `@redlock-nest/nestjs/health` become TerminusMissingError: only terminus
 * itself missing (ESM and CommonJS wording); a terminus that is installed but broken keeps its own
 * error. The packed-install test loads the real entry points without terminus.
 */
import { describe, expect, it } from '@jest/globals';
import { TerminusMissingError } from '@redlock-nest/nestjs/health';
import { terminusMissing } from '../../packages/nestjs/src/health/terminus-missing.error.js';

function notFound(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('TerminusMissingError', () => {
  it('names the package and the install line', () => {
    const err = new TerminusMissingError();
    expect(err.name).toBe('TerminusMissingError');
    expect(err.packageName).toBe('@nestjs/terminus');
    expect(err.message).toContain('npm i @nestjs/terminus');
  });

  it('replaces the ESM and CommonJS "not found" of terminus itself, keeping it as the cause', () => {
    const esm = notFound(
      'ERR_MODULE_NOT_FOUND',
      "Cannot find package '@nestjs/terminus' imported from /app/node_modules/@redlock-nest/nestjs/dist/health/redlock-health.module.js",
    );
    const cjs = notFound(
      'MODULE_NOT_FOUND',
      "Cannot find module '@nestjs/terminus'\nRequire stack:\n- /app/node_modules/@redlock-nest/nestjs/dist/cjs/package-require.cjs",
    );
    for (const err of [esm, cjs]) {
      const typed = terminusMissing(err);
      expect(typed).toBeInstanceOf(TerminusMissingError);
      expect(typed!.cause).toBe(err);
    }
  });

  it('leaves other failures alone: a dependency of terminus missing, or another error', () => {
    expect(
      terminusMissing(
        notFound(
          'ERR_MODULE_NOT_FOUND',
          "Cannot find package 'check-disk-space' imported from /app/node_modules/@nestjs/terminus/dist/index.js",
        ),
      ),
    ).toBeUndefined();
    expect(terminusMissing(notFound('MODULE_NOT_FOUND', "Cannot find module '@nestjs/terminus-extra'"))).toBeUndefined();
    expect(terminusMissing(new SyntaxError('Unexpected token'))).toBeUndefined();
    expect(terminusMissing(undefined)).toBeUndefined();
  });
});
