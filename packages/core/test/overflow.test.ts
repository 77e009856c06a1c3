import { describe, expect, it } from 'vitest';
import type { ModelLimits } from '../src/config.ts';
import { contextBudget, exceedsWindow, isOverflow } from '../src/session/overflow.ts';
import { classifyProviderError } from '../src/session/provider-error.ts';
import { usageCount, usageFromSdk } from '../src/session/usage.ts';
import { usage } from './build.ts';

const limits = (context: number, input: number | undefined, output: number): ModelLimits =>
  input === undefined ? { context, output } : { context, input, output };

function overflows(l: ModelLimits, input: number, output: number, cacheRead: number, extra = {}): boolean {
  return isOverflow({ count: usageCount(usage(input, output, cacheRead)), limits: l, ...extra });
}

describe('isOverflow: the worked cases of docs/context.md §2', () => {
  it.each([
    ['100k/–/32k, 75k/5k/0', limits(100_000, undefined, 32_000), 75_000, 5_000, 0, true],
    ['200k/–/32k, 100k/10k/0', limits(200_000, undefined, 32_000), 100_000, 10_000, 0, false],
    ['100k/–/32k, 60k/10k/10k', limits(100_000, undefined, 32_000), 60_000, 10_000, 10_000, true],
    ['400k/272k/128k, 271k/1k/2k', limits(400_000, 272_000, 128_000), 271_000, 1_000, 2_000, true],
    ['400k/272k/128k, 200k/20k/10k', limits(400_000, 272_000, 128_000), 200_000, 20_000, 10_000, false],
    ['200k/120k/10k, 50k/9,999/0', limits(200_000, 120_000, 10_000), 50_000, 9_999, 0, false],
    ['200k/200k/32k, 180k/15k/3k', limits(200_000, 200_000, 32_000), 180_000, 15_000, 3_000, true],
  ])('%s', (_name, l, input, output, cacheRead, expected) => {
    expect(overflows(l, input, output, cacheRead)).toBe(expected);
  });

  it('never overflows with context 0 or unknown limits', () => {
    expect(overflows(limits(0, undefined, 32_000), 1e9, 0, 0)).toBe(false);
    expect(isOverflow({ count: 1e9, limits: undefined })).toBe(false);
  });

  it('never overflows with auto off or LOOPLINE_DISABLE_AUTOCOMPACT', () => {
    const l = limits(100_000, undefined, 32_000);
    expect(overflows(l, 99_000, 0, 0, { compaction: { auto: false } })).toBe(false);
    expect(overflows(l, 99_000, 0, 0, { flags: { disableAutocompact: true, disablePrune: false } })).toBe(
      false,
    );
    expect(overflows(l, 99_000, 0, 0, { flags: { disableAutocompact: false, disablePrune: false } })).toBe(
      true,
    );
  });
});

describe('contextBudget', () => {
  it('computes maxOutput, reserved, usable, trigger and background', () => {
    expect(contextBudget(limits(400_000, 272_000, 128_000), {})).toEqual({
      maxOutput: 32_000,
      reserved: 20_000,
      usable: 252_000,
      trigger: 252_000,
      background: 201_600,
    });
  });

  it('uses 32k when the output limit is 0', () => {
    expect(contextBudget(limits(100_000, undefined, 0)).maxOutput).toBe(32_000);
  });

  it('applies an explicit reserved without an input limit (upstream does not)', () => {
    expect(contextBudget(limits(100_000, undefined, 32_000), { reserved: 10_000 }).usable).toBe(58_000);
    expect(contextBudget(limits(100_000, 90_000, 32_000), { reserved: 10_000 }).usable).toBe(80_000);
  });

  it('applies triggerRatio and backgroundRatio', () => {
    const b = contextBudget(limits(100_000, undefined, 32_000), { triggerRatio: 0.8, backgroundRatio: 0.5 });
    expect(b.trigger).toBe(54_400);
    expect(b.background).toBe(27_200);
    expect(
      isOverflow({
        count: 54_400,
        limits: limits(100_000, undefined, 32_000),
        compaction: { triggerRatio: 0.8 },
      }),
    ).toBe(true);
  });

  it('never goes below zero', () => {
    expect(contextBudget(limits(8_000, undefined, 32_000)).usable).toBe(0);
  });
});

