import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/errors.ts';

// docs/errors.md and the error registry list the same codes.

const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
const documented = [...doc.matchAll(/^\| `([A-Za-z]+)` \|/gm)].map((m) => m[1]);

describe('error registry', () => {
  it('documents every code and no code that does not exist', () => {
    expect(new Set(documented)).toEqual(new Set(Object.keys(ERROR_CODES)));
  });
});
