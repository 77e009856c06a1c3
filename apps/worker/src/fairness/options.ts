// Fairness settings of a worker process: the deployment defaults a tenant's own limits override
// (tenants.settings.limits), and the timings of the semaphore, the token window and batch items.

export interface FairnessOptions {
  /** Running sessions per tenant when the tenant sets none; 0 = no cap. */
  maxConcurrentSessions: number;
  /** Model tokens per window per tenant when the tenant sets none; 0 = no budget. */
  tokensPerMinute: number;
  /** Tenant slot lease: renewed while a step runs, kept between the steps of one run. */
  slotTtlMs: number;
  /** A step refused a slot tries again after this (interactive; batch sessions wait 10×), unless woken by a release first. */
  slotRetryMs: number;
  /** Length of a token budget window (a minute; tests shorten it). */
  tokenWindowMs: number;
  /** A batch item whose session is busy looks again after this, unless woken by the session stopping first. */
  batchPollMs: number;
}

export const defaultFairness: FairnessOptions = {
  maxConcurrentSessions: 0,
  tokensPerMinute: 0,
  slotTtlMs: 30_000,
  slotRetryMs: 2_000,
  tokenWindowMs: 60_000,
  batchPollMs: 15_000,
};

/** The fairness in effect: the deps' own settings over the defaults (asks only for `fairness`). */
export function fairnessOf(deps: { fairness?: Partial<FairnessOptions> | undefined }): FairnessOptions {
  return deps.fairness ? { ...defaultFairness, ...deps.fairness } : defaultFairness;
}

/** "No cap" still goes through the semaphore (so a cap set later counts every running session). */
export const UNLIMITED = 1_000_000_000;

/** The BullMQ priority of a session's jobs (the wake catalogue's `session` rule, packages/queue/src/wake.ts). */
export { sessionPriority } from '@loopline/queue';

/** Up to ±50% jitter, so jobs delayed together do not all come back in the same millisecond. */
export function jittered(ms: number): number {
  return Math.round(ms * (0.75 + Math.random() * 0.5));
}
