import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, limitsFor, modelId } from '../src/index.ts';

describe('model catalog', () => {
  it('knows common OpenAI models', () => {
    expect(limitsFor('openai/gpt-4o')).toEqual({ context: 128_000, output: 16_384 });
    expect(limitsFor('openai/gpt-4o-mini-2024-07-18')).toEqual({ context: 128_000, output: 16_384 });
    expect(limitsFor('openai/gpt-4.1-nano')).toEqual({ context: 1_047_576, output: 32_768 });
    expect(limitsFor('openai/o3')).toEqual({ context: 200_000, output: 100_000 });
    expect(limitsFor('openai/o4-mini')).toEqual({ context: 200_000, output: 100_000 });
    expect(limitsFor('openai/gpt-5')).toEqual({ context: 400_000, input: 272_000, output: 128_000 });
    expect(limitsFor('openai/gpt-5.1-codex')).toEqual({ context: 400_000, input: 272_000, output: 128_000 });
    expect(limitsFor('openai/gpt-5-chat-latest')).toEqual({ context: 128_000, output: 16_384 });
    expect(limitsFor('openai/gpt-3.5-turbo')).toEqual({ context: 16_385, output: 4_096 });
    expect(limitsFor('openai/gpt-4')).toEqual({ context: 8_192, output: 8_192 });
    expect(limitsFor('openai/gpt-4-turbo')).toEqual({ context: 128_000, output: 4_096 });
  });

  it('matches on the id whatever the provider, and defaults for unknown models', () => {
    expect(limitsFor('compatible/gpt-4o')).toEqual(limitsFor('openai/gpt-4o'));
    expect(limitsFor('compatible/llama-3.1-8b-instruct')).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS).toEqual({ context: 128_000, output: 4_096 });
  });

  it('applies overrides field by field', () => {
    expect(limitsFor('compatible/qwen', { context: 32_768 })).toEqual({ context: 32_768, output: 4_096 });
    expect(limitsFor('openai/gpt-5', { output: 10_000 })).toEqual({
      context: 400_000,
      input: 272_000,
      output: 10_000,
    });
    // A smaller context drops a catalog input limit that no longer fits.
    expect(limitsFor('openai/gpt-5', { context: 100_000 })).toEqual({ context: 100_000, output: 128_000 });
  });

  it('strips the provider prefix', () => {
    expect(modelId('openai/gpt-4o')).toBe('gpt-4o');
    expect(modelId('compatible/org/model')).toBe('org/model');
  });
});
