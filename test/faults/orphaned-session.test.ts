import { acquireFence, type Db } from '@loopline/db';
import { reconcileOnce } from '@loopline/worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultStack, startFaultStack } from '../support/fault-stack.ts';
import type { FaultToolServer } from '../support/fault-tools.ts';
import { checkInvariants } from '../support/invariants.ts';
import type { WorkerPool } from '../support/procs.ts';
import type { Client, Stack } from '../support/stack.ts';
import { sleep, until } from '../support/wait.ts';

// Found by the chaos run: an orphaned session. A worker frozen between acquireLease and
// acquireFence woke with an expired lease, still took the next fence (superseding the live runner,
// which quit on StaleFenceError), then lost its own lease and quit: no holder, no job, the session
// `running` forever. These tests make that state deterministically (the test takes the next fence
// while a real worker runs a tool) and check each way out:
//   - a superseded runner leaves a resume job one lock TTL out (lease-runner.ts);
//   - with that job lost too (`strand`), a client retry with the same Idempotency-Key revives it
//     exactly once (a per-fence wake id: a kept completed job id made the add a no-op before);
//   - the reconciler finds a stranded session and its resume job ends the turn, invariants intact.
// The workers run with the reconciler off, so each test sees only the mechanism it is about.

const LOCK_MS = 1500;

let fault: FaultStack;
let stack: Stack;
let client: Client;
let admin: Db;
let tools: FaultToolServer;
let pool: WorkerPool;

beforeAll(async () => {
  fault = await startFaultStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: '[tool:slow]', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 1500 } }] },
        },
      ],
    },
    fenceAudit: true,
    workers: { lockMs: LOCK_MS, stalledMs: 500, extra: { LOOPLINE_RECONCILE_INTERVAL_MS: '0' }, start: 1 },
  });
  ({ stack, client, admin, tools, pool } = fault);
}, 60_000);

afterAll(() => fault?.close());

/** A session whose runner is superseded mid-tool by a fence nobody uses: returns once it is orphaned (or finished). */
async function orphan(n: number) {
  const sessionId = await client.session('agent');
  const text = `[s${n}] [tool:slow] run it`;
  const key = `k-${n}`;
  const accepted = await client.send(sessionId, text, { 'idempotency-key': key });
  await until('the tool running', () => tools.inFlight().some((r) => r.sessionId === sessionId), 20_000);
  await acquireFence(admin, client.tenantId, sessionId); // the zombie runner's fence
  // On purpose, a window: the tool ends, the live runner's write is rejected, and anything that
  // would re-wake the session has had two lock TTLs to do so (the tests then show nothing did).
  await sleep(1500 + 3 * LOCK_MS);
  return { sessionId, text, key, messageId: accepted.message.info.id as string };
}

/** Pending step jobs of a session (waiting, delayed, prioritized or active). */
const pendingSteps = async (sessionId: string) =>
  (await stack.deps.queues.step.getJobs(['wait', 'delayed', 'prioritized', 'active'])).filter(
    (j) => j?.data?.sessionId === sessionId,
  );

/**
 * An orphan whose safety net is gone too: the resume job the superseded runner leaves is removed
 * before it runs (a Redis restart would lose it). Returns once the session is stranded: `running`,
 * no pending job, no lock.
 */
async function strand(n: number) {
  const sessionId = await client.session('agent');
  const text = `[s${n}] [tool:slow] run it`;
  const key = `k-${n}`;
  const accepted = await client.send(sessionId, text, { 'idempotency-key': key });
  await until('the tool running', () => tools.inFlight().some((r) => r.sessionId === sessionId), 20_000);
  await acquireFence(admin, client.tenantId, sessionId); // the zombie runner's fence
  const resume = await until(
    'the resume job of the superseded runner',
    async () => (await pendingSteps(sessionId)).find((j) => j.id?.startsWith(`resume-${sessionId}-`)),
    20_000,
  );
  await resume.remove();
  await sleep(2 * LOCK_MS); // on purpose: two lock TTLs in which nothing may wake the session
  expect(await status(sessionId)).toBe('running');
  expect(await pendingSteps(sessionId)).toEqual([]);
  expect(await stack.deps.redis.exists(stack.deps.keys.lock(sessionId))).toBe(0);
  return { sessionId, text, key, messageId: accepted.message.info.id as string };
}

/** Any job of the session pending in the loop's queues (step, compact, prune). */
const anyPending = async (sessionId: string) => {
  for (const q of [stack.deps.queues.step, stack.deps.queues.compact, stack.deps.queues.prune])
    for (const j of await q.getJobs(['wait', 'delayed', 'prioritized', 'active']))
      if (j?.data?.sessionId === sessionId) return true;
  return false;
};

const status = async (sessionId: string) =>
  (await admin.selectFrom('sessions').select('status').where('id', '=', sessionId).executeTakeFirstOrThrow())
    .status;

