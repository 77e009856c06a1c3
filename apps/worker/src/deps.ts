import type { RuntimeFlags, Tokenizer } from '@loopline/core';
import type { Db } from '@loopline/db';
import type { SecretBox } from '@loopline/egress';
import type { Provider } from '@loopline/llm';
import type { KeySpace, Queues, RedisClient } from '@loopline/queue';
import type { Logger } from 'pino';
import type { WorkerEgress } from './egress.ts';
import type { FairnessOptions } from './fairness/options.ts';
import type { WorkerMetrics } from './metrics.ts';
import type { SessionCache } from './session-cache.ts';
import type { StepFences } from './step/fence-batch.ts';
import type { StepFinishes } from './step/finish-batch.ts';
import type { StepStarts } from './step/start-batch.ts';

/** LOOPLINE_MODEL_CALL_TIMEOUT_MS's default: 30 minutes for one model call, start to finish. */
export const MODEL_CALL_TIMEOUT_MS = 30 * 60_000;

// The worker's dependencies, handed in (no module singletons), and the narrow contexts a function
// asks for instead of the whole bag (docs/decisions.md D32): groups joined with `&`; callers hand
// in the one WorkerDeps, which fits every group structurally. Field docs are on WorkerDeps.

/** Everything a processor touches, handed in (no module singletons). */
export interface WorkerDeps {
  db: Db;
  /** A single-node `Redis` or a `Cluster` client (packages/queue/src/redis.ts). */
  redis: RedisClient;
  keys: KeySpace;
  queues: Queues;
  tokenizer: Tokenizer;
  logger: Logger;
  /**
   * The operator's model providers (model-endpoint.ts): the built-in `openai` (and `compatible`
   * when baseURL is set) from this key and base URL, plus `providers` (LOOPLINE_PROVIDERS). The
   * deployment's credentials are only ever sent to these. `callTimeoutMs`: the longest one model
   * call of a step or a summary may take, start to finish (LOOPLINE_MODEL_CALL_TIMEOUT_MS; absent →
   * MODEL_CALL_TIMEOUT_MS). `replyMaxChars`: the most characters one reply of a step or a summary
   * may stream (LOOPLINE_MODEL_REPLY_MAX_CHARS; absent → llm MODEL_REPLY_MAX_CHARS).
   */
  llm: {
    apiKey?: string;
    baseURL?: string;
    providers?: Provider[];
    callTimeoutMs?: number;
    replyMaxChars?: number;
  };
  /**
   * Gates for every outbound request a tenant influences (webhooks, attachments, tenant model
   * endpoints). Absent → gates that refuse every private address.
   */
  egress?: WorkerEgress;
  /**
   * Opens tenant model credentials and webhook signing secrets (LOOPLINE_SECRETS_KEY). Absent →
   * webhook calls go unsigned and agents with their own endpoint cannot run.
   */
  secrets?: SecretBox;
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
  /**
   * The per-worker session cache (session-cache.ts): a session's log since its boundary, read
   * again only where it changed. Absent → one of the default size per deps object; null → off
   * (every job loads the log from PostgreSQL).
   */
  sessionCache?: SessionCache | null;
  /**
   * The group commit of step starts (step/start-batch.ts). Absent → one with the defaults per deps
   * object; main.ts sizes it from WORKER_START_CONCURRENCY and WORKER_START_BATCH_MAX.
   */
  stepStarts?: StepStarts;
  /**
   * The group commit of step fences (step/fence-batch.ts). Absent → one with the defaults per deps
   * object; main.ts sizes it from WORKER_FENCE_CONCURRENCY and WORKER_FENCE_BATCH_MAX.
   */
  stepFences?: StepFences;
  /**
   * The group commit of step finishes (step/finish-batch.ts). Absent → one with the defaults per
   * deps object; main.ts sizes it from WORKER_FINISH_CONCURRENCY and WORKER_FINISH_BATCH_MAX.
   */
  stepFinishes?: StepFinishes;
}

/** PostgreSQL. */
export type Store = Pick<WorkerDeps, 'db'>;
/** Redis state and pub/sub under the deployment's key space. */
export type Bus = Pick<WorkerDeps, 'redis' | 'keys'>;
/** The BullMQ queues a job wakes or schedules. */
export type Jobs = Pick<WorkerDeps, 'queues'>;
/** The worker's pino logger. */
export type Log = Pick<WorkerDeps, 'logger'>;
/** The shared resources most jobs touch: database, Redis, queues, logger. */
export type Resources = Store & Bus & Jobs & Log;
/** The tokenizer of the model input counts. */
export type Tokens = Pick<WorkerDeps, 'tokenizer'>;
/** What opening a model endpoint or an outbound call needs: providers, egress gates, secrets. */
export type Models = Pick<WorkerDeps, 'llm' | 'egress' | 'secrets'>;
/** Prometheus metrics (optional). */
export type Metered = Pick<WorkerDeps, 'metrics'>;
/** The test hook (racepoints). */
export type Hooks = Pick<WorkerDeps, 'racepoint'>;
/** Runtime switches (autocompact, prune). */
export type Flags = Pick<WorkerDeps, 'flags'>;
/** Tenant fairness settings. */
export type FairnessDeps = Pick<WorkerDeps, 'fairness'>;
/** Session lock timings (lease-runner.ts). */
export type LeaseTimings = Pick<WorkerDeps, 'lockTtlMs' | 'lockRetryMs'>;
/** Per-turn error limits. */
export type TurnLimits = Pick<WorkerDeps, 'maxProviderRetries' | 'maxInterruptedSteps'>;
/** Whether title jobs run. */
export type Titles = Pick<WorkerDeps, 'titles'>;
/** The per-worker session cache (session-context.ts sessionCacheOf) and the fences that read its changes. */
export type CacheDeps = Pick<WorkerDeps, 'sessionCache' | 'stepFences'>;
