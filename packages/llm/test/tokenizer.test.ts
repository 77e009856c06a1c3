import { get_encoding } from 'tiktoken';
import { describe, expect, it } from 'vitest';
import { createTokenizer, encodingFor, tokenizerFor } from '../src/index.ts';
import { mayHaveLongRun } from '../src/tokenizer.ts';

describe('tokenizer', () => {
  const o200k = createTokenizer();
  const cl100k = createTokenizer('cl100k_base');

  it('counts known strings', () => {
    expect(o200k.name).toBe('o200k_base');
    expect(o200k.count('')).toBe(0);
    expect(o200k.count('hello world')).toBe(2);
    expect(cl100k.count('hello world')).toBe(2);
    expect(o200k.count('The quick brown fox jumps over the lazy dog.')).toBe(10);
    expect(cl100k.count('The quick brown fox jumps over the lazy dog.')).toBe(10);
  });

  it('treats special tokens as text', () => {
    expect(o200k.count('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('differs between encodings on CJK', () => {
    const zh = '今天天气很好，我们去公园散步吧。';
    expect(o200k.count(zh)).toBeLessThan(cl100k.count(zh));
  });

  it('counts a long unbroken CJK run close to exact', () => {
    const run = Array.from({ length: 40_000 }, (_, i) =>
      String.fromCharCode(0x4e00 + ((i * 7919) % 20_000)),
    ).join('');
    const n = o200k.count(run); // the run limit keeps this linear (bench/figures/tokens.ts times it)
    const exact = o200k.count(run.slice(0, 400)); // below the run limit: exact path
    expect(exact).toBeGreaterThan(0);
    // o200k spends 1–2 tokens per rare ideograph.
    expect(n).toBeGreaterThan(40_000);
    expect(n).toBeLessThan(80_000);
  });

  it('counts text without long runs exactly as tiktoken does (the linear pre-check path)', () => {
    const enc = get_encoding('o200k_base');
    const samples = [
      'The quick brown fox jumps over the lazy dog. '.repeat(200),
      '今天天气很好，我们去公园散步吧。'.repeat(300),
      'const x = { a: 1, b: [2, 3] }; // ✓ done 🎉\n'.repeat(150),
      `${'a'.repeat(511)} ${'b'.repeat(511)}`,
      `${'x'.repeat(400)}😀${'y'.repeat(120)} tail`,
    ];
    for (const text of samples) {
      expect(text.length).toBeGreaterThanOrEqual(512);
      expect(o200k.count(text)).toBe(enc.encode_ordinary(text).length);
    }
    enc.free();
  });

  it('sends every text with a run of 512 characters to the run-cutting path', () => {
    // Never a false "no long run": at least as long a run as LONG_RUN sees (surrogates count as run).
    expect(mayHaveLongRun(`hello ${'a'.repeat(512)} world`)).toBe(true);
    expect(mayHaveLongRun(`hello ${'a'.repeat(511)} world`)).toBe(false);
    expect(mayHaveLongRun('漢'.repeat(600))).toBe(true);
    expect(mayHaveLongRun('漢字，'.repeat(600))).toBe(false);
    expect(mayHaveLongRun('😀'.repeat(300))).toBe(true);
    expect(mayHaveLongRun('x y '.repeat(1000))).toBe(false);
    const LONG_RUN = /[^\s\p{P}\p{S}]{512,}/u;
    const alphabet = ['a', 'é', '漢', ' ', '，', '.', '-', '😀', '\n', 'Ω', '٣', '\u00a0'];
    let seed = 7;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let n = 0; n < 200; n++) {
      const breakEvery = 100 + Math.floor(rand() * 700);
      let text = '';
      for (let i = 0; i < 2_000; i++) {
        text +=
          i % breakEvery === 0 ? alphabet[3 + Math.floor(rand() * 2)] : alphabet[Math.floor(rand() * 12)];
      }
      if (LONG_RUN.test(text)) expect(mayHaveLongRun(text)).toBe(true);
    }
  });

  it('picks the encoding from the model ref', () => {
    expect(encodingFor('openai/gpt-3.5-turbo')).toBe('cl100k_base');
    expect(encodingFor('openai/gpt-4')).toBe('cl100k_base');
    expect(encodingFor('openai/gpt-4-turbo')).toBe('cl100k_base');
    expect(encodingFor('openai/gpt-4o')).toBe('o200k_base');
    expect(encodingFor('openai/gpt-4.1-mini')).toBe('o200k_base');
    expect(encodingFor('openai/o3')).toBe('o200k_base');
    expect(encodingFor('compatible/llama-3.1-70b')).toBe('o200k_base');
    expect(tokenizerFor('openai/gpt-4').name).toBe('cl100k_base');
  });
});
