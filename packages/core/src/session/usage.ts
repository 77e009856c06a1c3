// Provider usage → Loopline's Usage: one normalisation for every provider the AI SDK speaks to,
// so overflow checks and cost accounting never see a provider's own shape.

import type { Usage } from '../schema/usage.ts';

/** Structural copy of AI SDK v7 `LanguageModelUsage` (every field may be missing). */
export interface SdkUsage {
  inputTokens?: number | undefined;
  inputTokenDetails?: {
    noCacheTokens?: number | undefined;
    cacheReadTokens?: number | undefined;
    cacheWriteTokens?: number | undefined;
  };
  outputTokens?: number | undefined;
  outputTokenDetails?: { textTokens?: number | undefined; reasoningTokens?: number | undefined };
  totalTokens?: number | undefined;
}

function count(n: number | undefined): number {
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.round(n) : 0;
}

/**
 * `input` excludes cache reads and writes, `output` excludes reasoning (the SDK's totals include
 * both). Detail fields win when present; otherwise they are derived from the totals.
 */
export function usageFromSdk(u: SdkUsage | undefined): Usage {
  const read = count(u?.inputTokenDetails?.cacheReadTokens);
  const write = count(u?.inputTokenDetails?.cacheWriteTokens);
  const noCache = u?.inputTokenDetails?.noCacheTokens;
  const input = noCache !== undefined ? count(noCache) : Math.max(0, count(u?.inputTokens) - read - write);
  const reasoning = count(u?.outputTokenDetails?.reasoningTokens);
  const text = u?.outputTokenDetails?.textTokens;
  const output = text !== undefined ? count(text) : Math.max(0, count(u?.outputTokens) - reasoning);
  const total = count(u?.totalTokens) || input + read + write + output + reasoning;
  return { input, output, reasoning, cache: { read, write }, total };
}

/** `total || input + output + cache.read + cache.write`: the size §2 compares with the trigger. */
export function usageCount(u: Usage): number {
  return u.total || u.input + u.output + u.cache.read + u.cache.write;
}

/** What the provider read for the request: input including cache reads and writes. */
export function promptTokens(u: Usage): number {
  return u.input + u.cache.read + u.cache.write;
}
