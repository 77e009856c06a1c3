import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createQueues,
  keySpace,
  PRIORITY,
  StepJob,
  WAKE,
  type WakeArgs,
  type WakeReason,
  wakeJob,
  wakeSession,
} from '../src/index.ts';

// The wake catalogue: every reason a step job is added, its priority and its job id. Job ids are
// BullMQ's dedup keys (docs/durability.md §1, §4), so the recipes are pinned here: a changed id
// would silently stop a retried producer from collapsing onto the job it already added (or make a
// kept finished job swallow a new one).

const S = 'ses_abc123';

/** One example of each reason's arguments, with the id it must give. */
const examples: { [W in WakeReason]: { args: WakeArgs<W>; id: string } } = {
  message: { args: { sessionId: S, messageId: 'msg_1' }, id: `wake-${S}-msg_1` },
  'message-replay': { args: { sessionId: S, messageId: 'msg_1', fence: 4 }, id: `wake-${S}-msg_1-r4` },
  'child-start': { args: { sessionId: S, messageId: 'msg_2' }, id: `wake-${S}-msg_2` },
  continue: { args: { sessionId: S, stepCount: 7 }, id: `step-${S}-7` },
  compacted: { args: { sessionId: S, compactionMessageId: 'msg_c' }, id: `step-${S}-after-msg_c` },
  pruned: { args: { sessionId: S, stepCount: 7, fence: 3 }, id: `step-${S}-7-pruned-f3` },
  abort: { args: { sessionId: S, abortSeq: 12 }, id: `abort-${S}-12` },
  'tool-results': { args: { sessionId: S, fence: 5 }, id: `results-${S}-f5` },
  'tool-timeout': { args: { sessionId: S, callId: 'call:1' }, id: `timeout-${S}-call_1` },
  'child-done': {
    args: { sessionId: S, childId: 'ses_child', childStepCount: 2 },
    id: `child-${S}-ses_child-2`,
  },
  resume: { args: { sessionId: S, at: 1_700_000_000_000 }, id: `resume-${S}-1700000000000` },
  reconcile: { args: { sessionId: S, fence: 9 }, id: `reconcile-${S}-f9` },
};

const reasons = Object.keys(WAKE) as WakeReason[];
const idOf = <W extends WakeReason>(why: W, args: WakeArgs<W>) =>
  (WAKE[why].jobId as (a: WakeArgs<W>) => string)(args);
const opts = { tenantId: 'ten_1', kind: 'interactive' } as never;

describe('wake catalogue', () => {
  it('lists every reason a session is woken', () => {
    expect(reasons.sort()).toEqual(
      [
        'abort',
        'child-done',
        'child-start',
        'compacted',
        'continue',
        'message',
        'message-replay',
        'pruned',
        'reconcile',
        'resume',
        'tool-results',
        'tool-timeout',
      ].sort(),
    );
  });

  it.each(reasons)('%s: the same situation always gives the same id, with no ":"', (why) => {
    const { args, id } = examples[why];
    expect(idOf(why, args)).toBe(id);
    expect(idOf(why, { ...args })).toBe(idOf(why, args));
    expect(id).not.toContain(':');
    // The id names its session first (the reconciler finds a job's session from its id).
    expect(id).toMatch(new RegExp(`^[a-z]+-${S}-`));
  });

  it.each(reasons)('%s: every argument is part of the id', (why) => {
    const { args } = examples[why];
    for (const [key, value] of Object.entries(args)) {
      const changed = { ...args, [key]: typeof value === 'number' ? value + 1 : `${value}x` };
      expect(idOf(why, changed as never)).not.toBe(idOf(why, args));
    }
  });

  it.each(reasons)('%s: carries valid step reasons and a known priority rule', (why) => {
    for (const reason of WAKE[why].reasons) expect(StepJob.shape.reason.options).toContain(reason);
    expect(['session', 'interactive', 'none']).toContain(WAKE[why].priority);
  });

  it('keeps the ids that must collapse together equal', () => {
    // A child's first step and its re-add by the waiting parent.
    expect(idOf('child-start', examples.message.args)).toBe(idOf('message', examples.message.args));
  });
});

describe('wakeJob', () => {
  it('builds the payload and the options from the catalogue', () => {
    expect(
      wakeJob('continue', { sessionId: S, stepCount: 1 }, { tenantId: 'ten_1', kind: 'interactive' }),
    ).toEqual({
      jobId: `step-${S}-1`,
      data: { tenantId: 'ten_1', sessionId: S, reason: 'continue' },
      options: { priority: PRIORITY.interactive },
    });
    // A batch session's steps queue behind interactive ones; a delay is passed on as is (0 included).
    expect(
      wakeJob('continue', { sessionId: S, stepCount: 1 }, { tenantId: 'ten_1', kind: 'batch', delayMs: 0 })
        .options,
    ).toEqual({ priority: PRIORITY.batch, delay: 0 });
    // Control wakes are interactive whatever the session.
    expect(wakeJob('abort', { sessionId: S, abortSeq: 1 }, { tenantId: 'ten_1' }).options).toEqual({
      priority: PRIORITY.interactive,
    });
    // A resume has no priority at all.
    expect(
      wakeJob('resume', { sessionId: S, at: 5 }, { tenantId: 'ten_1', delayMs: 15_000 }).options,
    ).toEqual({
      delay: 15_000,
    });
  });

  it("takes a reconcile wake's reason, resume by default, and refuses one it cannot carry", () => {
    const args = { sessionId: S, fence: 2 };
    expect(wakeJob('reconcile', args, { tenantId: 't', kind: 'interactive' }).data.reason).toBe('resume');
    expect(
      wakeJob('reconcile', args, { tenantId: 't', kind: 'interactive', reason: 'child-done' }).data.reason,
    ).toBe('child-done');
    expect(() =>
      wakeJob('reconcile', args, { tenantId: 't', kind: 'x', reason: 'message' as never }),
    ).toThrow(/cannot carry/);
  });

  it.each(reasons)('%s: gives a valid step job', (why) => {
    const job = wakeJob(why, examples[why].args as never, opts);
    expect(StepJob.parse(job.data)).toEqual(job.data);
    expect(job.data.sessionId).toBe(S);
  });
});

describe('wakeSession (real Redis)', () => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 3 });
  const queues = createQueues(redis, keySpace(`test-${randomUUID()}`));
  afterAll(async () => {
    await queues.step.obliterate({ force: true });
    await queues.close();
    await redis.quit();
  });

  it('adds the step job once: waking the same situation again collapses onto it', async () => {
    const args = { sessionId: S, messageId: 'msg_dup' };
    const first = await wakeSession(queues, 'message', args, { tenantId: 'ten_1', kind: 'batch' });
    const again = await wakeSession(queues, 'message', args, { tenantId: 'ten_1', kind: 'batch' });
    expect(again).toBe(first);
    const job = await queues.step.getJob(first);
    expect(job?.data).toEqual({ tenantId: 'ten_1', sessionId: S, reason: 'message' });
    expect(job?.opts.priority).toBe(PRIORITY.batch);
    expect(await queues.step.getJobCounts('prioritized', 'waiting', 'delayed')).toEqual({
      prioritized: 1,
      waiting: 0,
      delayed: 0,
    });
  });
});
