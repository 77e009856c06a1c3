import type { JobsOptions } from 'bullmq';
import { PRIORITY, StepJob } from './jobs.ts';
import type { Queues } from './producer.ts';

// Waking a session: the one place a step job is added. Each wake reason names the situation, the
// `reason` its job carries (logs, the inspector; the step itself re-derives everything from the
// log), its priority and its job id. Job ids are BullMQ's dedup keys (docs/durability.md §1, §4):
// the same situation must always give the same id, so a retried producer collapses onto the job it
// already added; an id a superseded runner might have used up carries that runner's fence (or the
// seq, message or call it answers), so a finished job kept by BullMQ never swallows a later one.
// Changing a recipe changes what collapses: the ids below are pinned by packages/queue/test/wake.test.ts.

type StepReason = StepJob['reason'];

/**
 * `session`: the woken session's own priority (batch sessions after interactive ones);
 * `interactive`: always interactive (control that should not queue behind a batch);
 * `none`: no priority at all (BullMQ's plain wait list).
 */
type PriorityRule = 'session' | 'interactive' | 'none';

interface WakeSpec<A extends { sessionId: string }> {
  /** The job's `reason`; the first is the default where a wake may carry several. */
  reasons: readonly [StepReason, ...StepReason[]];
  priority: PriorityRule;
  jobId(args: A): string;
}

/** Keeps each entry's literal reasons and priority rule in its type (WakeOptions reads them). */
const spec = <
  A extends { sessionId: string },
  const R extends readonly [StepReason, ...StepReason[]],
  const P extends PriorityRule,
>(s: {
  reasons: R;
  priority: P;
  jobId(args: A): string;
}) => s;

interface Message {
  sessionId: string;
  messageId: string;
}
const messageId = ({ sessionId, messageId }: Message) => `wake-${sessionId}-${messageId}`;

export const WAKE = {
  /** A user message was stored (POST …/messages, a batch item's next message): one step per message. */
  message: spec({ reasons: ['message'], priority: 'session', jobId: messageId }),
  /**
   * An idempotent replay of that message (same Idempotency-Key) finds its first wake finished while
   * the session still has work due: re-wake it once per fence.
   */
  'message-replay': spec({
    reasons: ['message'],
    priority: 'session',
    jobId: (a: Message & { fence: number }) => `${messageId(a)}-r${a.fence}`,
  }),
  /**
   * A child session's first message (the task tool), added by the parent's step and re-added by the
   * parent while it waits (a no-op unless it was lost). Same id as `message`: both collapse.
   */
  'child-start': spec({ reasons: ['message'], priority: 'interactive', jobId: messageId }),
  /** The loop goes on after a model call (now, or after a provider retry's delay): one step per step count. */
  continue: spec({
    reasons: ['continue'],
    priority: 'session',
    jobId: (a: { sessionId: string; stepCount: number }) => `step-${a.sessionId}-${a.stepCount}`,
  }),
  /** A compaction point is done: every run of that compaction collapses onto one step. */
  compacted: spec({
    reasons: ['compacted'],
    priority: 'session',
    jobId: (a: { sessionId: string; compactionMessageId: string }) =>
      `step-${a.sessionId}-after-${a.compactionMessageId}`,
  }),
  /** The prune pass before a compaction made it unnecessary (or compaction was switched off): per runner. */
  pruned: spec({
    reasons: ['pruned'],
    priority: 'session',
    jobId: (a: { sessionId: string; stepCount: number; fence: number }) =>
      `step-${a.sessionId}-${a.stepCount}-pruned-f${a.fence}`,
  }),
  /** POST …/abort (or a parent's abort cascading to its child): one per abort request, by the seq it was recorded at. */
  abort: spec({
    reasons: ['abort'],
    priority: 'interactive',
    jobId: (a: { sessionId: string; abortSeq: number }) => `abort-${a.sessionId}-${a.abortSeq}`,
  }),
  /** Client tool results were stored: one per fence the gateway took to write them. */
  'tool-results': spec({
    reasons: ['tool-results'],
    priority: 'interactive',
    jobId: (a: { sessionId: string; fence: number }) => `results-${a.sessionId}-f${a.fence}`,
  }),
  /** A client tool call's deadline (a delayed job): fires once per call; the reconciler re-adds it under the same id. */
  'tool-timeout': spec({
    reasons: ['tool-timeout'],
    priority: 'interactive',
    jobId: (a: { sessionId: string; callId: string }) =>
      `timeout-${a.sessionId}-${a.callId.replace(/:/g, '_')}`,
  }),
  /** A child session stopped: its parent (`sessionId`) writes the answer; one per child step count. */
  'child-done': spec({
    reasons: ['child-done'],
    priority: 'interactive',
    jobId: (a: { sessionId: string; childId: string; childStepCount: number }) =>
      `child-${a.sessionId}-${a.childId}-${a.childStepCount}`,
  }),
  /**
   * A runner superseded (or that lost its lease) leaves a delayed resume in case its successor dies
   * too; `at` is when it was left (ms), so each one is new.
   */
  resume: spec({
    reasons: ['resume'],
    priority: 'none',
    jobId: (a: { sessionId: string; at: number }) => `resume-${a.sessionId}-${a.at}`,
  }),
  /**
   * The reconciler re-wakes a stalled session (docs/durability.md §7): once per fence, whichever
   * reason is due (a waiting session's timeout, child or abort; else a plain resume). The same id
   * re-adds a lost compaction job on the compact queue (reconcileJobId).
   */
  reconcile: spec({
    reasons: ['resume', 'abort', 'tool-timeout', 'child-done'],
    priority: 'session',
    jobId: (a: { sessionId: string; fence: number }) => `reconcile-${a.sessionId}-f${a.fence}`,
  }),
} as const;

