import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import {
  compilePattern,
  linearRegexAvailable,
  READ_PATTERN_MAX_CHARS,
  READ_REGEX_LINE_WORK,
  readOutputSlice,
} from '../src/session/read-output.ts';
import { countCapped, EXACT_COUNT_CAP_CHARS, estimateTokenizer } from '../src/session/tokens.ts';
import { ingestCap, truncateToolOutput, utf8Length } from '../src/session/truncate.ts';

// The worker enables V8's linear-time regex engine at start (apps/worker/src/tools/read-output.ts);
// this process does the same before any read_output pattern is compiled.
setFlagsFromString('--enable-experimental-regexp-engine');

const lines = (n: number, prefix = 'line') =>
  Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`).join('\n');

describe('truncateToolOutput', () => {
  it('leaves a small output alone', () => {
    expect(truncateToolOutput('ok\nfine', { outputId: 'out_1' })).toEqual({ text: 'ok\nfine' });
  });

  it('keeps the first 2,000 lines with a line marker and a read_output hint', () => {
    const r = truncateToolOutput(lines(2_500), { outputId: 'out_1' });
    expect(r.truncated).toMatchObject({ totalLines: 2_500, direction: 'head', omittedLines: 500 });
    expect(r.text.startsWith('line 1\n')).toBe(true);
    expect(r.text).toContain('line 2000\n\n...500 lines truncated...\n\n');
    expect(r.text).not.toContain('line 2001');
    expect(r.text).toContain('read_output');
    expect(r.text).toContain('"out_1"');
    expect(r.text).toMatch(/offset\/limit/);
    expect(r.text).toMatch(/pattern/);
  });

  it('cuts by bytes with a byte marker', () => {
    const text = lines(1_000, 'x'.repeat(100));
    const r = truncateToolOutput(text, { outputId: 'out_2', maxBytes: 1_024 });
    const kept = r.text.split('\n\n...')[0]!;
    expect(utf8Length(kept)).toBeLessThanOrEqual(1_024);
    expect(r.truncated!.omittedBytes).toBe(utf8Length(text) - utf8Length(kept));
    expect(r.text).toContain(`...${r.truncated!.omittedBytes} bytes truncated...`);
  });

  it('keeps the end in tail mode, marker and hint first', () => {
    const r = truncateToolOutput(lines(30), { outputId: 'out_3', maxLines: 10, direction: 'tail' });
    expect(r.text.startsWith('...20 lines truncated...\n\n')).toBe(true);
    expect(
      r.text.endsWith(
        'line 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\nline 30',
      ),
    ).toBe(true);
    expect(r.truncated).toMatchObject({ direction: 'tail', omittedLines: 20 });
  });

  it('previews a single huge line, never splitting a character', () => {
    const huge = '€'.repeat(1_000); // 3 bytes each
    const head = truncateToolOutput(huge, { outputId: 'o', maxBytes: 100 });
    expect(head.text.startsWith('€'.repeat(33))).toBe(true);
    expect(head.text).toContain(`...${3_000 - 99} bytes truncated...`);
    const tail = truncateToolOutput(`${'😀'.repeat(50)}`, { outputId: 'o', maxBytes: 10, direction: 'tail' });
    expect(tail.text.endsWith('\n\n😀😀')).toBe(true);
  });
});

describe('utf8Length', () => {
  it('matches TextEncoder', () => {
    for (const s of ['', 'abc', 'é', '你好', '😀x', '\ud800', '\ud800x', 'x\udc00']) {
      expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
    }
  });
});

describe('readOutputSlice', () => {
  const content = lines(50);

  it('returns numbered lines from offset with a continuation footer', () => {
    const out = readOutputSlice(content, { offset: 10, limit: 3 });
    expect(out).toBe(
      '11| line 11\n12| line 12\n13| line 13\n\n(Lines 11-13 of 50. Use offset=13 to read more.)',
    );
  });

  it('says when the end is reached, or the offset is past it', () => {
    expect(readOutputSlice(content, { offset: 48 })).toMatch(
      /49\| line 49\n50\| line 50\n\n\(End of output: 50 lines.\)$/,
    );
    expect(readOutputSlice(content, { offset: 50 })).toBe(
      '(Offset 50 is past the end: the output has 50 lines.)',
    );
  });

  it('clips very long lines and stops at the byte budget', () => {
    const wide = Array.from({ length: 100 }, () => 'y'.repeat(3_000)).join('\n');
    const out = readOutputSlice(wide);
    expect(out).toContain('... (line truncated, 3000 chars)');
    expect(utf8Length(out)).toBeLessThan(52 * 1024);
    expect(out).toMatch(/Use offset=\d+ to read more/);
  });

  it('searches with a regular expression and numbers the matches', () => {
    const out = readOutputSlice(content, { pattern: 'line [1-2]5$' });
    expect(out).toBe('15| line 15\n25| line 25\n\n(2 matching lines.)');
  });

  it('caps matches and says how to continue', () => {
    const out = readOutputSlice(content, { pattern: 'line', limit: 2, offset: 5 });
    expect(out).toBe(
      ' 6| line 6\n 7| line 7\n\n(45 matching lines; showing 2. Use offset=7 to see matches after line 7.)',
    );
  });

  it('says when nothing matches', () => {
    expect(readOutputSlice(content, { pattern: 'nope' })).toBe('(No lines match "nope" after line 0.)');
  });

  it('stops showing matches at the byte budget but keeps counting', () => {
    const wide = Array.from({ length: 100 }, () => 'z'.repeat(1_500)).join('\n');
    const out = readOutputSlice(wide, { pattern: 'z', limit: 2_000 });
    expect(out).toMatch(/\(100 matching lines; showing \d+\./);
  });

  it('falls back to a literal search for invalid patterns and what the linear engine cannot run', () => {
    expect(linearRegexAvailable()).toBe(true);
    expect(compilePattern('(a)\\1')('aa')).toBe(false);
    expect(compilePattern('(a)\\1')('x(a)\\1')).toBe(true);
    expect(compilePattern('(?=a)a')('(?=a)a')).toBe(true);
    expect(compilePattern('[unclosed')('a [unclosed b')).toBe(true);
    expect(compilePattern('fo+')('foo')).toBe(true);
  });

  it('runs patterns that backtrack exponentially in linear time', () => {
    // On a backtracking engine each of these takes longer than the test's timeout (2^40 paths).
    const line = `${'a'.repeat(40)}c`;
    expect(compilePattern('(a|a)*b')(line)).toBe(false);
    expect(compilePattern('(a|aa)*b')(line)).toBe(false);
    expect(compilePattern('(a+)+$')('aaaa')).toBe(true);
    expect(compilePattern('([a-z]*)*x')(line)).toBe(false);
    const out = readOutputSlice(Array.from({ length: 50 }, () => 'a'.repeat(20_000)).join('\n'), {
      pattern: '(a|a)*b',
    });
    expect(out).toBe('(No lines match "(a|a)*b" after line 0.)');
  });

  it("bounds a search's work: long patterns literal, lines cut by the pattern's length, a stop", () => {
    // A pattern past READ_PATTERN_MAX_CHARS is text to find, not a regex (the linear engine's cost
    // per character grows with the pattern).
    const long = `(?:a|aa|aaa){0,16}${'x'.repeat(READ_PATTERN_MAX_CHARS)}`;
    expect(compilePattern(long)(`zz${long}zz`)).toBe(true);
    expect(compilePattern(long)('a'.repeat(300))).toBe(false);
    // A 100-character pattern tests the first READ_REGEX_LINE_WORK / 100 characters of a line.
    const cut = READ_REGEX_LINE_WORK / 100;
    const pattern = `needle${'.?'.repeat(47)}`;
    expect(pattern).toHaveLength(100);
    expect(compilePattern(pattern)(`${'-'.repeat(cut - 200)}needle`)).toBe(true);
    expect(compilePattern(pattern)(`${'-'.repeat(cut + 10)}needle`)).toBe(false);
    // The caller's stop ends the search where it is, saying where to go on.
    const text = Array.from({ length: 10 }, (_, i) => `row ${i} hit`).join('\n');
    let asked = 0;
    const out = readOutputSlice(text, { pattern: 'hit', offset: 2, stop: () => ++asked > 3 });
    expect(out).toBe(
      ' 3| row 2 hit\n 4| row 3 hit\n 5| row 4 hit\n\n' +
        '(The search stopped after line 5 (its time budget): 3 matching lines so far, showing 3. Use offset=5 to search on.)',
    );
    expect(readOutputSlice(text, { pattern: 'hit', stop: () => true })).toBe(
      '(The search stopped after line 0 (its time budget): 0 matching lines so far, showing 0. Use offset=0 to search on.)',
    );
  });

  it('searches literally where the linear engine is not enabled', () => {
    expect(compilePattern('(a|a)*b', false)(`${'a'.repeat(40)}c`)).toBe(false);
    expect(compilePattern('(a|a)*b', false)('x (a|a)*b')).toBe(true);
    expect(compilePattern('fo+', false)('foo')).toBe(false);
  });
});

describe('truncateToolOutput: the window share', () => {
  const tokenizer = estimateTokenizer;
  const lines = Array.from({ length: 1_500 }, (_, i) => `line ${i} ${'x'.repeat(20)}`).join('\n');

  it('cuts an output under 2,000 lines and 50 KiB that exceeds its token share', () => {
    // ~1,500 × 30 chars ≈ 44 KB, ≈ 11k tokens: within the byte cap, over a 3,500-token share.
    const cut = truncateToolOutput(lines, { outputId: 'out_1', maxTokens: 3_500, tokenizer });
    expect(tokenizer.count(cut.text)).toBeLessThanOrEqual(3_500);
    expect(tokenizer.count(cut.text)).toBeGreaterThan(3_000);
    expect(cut.text.startsWith('line 0 ')).toBe(true);
    expect(cut.text).toContain('bytes truncated...');
    expect(cut.text).toContain('read_output');
    expect(cut.truncated).toMatchObject({ totalLines: 1_500, direction: 'head' });
    expect(cut.truncated!.omittedLines).toBeGreaterThan(1_000);
    // Whole lines: the preview ends at a line boundary.
    const preview = cut.text.slice(0, cut.text.indexOf('\n\n...'));
    expect(preview.split('\n').every((l) => /^line \d+ x{20}$/.test(l))).toBe(true);
  });

  it('fits megabytes against a cap just below them with a bounded count (countCapped)', () => {
    // 4 MB of lines, a cap a little under its count: an exact binary search counted the whole
    // text some 25 times (seconds of a shared event loop); now the counting is bounded.
    const big = Array.from({ length: 100_000 }, (_, i) => `row ${i} ${'w '.repeat(18)}`).join('\n');
    let asked = 0;
    const counting = {
      name: 'counting',
      count(t: string) {
        asked += t.length;
        return tokenizer.count(t);
      },
    };
    const total = countCapped(tokenizer, big);
    const cut = truncateToolOutput(big, {
      outputId: 'out_big',
      maxBytes: 16 * 1024 * 1024,
      maxLines: 1_000_000,
      maxTokens: total - 1_000,
      tokenizer: counting,
    });
    expect(countCapped(tokenizer, cut.text)).toBeLessThanOrEqual(total - 1_000);
    expect(cut.text.length).toBeGreaterThan(big.length / 2);
    expect(asked).toBeLessThan(12 * EXACT_COUNT_CAP_CHARS);
  });

  it('keeps the end for tail outputs, and applies the tighter of the two caps', () => {
    const cut = truncateToolOutput(lines, { outputId: 'o', direction: 'tail', maxTokens: 2_000, tokenizer });
    expect(tokenizer.count(cut.text)).toBeLessThanOrEqual(2_000);
    expect(cut.text.endsWith('line 1499 xxxxxxxxxxxxxxxxxxxx')).toBe(true);
    // The line cap is tighter here: 100 lines ≈ 750 tokens.
    const byLines = truncateToolOutput(lines, { outputId: 'o', maxLines: 100, maxTokens: 2_000, tokenizer });
    expect(byLines.text).toContain('...1400 lines truncated...');
  });

  it('leaves an output within every cap alone, and ignores maxTokens without a tokenizer', () => {
    expect(truncateToolOutput('short', { outputId: 'o', maxTokens: 10, tokenizer })).toEqual({
      text: 'short',
    });
    expect(truncateToolOutput(lines, { outputId: 'o', maxTokens: 10 }).truncated).toBeUndefined();
  });

  it('returns the count it took of the text it returns, and none it did not take', () => {
    // Within the byte cap but measured against the share: counted once, handed back.
    const small = 'word '.repeat(40);
    expect(truncateToolOutput(small, { outputId: 'o', maxTokens: 100, tokenizer })).toEqual({
      text: small,
      tokens: tokenizer.count(small),
    });
    const cut = truncateToolOutput(lines, { outputId: 'o', maxTokens: 2_000, tokenizer });
    expect(cut.tokens).toBe(tokenizer.count(cut.text));
    // Cut by lines only, the result was never counted.
    const byLines = truncateToolOutput(lines, { outputId: 'o', maxLines: 100, maxTokens: 20_000, tokenizer });
    expect(byLines.truncated).toBeDefined();
    expect(byLines.tokens).toBeUndefined();
  });

  it('ingestCap is the share of the usable window', () => {
    // 16k context, 2k output: usable 14,000 → 3,500 at 25 %.
    expect(ingestCap({ limits: { context: 16_000, output: 2_000 } })).toBe(3_500);
    expect(ingestCap({ limits: { context: 16_000, output: 2_000 }, toolOutput: { windowShare: 0.5 } })).toBe(
      7_000,
    );
    expect(ingestCap({ limits: { context: 0, output: 0 } })).toBeUndefined();
    expect(ingestCap({})).toBeUndefined();
  });
});
