import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { get_encoding } from 'tiktoken';
import { afterAll, describe, expect, it } from 'vitest';
import { BpeCounter, jsPattern, loadRankFile } from '../src/bpe.ts';

// Loopline counts tokens with its own byte-pair encoder over tiktoken's rank files (bpe.ts); these
// tests hold it to tiktoken's WASM engine, count for count. `node bench/tokenizer-check.ts <corpus>`
// runs the same comparison over whole recorded conversations.

// A fixed seed: the same cases on every run (the gate must not depend on the draw).
const SEED = 20_261_129;

// Characters where the split pattern and the merges have edges: Unicode spaces (U+FEFF is one for
// JavaScript's \s, not for tiktoken's), apostrophe suffixes in any case (ſ folds to s), digits of
// several scripts, marks, CJK, emoji (surrogate pairs), unpaired surrogates, control characters.
const EDGES = [
  ' ',
  '  ',
  '\n',
  '\r\n',
  '\t',
  '\u00a0',
  '\u2028',
  '\u3000',
  '\ufeff',
  '\u000b',
  '\u0085',
  "'",
  "'s",
  "'S",
  "'ſ",
  "'LL",
  "'re",
  "'Ve",
  "'d",
  'I',
  'i',
  'a',
  'Z',
  'ß',
  'ǅ',
  'ʰ',
  '0',
  '7',
  '٣',
  '१',
  '½',
  '.',
  ',',
  '/',
  '\\',
  '-',
  '_',
  '"',
  '{',
  '}',
  '(',
  ')',
  '<|endoftext|>',
  'é',
  'e\u0301',
  '\u0301',
  '日本',
  '語',
  '한국어',
  'Привет',
  'مرحبا',
  'ไทย',
  '😀',
  '👩‍💻',
  '🇫🇷',
  '\ud800',
  '\udc00',
  '\u0000',
  '\u001f',
  'http://',
  'const ',
  'return',
  'the',
  ' world',
];
const texts = fc
  .array(
    fc.oneof(
      fc.constantFrom(...EDGES),
      fc.string({ unit: 'grapheme', maxLength: 6 }),
      fc.string({ maxLength: 8 }),
    ),
    {
      maxLength: 40,
    },
  )
  .map((parts) => parts.join(''));

const fixtureTexts = (): string[] => {
  const file = new URL('../../../test/fixtures/trajectories/replay.jsonl', import.meta.url);
  const out: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) collect(x);
  };
  for (const line of readFileSync(file, 'utf8').split('\n'))
    if (line.trim() !== '') collect(JSON.parse(line));
  return out;
};

