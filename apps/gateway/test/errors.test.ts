import { readFileSync } from 'node:fs';
import { LooplineError } from '@loopline/core';
import { describe, expect, it } from 'vitest';
import { HTTP_ERROR_CODES, HttpError } from '../src/lib/http-error.ts';
import { LOOPLINE_STATUS, toProblem } from '../src/plugins/errors.ts';

// The error registry of the gateway and its documentation stay in step (docs/errors.md), and the
// mapping never leaks internals into a response.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('error codes', () => {
  it('README documents every HTTP error code with its status', () => {
    for (const [code, status] of Object.entries(HTTP_ERROR_CODES)) {
      expect(readme, code).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|\\s*${status}\\s*\\|`));
    }
    const documented = [...readme.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*\d{3}\s*\|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(HTTP_ERROR_CODES).sort());
  });

  it('README names every core error code the gateway maps', () => {
    for (const code of Object.keys(LOOPLINE_STATUS)) expect(readme).toContain(`\`${code}\``);
  });

  it('maps errors to problems', () => {
    expect(toProblem(new HttpError('conflict', 'busy', { a: 1 }))).toEqual({
      status: 409,
      code: 'conflict',
      message: 'busy',
      details: { a: 1 },
    });
    expect(toProblem(new LooplineError('ConfigError', 'bad model', { field: 'model' }))).toEqual({
      status: 400,
      code: 'ConfigError',
      message: 'bad model',
      details: { field: 'model' },
    });
    expect(toProblem(new LooplineError('APIError', 'provider said: secret stuff'))).toEqual({
      status: 500,
      code: 'internal_error',
      message: 'Internal server error',
    });
    const tooLarge = Object.assign(new Error('Request body is too large'), {
      statusCode: 413,
      code: 'FST_ERR_CTP_BODY_TOO_LARGE',
    });
    expect(toProblem(tooLarge)).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(toProblem(new Error('connection string postgres://user:pw@host'))).toEqual({
      status: 500,
      code: 'internal_error',
      message: 'Internal server error',
    });
    expect(toProblem(undefined)).toMatchObject({ status: 500 });
  });
});