const finished = (sessionId: string, timeoutMs: number) =>
  until(
    'the turn finished',
    async () =>
      (await client.history(sessionId)).messages.at(-1)?.info.finish === 'stop' ? true : undefined,
    timeoutMs,
  );

describe('a session whose runner was superseded by a runner that then died (orphaned)', () => {
  it('finishes its turn without outside help', async () => {
    const o = await orphan(1);
    expect(await status(o.sessionId)).toBe('idle');
  }, 60_000);

  it('once stranded, is revived exactly once more by a client retry with the same Idempotency-Key', async () => {
    const o = await strand(2);
    // Two replays (concurrent, as a client retrying on a timeout might): one more wake, not two.
    const replays = await Promise.all(
      [1, 2].map(() => client.send(o.sessionId, o.text, { 'idempotency-key': o.key })),
    );
    for (const r of replays) expect(r.message.info.id).toBe(o.messageId);
    await finished(o.sessionId, 15_000);
    await client.waitIdle(o.sessionId, 15_000);
    const rewakes = (
      await stack.deps.queues.step.getJobs(['completed', 'active', 'wait', 'delayed', 'prioritized'])
    ).filter((j) => j?.id?.startsWith(`wake-${o.sessionId}-${o.messageId}-r`));
    expect(rewakes.map((j) => j.id)).toHaveLength(1);
    // A replay once the turn is over wakes nothing.
    await client.send(o.sessionId, o.text, { 'idempotency-key': o.key });
    expect(await pendingSteps(o.sessionId)).toEqual([]);
  }, 60_000);

  it('once stranded, is found by the reconciler and brought to the end of its turn, invariants intact', async () => {
    const o = await strand(3);
    const pass = await reconcileOnce(stack.deps, { afterMs: LOCK_MS });
    expect(pass.woken).toEqual([
      expect.objectContaining({ sessionId: o.sessionId, status: 'running', queue: 'step' }),
    ]);
    // A second pass while that job is pending adds nothing.
    expect((await reconcileOnce(stack.deps, { afterMs: LOCK_MS })).woken).toEqual([]);
    await finished(o.sessionId, 20_000);
    await client.waitIdle(o.sessionId, 20_000);
    const log = await client.history(o.sessionId);
    const tool = log.messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');
    expect(tools.calls.get(tool.callId)).toBe(1);
    await pool.stopAll();
    const report = await checkInvariants({
      db: admin,
      sessions: [{ tenantId: client.tenantId, sessionId: o.sessionId, accepted: [o.messageId] }],
      toolCalls: tools.calls,
      webhookTools: ['slow'],
      fenceAudit: true,
      modelView: (s) => client.history(s.sessionId, 'model'),
    });
    expect(report.violations).toEqual([]);
  }, 60_000);

  it('compacting with its compaction job lost: the reconciler re-adds the compaction job', async () => {
    pool.start();
    const sessionId = await client.session('agent');
    // Long enough that its summary shrinks it (a compaction that would not is a recorded no-op).
    await client.send(sessionId, `hello, short answer please${' lorem ipsum dolor sit amet'.repeat(150)}`);
    await client.waitIdle(sessionId, 20_000);
    await until('the idle prune done', async () => !(await anyPending(sessionId)), 20_000);
    await pool.stopAll();
    // A manual compaction; then the state a Redis restart leaves after the step routed it: the
    // session compacting, its marker written, no job (the step job is removed here, and the
    // compaction job it would have added never existed), the row untouched for a while.
    const compact = await client.call('POST', `/v1/sessions/${sessionId}/compact`, {});
    expect(compact.status).toBe(202);
    const markerId = compact.body.message.info.id as string;
    for (const j of await pendingSteps(sessionId)) await j.remove();
    await admin
      .updateTable('sessions')
      .set({ status: 'compacting', updated_at: sql<Date>`now() - interval '1 minute'` })
      .where('id', '=', sessionId)
      .execute();
    expect(await anyPending(sessionId)).toBe(false);

    const pass = await reconcileOnce(stack.deps, { afterMs: LOCK_MS });
    expect(pass.woken).toEqual([
      expect.objectContaining({ sessionId, status: 'compacting', queue: 'compact' }),
    ]);
    const [job] = (await stack.deps.queues.compact.getJobs(['wait', 'prioritized'])).filter(
      (j) => j?.data?.sessionId === sessionId,
    );
    expect(job?.data).toMatchObject({ sessionId, messageId: markerId });

    pool.start();
    const ctx = await until(
      'the compaction completed',
      async () => {
        const res = await client.call('GET', `/v1/sessions/${sessionId}/context`);
        return res.body?.compactions?.some((c: any) => c.status === 'completed') ? res.body : undefined;
      },
      30_000,
    );
    expect(ctx.compactions.filter((c: any) => c.status === 'completed')).toHaveLength(1);
    expect((await client.waitIdle(sessionId, 20_000)).status).toBe('idle');
    await pool.stopAll();
    expect(pool.crashes).toEqual([]);
  }, 60_000);
});
