import type { RuntimeFlags, Tokenizer } from '@loopline/core';
import type { Db } from '@loopline/db';
import type { KeySpace, Queues, RedisClient } from '@loopline/queue';
import type { Logger } from 'pino';
import type { FairnessOptions } from './fairness/options.ts';
import type { WorkerMetrics } from './metrics.ts';
import type { AddressPolicy } from './tools/address-policy.ts';

/** Everything a processor touches, handed in (no module singletons). */
export interface WorkerDeps {
  db: Db;
  /** A single-node `Redis` or a `Cluster` client (packages/queue/src/redis.ts). */
  redis: RedisClient;
  keys: KeySpace;
  queues: Queues;
  tokenizer: Tokenizer;
  logger: Logger;
  /** OpenAI credentials and default base URL for `openai/` and `compatible/` models. */
  llm: { apiKey?: string; baseURL?: string };
  webhookPolicy: AddressPolicy;
  flags: RuntimeFlags;
  /** Session lock TTL; renewed every third of it while a job runs. */
  lockTtlMs: number;
  /** Delay before a job that found the session locked tries again. */
  lockRetryMs: number;
  /** Consecutive retryable provider errors tolerated in one turn before the session errors. */
  maxProviderRetries: number;
  /**
   * Consecutive steps closed as StepInterruptedError tolerated in one turn before the session errors
   * (MaxInterruptionsReachedError). Absent → 10.
   */
  maxInterruptedSteps?: number;
  /** Test hook: called at named points of a step so a test can pause or kill there. */
  racepoint?: (name: string) => Promise<void> | void;
  /**
   * Tenant fairness defaults and timings (fairness/options.ts): concurrency cap, token budget,
   * slot lease, token window, batch polling. Absent → defaultFairness (no cap, no budget).
   */
  fairness?: Partial<FairnessOptions>;
  /** Prometheus metrics (metrics.ts); absent → nothing is measured. main.ts always makes one. */
  metrics?: WorkerMetrics;
  /**
   * Generate a session title after the first turn (processors/title.ts). Absent → off; main.ts
   * turns it on unless LOOPLINE_DISABLE_TITLES. Tests with scripted models leave it off.
   */
  titles?: boolean;
}