describe('exceedsWindow', () => {
  it('compares with the input limit, or context minus max output', () => {
    expect(exceedsWindow(272_001, limits(400_000, 272_000, 128_000))).toBe(true);
    expect(exceedsWindow(272_000, limits(400_000, 272_000, 128_000))).toBe(false);
    expect(exceedsWindow(68_001, limits(100_000, undefined, 32_000))).toBe(true);
    expect(exceedsWindow(1e9, limits(0, undefined, 32_000))).toBe(false);
    expect(exceedsWindow(1e9, undefined)).toBe(false);
  });
});

describe('usage', () => {
  it('maps AI SDK usage: input excludes cache, output excludes reasoning', () => {
    const u = usageFromSdk({
      inputTokens: 1_000,
      inputTokenDetails: { noCacheTokens: 300, cacheReadTokens: 600, cacheWriteTokens: 100 },
      outputTokens: 500,
      outputTokenDetails: { textTokens: 200, reasoningTokens: 300 },
      totalTokens: 1_500,
    });
    expect(u).toEqual({
      input: 300,
      output: 200,
      reasoning: 300,
      cache: { read: 600, write: 100 },
      total: 1_500,
    });
    expect(usageCount(u)).toBe(1_500);
  });

  it('derives missing details from the totals', () => {
    const u = usageFromSdk({
      inputTokens: 1_000,
      inputTokenDetails: { cacheReadTokens: 400 },
      outputTokens: 500,
      outputTokenDetails: { reasoningTokens: 100 },
    });
    expect(u).toEqual({
      input: 600,
      output: 400,
      reasoning: 100,
      cache: { read: 400, write: 0 },
      total: 1_500,
    });
  });

  it('treats missing, negative and non-finite numbers as 0', () => {
    expect(usageFromSdk(undefined)).toEqual({
      input: 0,
      output: 0,
      reasoning: 0,
      cache: { read: 0, write: 0 },
      total: 0,
    });
    expect(usageFromSdk({ inputTokens: Number.NaN, outputTokens: -3, totalTokens: undefined }).total).toBe(0);
  });

  it('usageCount falls back to the sum when total is 0', () => {
    expect(usageCount(usage(10, 20, 30, { cache: { read: 30, write: 5 } }))).toBe(65);
  });
});

describe('classifyProviderError', () => {
  it.each([
    [{ status: 400, body: '{"error":{"code":"context_length_exceeded"}}' }],
    [{ status: 400, body: 'prompt is too long: 210000 tokens > 200000 maximum' }],
    [{ status: 400, message: 'Your input exceeds the context window of this model' }],
    [
      {
        status: 400,
        body: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
      },
    ],
    [{ status: 400, body: 'Please reduce the length of the messages or completion.' }],
    [{ code: 'context_length_exceeded' }],
    [{ status: 413 }],
    [{ status: 413, body: '  ' }],
    [{ status: 400, body: '' }],
  ])('overflow: %j', (input) => {
    expect(classifyProviderError(input)).toBe('overflow');
  });

  it('a 429 is retryable even when it talks about tokens', () => {
    expect(
      classifyProviderError({ status: 429, body: 'context_length_exceeded? no: tokens per minute' }),
    ).toBe('retryable');
  });

  it('5xx, 408 and network errors are retryable', () => {
    expect(classifyProviderError({ status: 500, body: 'oops' })).toBe('retryable');
    expect(classifyProviderError({ status: 503 })).toBe('retryable');
    expect(classifyProviderError({ status: 408, body: 'timeout' })).toBe('retryable');
    expect(classifyProviderError({ code: 'ECONNRESET' })).toBe('retryable');
    // An error inside a 200 stream (e.g. "overloaded") is not the caller's fault.
    expect(classifyProviderError({ status: 200, message: 'overloaded' })).toBe('retryable');
  });

  it('other 4xx are terminal', () => {
    expect(classifyProviderError({ status: 400, body: 'invalid tool schema' })).toBe('terminal');
    expect(classifyProviderError({ status: 401, body: 'bad key' })).toBe('terminal');
    expect(classifyProviderError({ status: 404 })).toBe('terminal');
  });
});
