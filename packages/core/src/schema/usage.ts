// Token usage of one model request, normalised across providers, and its arithmetic.

import { z } from 'zod';

/**
 * Token usage of one model request, normalised across providers.
 * `input` excludes cache reads and writes; `output` excludes reasoning.
 */
export const Usage = z.object({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  reasoning: z.number().int().nonnegative(),
  cache: z.object({ read: z.number().int().nonnegative(), write: z.number().int().nonnegative() }),
  total: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

/** A usage of zero tokens. */
export const emptyUsage = (): Usage => ({
  input: 0,
  output: 0,
  reasoning: 0,
  cache: { read: 0, write: 0 },
  total: 0,
});

/** The sum of two usages. */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    reasoning: a.reasoning + b.reasoning,
    cache: { read: a.cache.read + b.cache.read, write: a.cache.write + b.cache.write },
    total: a.total + b.total,
  };
}
