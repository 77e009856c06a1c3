import { randomUUID } from 'node:crypto';
import { createQueues, jobIds, keySpace } from '@loopline/queue';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { enqueueCompact } from '../src/processors/prune.ts';

// One pending compaction job per compaction (processors/prune.ts enqueueCompact), on the real
// Redis and BullMQ: a runner that finds the session compacting while the job is still waiting (or
// delayed, or active on a worker that died) adds no second job, which would take the session from
// the first; once that job is gone or has ended, the next runner adds a new one under its fence.

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const keys = keySpace(`test-${randomUUID()}`);
const queues = createQueues(redis, keys);
afterAll(async () => {
  await Promise.all(queues.all().map((q) => q.obliterate({ force: true })));
  await queues.close();
  await redis.quit();
});

const deps = { queues, redis, keys };
const S = `ses_${randomUUID().slice(0, 8)}`;
const ids = async () =>
  (await queues.compact.getJobs(['waiting', 'prioritized', 'delayed'])).map((j) => j.id).sort();

describe('enqueueCompact', () => {
  it('adds no second job while the compaction has one pending; a new one when it is gone', async () => {
    await enqueueCompact(deps, 'ten_a', S, 'msg_a', 15);
    await enqueueCompact(deps, 'ten_a', S, 'msg_a', 21); // the first still waits: nothing added
    expect(await ids()).toEqual([jobIds.compact(S, 'msg_a', 15)]);

    await (await queues.compact.getJob(jobIds.compact(S, 'msg_a', 15)))!.remove();
    await enqueueCompact(deps, 'ten_a', S, 'msg_a', 26);
    expect(await ids()).toEqual([jobIds.compact(S, 'msg_a', 26)]);

    // Another compaction of the same session (a newer marker) is never held back by this one.
    await enqueueCompact(deps, 'ten_a', S, 'msg_b', 30);
    expect(await ids()).toEqual([jobIds.compact(S, 'msg_a', 26), jobIds.compact(S, 'msg_b', 30)].sort());
    expect(await redis.get(keys.compactJob(S))).toBe(jobIds.compact(S, 'msg_b', 30));
  });

  it('a job that ended (completed or failed) does not block the next compaction job', async () => {
    const s = `${S}x`;
    await queues.compact.drain(); // the worker below takes the next job: this one
    await enqueueCompact(deps, 'ten_a', s, 'msg_a', 3);
    const job = (await queues.compact.getJob(jobIds.compact(s, 'msg_a', 3)))!;
    // Take it as a worker would, and end it: completed without a summary (e.g. superseded).
    const token = randomUUID();
    const worker = new Worker(queues.compact.name, undefined, {
      connection: redis.duplicate(),
      prefix: keys.queuePrefix,
    });
    const active = await worker.getNextJob(token);
    expect(active?.id).toBe(job.id);
    await active!.moveToCompleted('superseded', token, false);
    await worker.close();
    expect(await queues.compact.getJobState(job.id!)).toBe('completed');

    await enqueueCompact(deps, 'ten_a', s, 'msg_a', 4);
    expect(await queues.compact.getJobState(jobIds.compact(s, 'msg_a', 4))).not.toBe('unknown');
  });
});
