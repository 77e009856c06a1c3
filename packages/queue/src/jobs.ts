import { z } from 'zod';

// The job catalog: every queue, its payload schema and its retry policy. Payloads carry ids,
// never history; processors parse them at dequeue. Job ids are deterministic where a duplicate
// must collapse, and never contain ':' (BullMQ's rule).

export const StepJob = z.object({
  tenantId: z.string(),
  sessionId: z.string(),
  reason: z.enum([
    'message',
    'continue',
    'compacted',
    'pruned',
    'resume',
    'tool-results',
    'child-done',
    // Session control: POST …/abort, and a client tool call's timeout.
    'abort',
    'tool-timeout',
  ]),
});
export type StepJob = z.infer<typeof StepJob>;

export const CompactJob = z.object({
  tenantId: z.string(),
  sessionId: z.string(),
  /** The user message holding the compaction part. */
  messageId: z.string(),
});
export type CompactJob = z.infer<typeof CompactJob>;

export const PruneJob = z.object({
  tenantId: z.string(),
  sessionId: z.string(),
  /** What the pass is for: the loop went idle, or a compaction is needed (prune first, §3). */
  purpose: z.enum(['idle', 'compact']),
  /**
   * purpose=compact: the unanswered newest message is the user's own request (the compaction
   * part's `overflow`): it is replayed after the summary instead of the continue message.
   */
  overflow: z.boolean().default(false),
  /** purpose=compact: the provider rejected the request as too long, so compact even if the estimate fits. */
  rejected: z.boolean().default(false),
  /** purpose=compact: the compaction's 1-based number in its user turn (the part's `iteration`). */
  iteration: z.number().int().positive().optional(),
  /** purpose=compact: its number in the run of compactions without progress (the part's `streak`). */
  streak: z.number().int().positive().optional(),
  /**
   * purpose=idle: the session's step count when the loop went idle. A newer turn makes the pass
   * obsolete (it would prune, and write its ledger row, in the middle of someone else's turn).
   */
  stepCount: z.number().int().nonnegative().optional(),
});
export type PruneJob = z.infer<typeof PruneJob>;

export const BackgroundCompactJob = z.object({
  tenantId: z.string(),
  sessionId: z.string(),
  /** The session's step count when scheduled: a newer turn makes the job a no-op. */
  stepCount: z.number().int(),
});
export type BackgroundCompactJob = z.infer<typeof BackgroundCompactJob>;

/** A session's title, generated once after its first turn (no session lock: it only sets a null title). */
export const TitleJob = z.object({
  tenantId: z.string(),
  sessionId: z.string(),
});
export type TitleJob = z.infer<typeof TitleJob>;

/** The parent job of a batch flow: runs once every item's job has finished. */
export const BatchJob = z.object({ tenantId: z.string(), batchId: z.string() });
export type BatchJob = z.infer<typeof BatchJob>;

/**
 * A child of a batch flow, one per conversation: posts the item's next user message whenever its
 * session is idle, and finishes the item after the last answer. Between turns it is delayed, not
 * held by a worker (woken early by the session going idle).
 */
export const BatchItemJob = z.object({
  tenantId: z.string(),
  batchId: z.string(),
  index: z.number().int().nonnegative(),
  sessionId: z.string(),
});
export type BatchItemJob = z.infer<typeof BatchItemJob>;

/**
 * The reconciler's periodic run (a BullMQ job scheduler, one run per period across all workers):
 * re-wakes sessions whose status says work is due but that no job and no lock hold any more.
 */
export const ReconcileJob = z.object({
  /** A session counts as stalled once its row has not changed for this long. */
  afterMs: z.number().int().positive(),
});
export type ReconcileJob = z.infer<typeof ReconcileJob>;

/** The events a tenant can subscribe to (PUT /v1/webhooks/:name); produced by the worker. */
export const WEBHOOK_EVENT_TYPES = [
  'session.idle',
  'session.error',
  'session.waiting',
  'compaction.completed',
  'batch.completed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Associated data binding a sealed subscription signing secret to its tenant and name. */
export const webhookSecretAad = (tenantId: string, name: string): string =>
  `webhook-subscription-secret:${tenantId}:${name}`;

/** One delivery of an event to a tenant's webhook subscription (apps/worker/src/webhooks/). */
export const WebhookJob = z.object({ tenantId: z.string(), deliveryId: z.string() });
export type WebhookJob = z.infer<typeof WebhookJob>;

const retry = { attempts: 12, backoff: { type: 'exponential', delay: 250 } } as const;
// Failed jobs are kept a week for inspection, but never more than 50,000 per queue: a tenant's
// flood of failing work (a batch, webhooks to a dead endpoint) must not grow Redis without bound.
const keep = {
  removeOnComplete: { age: 86_400, count: 50_000 },
  removeOnFail: { age: 7 * 86_400, count: 50_000 },
} as const;

export const JOBS = {
  step: { queue: 'loopline-step', schema: StepJob, options: { ...retry, ...keep } },
  compact: { queue: 'loopline-compact', schema: CompactJob, options: { ...retry, ...keep } },
  prune: { queue: 'loopline-prune', schema: PruneJob, options: { ...retry, ...keep } },
  background: { queue: 'loopline-background', schema: BackgroundCompactJob, options: { ...retry, ...keep } },
  batch: { queue: 'loopline-batch', schema: BatchJob, options: { ...retry, ...keep } },
  batchItem: { queue: 'loopline-batch-item', schema: BatchItemJob, options: { ...retry, ...keep } },
  // A few tries for a rate-limited title model; a title is cosmetic, never worth a long retry.
  title: {
    queue: 'loopline-title',
    schema: TitleJob,
    options: { attempts: 3, backoff: { type: 'exponential', delay: 2_000 }, ...keep },
  },
  // Event webhooks: retried with backoff (1 s, 2 s, 4 s … about 17 min in all over 10 attempts),
  // then the delivery is `failed` and can be re-delivered by hand. Its own queue: a dead endpoint
  // only ever holds webhook workers, never the loop's.
  webhook: {
    queue: 'loopline-webhook',
    schema: WebhookJob,
    options: { attempts: 10, backoff: { type: 'exponential', delay: 1_000 }, ...keep },
  },
  // One run per period; the next run is the retry. Keep a short history for Bull Board.
  reconcile: {
    queue: 'loopline-reconcile',
    schema: ReconcileJob,
    options: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
  },
} as const;
export type JobKind = keyof typeof JOBS;
export type JobData<K extends JobKind> = z.infer<(typeof JOBS)[K]['schema']>;

/** Priorities (lower runs first): interactive work before background compaction. */
export const PRIORITY = { interactive: 1, batch: 5, background: 10 } as const;