describe.each(['o200k_base', 'cl100k_base'] as const)('BpeCounter (%s)', (name) => {
  const ours = new BpeCounter(loadRankFile(name));
  const ref = get_encoding(name);
  afterAll(() => ref.free());
  const tiktoken = (text: string) => ref.encode_ordinary(text).length;

  it('counts random text with every edge of the split pattern as tiktoken does', () => {
    fc.assert(
      fc.property(texts, (text) => ours.count(text) === tiktoken(text)),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  it('counts every string of a recorded conversation as tiktoken does', () => {
    const all = fixtureTexts();
    expect(all.length).toBeGreaterThan(1_000);
    const mismatches = all.filter((t) => ours.count(t) !== tiktoken(t));
    expect(mismatches.map((t) => t.slice(0, 80))).toEqual([]);
  });

  // Pieces of 16 bytes and more merge through a heap (bpe.ts #heapMerge), shorter ones by a scan:
  // runs of 4 to 200 letters of one script (one piece each: Japanese, Chinese, Hangul, Cyrillic,
  // Latin with accents and combining marks, Thai, ASCII), ending in nothing, a space, a dot or digits.
  const LETTERS = [
    '日本語の文字列',
    '中文分词测试',
    '한국어텍스트',
    'ПриветМир',
    'éèêëàâçôûü',
    'e\u0301a\u0300',
    'ไทยภาษา',
    'abcxyzq',
  ];
  const longPieces = fc
    .tuple(
      fc.constantFrom(...LETTERS),
      fc.array(fc.nat(), { minLength: 4, maxLength: 200 }),
      fc.constantFrom('', ' ', '.', '1234'),
    )
    .map(([letters, picks, tail]) => {
      const chars = [...letters];
      return picks.map((k) => chars[k % chars.length]).join('') + tail;
    });

  it('merges long pieces (the heap merge) as tiktoken does', () => {
    fc.assert(
      fc.property(longPieces, (text) => ours.count(text) === tiktoken(text)),
      { seed: SEED, numRuns: 1_000 },
    );
  });

  it('counts a piece the second time as the first (its cache) and long pieces merged', () => {
    const word = 'antidisestablishmentarianism';
    expect(ours.count(word)).toBe(tiktoken(word));
    expect(ours.count(word)).toBe(tiktoken(word));
    const long = `${'ab'.repeat(200)}x`;
    expect(ours.count(long)).toBe(tiktoken(long));
    expect(ours.count('')).toBe(0);
  });
});

describe('BpeCounter on pieces a tenant makes as long as it likes', () => {
  const ours = new BpeCounter(loadRankFile('o200k_base'));
  const ref = get_encoding('o200k_base');
  afterAll(() => ref.free());

  // One piece of the split pattern (a run of spaces, of punctuation) merged whole costs the square
  // of its length: 200,000 spaces took 44 s. Past 512 characters a piece is counted in chunks, so
  // a million of them ends in milliseconds (whole, this test would run for many minutes).
  it.each([
    ['spaces', ' '],
    ['punctuation', '-'],
    ['newlines', '\n'],
    ['symbols', '=+'],
  ])(
    'a run of a million %s is counted in chunks, close to the exact count',
    { timeout: 20_000 },
    (_, unit) => {
      const long = unit.repeat(1_000_000 / unit.length);
      const n = ours.count(long);
      expect(n).toBeGreaterThan(0);
      // Exactly as its 256-character chunks (the last one shorter) are counted one by one.
      const chunk = ours.count(unit.repeat(256 / unit.length));
      expect(n).toBe(Math.floor(long.length / 256) * chunk + ours.count(long.slice(0, long.length % 256)));
      // And close to tiktoken on a run it can still count whole: at most a token per cut apart.
      const medium = unit.repeat(5_000 / unit.length);
      const cuts = Math.ceil(medium.length / 256);
      expect(Math.abs(ours.count(medium) - ref.encode_ordinary(medium).length)).toBeLessThanOrEqual(cuts);
    },
  );

  it('counts a piece of exactly 512 characters whole, as tiktoken does', () => {
    const piece = ' '.repeat(512);
    expect(ours.count(piece)).toBe(ref.encode_ordinary(piece).length);
  });

  it('merges the longest piece counted whole (512 CJK characters, 1,536 bytes) as tiktoken does', () => {
    const chars = [...'中文分词测试日本語の文字列'];
    const piece = Array.from({ length: 512 }, (_, i) => chars[(i * 7) % chars.length]).join('');
    expect(ours.count(piece)).toBe(ref.encode_ordinary(piece).length);
  });
});

describe('jsPattern', () => {
  it("spells \\s as Unicode White_Space, as tiktoken's Rust regex reads it", () => {
    expect(jsPattern(String.raw`\s+`).test('\ufeff')).toBe(false);
    expect(jsPattern(String.raw`\s+`).test('\u00a0')).toBe(true);
    expect(jsPattern(String.raw`[^\s\p{L}]`).test('\ufeff')).toBe(true);
    expect(jsPattern(String.raw`\S`).test('\ufeff')).toBe(true);
  });

  it('refuses a rank file it cannot read', () => {
    expect(() => new BpeCounter({ pat_str: 'x', bpe_ranks: '! 5 IQ==' })).toThrow(/rank file/);
  });
});