export type WakeReason = keyof typeof WAKE;
type Spec<W extends WakeReason> = (typeof WAKE)[W];
export type WakeArgs<W extends WakeReason> = Parameters<Spec<W>['jobId']>[0];

export type WakeOptions<W extends WakeReason> = {
  tenantId: string;
  /** Run no earlier than this many ms from now. */
  delayMs?: number;
} & (Spec<W>['priority'] extends 'session'
  ? {
      /** The woken session's kind: its priority. */
      kind: string;
    }
  : unknown) &
  (Spec<W>['reasons'] extends readonly [StepReason]
    ? unknown
    : {
        /** Which of the wake's job reasons (its first when absent). */
        reason?: Spec<W>['reasons'][number];
      });

/** The BullMQ priority of a session's step jobs: batch sessions after interactive ones. */
export function sessionPriority(session: { kind: string }): number {
  return session.kind === 'batch' ? PRIORITY.batch : PRIORITY.interactive;
}

export interface WakeJob {
  jobId: string;
  data: StepJob;
  options: JobsOptions;
}

/** The step job a wake adds: id, payload and options, all from the catalogue. */
export function wakeJob<W extends WakeReason>(why: W, args: WakeArgs<W>, opts: WakeOptions<W>): WakeJob {
  const wake = WAKE[why] as WakeSpec<WakeArgs<W>>;
  const o = opts as { tenantId: string; delayMs?: number; kind?: string; reason?: StepReason };
  const reason = o.reason ?? wake.reasons[0];
  if (!wake.reasons.includes(reason)) throw new Error(`wake ${why} cannot carry reason ${reason}`);
  const options: JobsOptions = {};
  if (o.delayMs !== undefined) options.delay = o.delayMs;
  if (wake.priority === 'interactive') options.priority = PRIORITY.interactive;
  else if (wake.priority === 'session') options.priority = sessionPriority({ kind: o.kind ?? 'interactive' });
  return {
    jobId: wake.jobId(args),
    data: StepJob.parse({ tenantId: o.tenantId, sessionId: args.sessionId, reason }),
    options,
  };
}

/** Adds the step job of a wake; returns its id. Adding it again collapses onto the same job. */
export async function wakeSession<W extends WakeReason>(
  queues: Pick<Queues, 'add'>,
  why: W,
  args: WakeArgs<W>,
  opts: WakeOptions<W>,
): Promise<string> {
  const job = wakeJob(why, args, opts);
  await queues.add('step', job.jobId, job.data, job.options);
  return job.jobId;
}
