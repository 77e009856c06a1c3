import { describe, expect, it } from 'vitest';
import { DEFAULT_HEAP_GROWTH_PERCENT, limitHeapGrowth } from '../src/heap.ts';

describe('limitHeapGrowth', () => {
  it('leaves V8 alone at 0 or when the node options already set the factor', () => {
    expect(limitHeapGrowth(0, [])).toBe(false);
    expect(limitHeapGrowth(50, ['--max-semi-space-size=8', '--heap-growing-percent=100'])).toBe(false);
    expect(limitHeapGrowth(50, ['--heap_growing_percent=20'])).toBe(false);
  });

  it('sets the factor otherwise (the default, as the worker does)', () => {
    expect(limitHeapGrowth(DEFAULT_HEAP_GROWTH_PERCENT, ['--max-semi-space-size=8', ''])).toBe(true);
  });
});
