import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isStorableText, storableJsonText, storableText, storableValue } from '../src/index.ts';

// What PostgreSQL can store (storable.ts): NUL and unpaired surrogates become U+FFFD; nothing else
// changes, and storable text is returned as it is.

const R = '\uFFFD';
// A fixed seed: the same hundred cases on every run (the gate must not depend on the draw).
const SEED = 20_261_129;
// Characters that make the cases: NUL, both halves of a pair alone, backslashes and the text of an
// escape, a whole pair, plain text.
const unit = fc.constantFrom('a', ' ', '\u0000', '\ud83d', '\ude00', '😀', '\\', 'u', '0', 'd', '8');

describe('storableText', () => {
  it('replaces NUL and unpaired surrogates, keeps pairs and everything else', () => {
    expect(storableText('a\u0000b')).toBe(`a${R}b`);
    expect(storableText('x\ud800y\udc00z')).toBe(`x${R}y${R}z`);
    expect(storableText('end\ud83d')).toBe(`end${R}`);
    expect(storableText('pair 😀 \u0001 tab\t')).toBe('pair 😀 \u0001 tab\t');
    expect(isStorableText('😀')).toBe(true);
    expect(isStorableText('\ud83d')).toBe(false);
  });

  it('the result is always storable, and storable text is returned unchanged', () => {
    fc.assert(
      fc.property(fc.string({ unit }), (s) => {
        const out = storableText(s);
        expect(isStorableText(out)).toBe(true);
        expect(out.length).toBe(s.length);
        if (isStorableText(s)) expect(out).toBe(s);
      }),
      { seed: SEED },
    );
  });
});

describe('storableJsonText', () => {
  it("rewrites JSON.stringify's NUL and lone-surrogate escapes, not an escaped backslash before 'u0000'", () => {
    const value = { a: 'x\u0000', b: '\ud800', c: '\\u0000 literal', d: '\\\u0000', e: 'ok 😀' };
    const fixed = JSON.parse(storableJsonText(JSON.stringify(value)));
    expect(fixed).toEqual({ a: `x${R}`, b: R, c: '\\u0000 literal', d: `\\${R}`, e: 'ok 😀' });
  });

  it('reads back as the value with storable strings, for any JSON value', () => {
    const fix = (v: unknown): unknown =>
      typeof v === 'string'
        ? storableText(v)
        : Array.isArray(v)
          ? v.map(fix)
          : v && typeof v === 'object'
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), fix(x)]))
            : v;
    // Compared through JSON on both sides: JSON itself turns -0 into 0.
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: unit, maxDepth: 3 }), (v) => {
        expect(JSON.parse(storableJsonText(JSON.stringify(v)))).toEqual(JSON.parse(JSON.stringify(fix(v))));
      }),
      { seed: SEED },
    );
  });
});

describe('storableValue', () => {
  it('returns the same value when every string is storable, a repaired copy otherwise', () => {
    const clean = { a: ['x', { b: 'y' }] };
    expect(storableValue(clean)).toBe(clean);
    expect(storableValue({ 'k\u0000': ['v\ud800'] })).toEqual({ [`k${R}`]: [`v${R}`] });
  });
});
