import type { Db } from '@loopline/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultStack, startFaultStack } from '../support/fault-stack.ts';
import type { FaultToolServer } from '../support/fault-tools.ts';
import { checkInvariants, type SessionExpectation } from '../support/invariants.ts';
import type { WorkerPool } from '../support/procs.ts';
import type { PrivateRedis } from '../support/redis-server.ts';
import type { Client, Stack } from '../support/stack.ts';
import { sleep, until } from '../support/wait.ts';

// Redis restarted (kill -9, then started again on the same port, empty: no persistence, as in
// CI) while sessions run, on a private redis-server — never the machine's shared Redis.
//
// A restart loses every BullMQ job, session lock, event stream — and the reconciler's own job
// scheduler. What Loopline guarantees, and these tests assert:
//   - nothing is lost or doubled in PostgreSQL: the log, the fence and the idempotency keys live
//     there; a runner that was mid-step when Redis went away loses its lock (the renewal finds
//     the key gone), stops, and its writes stay fenced;
//   - the workers and the gateway reconnect by themselves;
//   - with the reconciler off, a client that retries its POST with the same Idempotency-Key (what
//     the 503 "retry with the same Idempotency-Key" answer asks for) gets its first response back
//     (same message id, nothing written) and the replay re-wakes the session (a per-fence wake id,
//     append.ts wake()), which picks up where the log says it is (closing an interrupted step,
//     never re-running a tool);
//   - with the reconciler on (the default), no client has to do anything: the workers re-register
//     the reconciler's scheduler when Redis is back, and it re-wakes every session whose status says
//     work is due while no job and no lock hold it (apps/worker/src/reconcile.ts).

let fault: FaultStack;
let redis: PrivateRedis;
let stack: Stack;
let client: Client;
let admin: Db;
let tools: FaultToolServer;
let pool: WorkerPool | undefined;
/** Every session of the file (the invariants check every tool execution against them). */
let allSessions: SessionExpectation[];
const LOCK_MS = 2000;

beforeAll(async () => {
  fault = await startFaultStack({
    privateRedis: true,
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: '[tool:slow]', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 2000 } }] },
        },
        {
          when: { lastUserIncludes: '[stream]', lastMessageRole: 'user' },
          reply: { text: 'a long streamed answer '.repeat(20), chunks: 60 },
          latencyMs: 60,
        },
      ],
    },
    fenceAudit: true,
  });
  ({ stack, client, admin, tools } = fault);
  redis = fault.redis!;
  allSessions = [];
}, 60_000);

/** Two supervised worker processes; `reconcileEvery` sets LOOPLINE_RECONCILE_INTERVAL_MS (0: off). */
function startPool(name: string, reconcileEvery: number): WorkerPool {
  const p = fault.newPool({
    name,
    lockMs: LOCK_MS,
    stalledMs: 1000,
    extra: {
      // 6 step slots for 12 sessions: half of them wait in the queue when Redis goes, and their
      // jobs go with it (a runner that was mid-step leaves a resume job once Redis is back).
      WORKER_STEP_CONCURRENCY: '3',
      LOOPLINE_RECONCILE_INTERVAL_MS: String(reconcileEvery),
      LOOPLINE_RECONCILE_AFTER_MS: String(2 * LOCK_MS),
    },
    supervise: true,
    start: 2,
  });
  return p;
}

afterAll(() => fault?.close());

/** idle with the newest user message answered (by seq), or error. */
async function atRest(sessionIds: string[]): Promise<Map<string, boolean>> {
  const { rows } = await sql<{ id: string; status: string; answered: boolean }>`
    select s.id, s.status,
      coalesce((select max(seq) from messages m where m.session_id = s.id and m.role = 'assistant'
          and m.info ? 'finish' and not m.info ? 'error' and m.info->>'finish' not in ('tool-calls', 'interrupted')
          and not exists (select 1 from parts p where p.message_id = m.id and p.type = 'tool')), 0)
      > coalesce((select max(seq) from messages m where m.session_id = s.id and m.role = 'user'), 0) as answered
    from sessions s where s.id = any(${sessionIds}::text[])`.execute(admin);
  return new Map(rows.map((r) => [r.id, (r.status === 'idle' && r.answered) || r.status === 'error']));
}

async function post(sessionId: string, text: string, key: string) {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await client.call(
        'POST',
        `/v1/sessions/${sessionId}/messages`,
        { text },
        { 'idempotency-key': key },
      );
      if (res.status < 500 || attempt >= 20) return res;
    } catch (err) {
      if (attempt >= 20) throw err;
    }
    await sleep(250); // the client's retry back-off
  }
}

type Planned = SessionExpectation & { text: string; key: string };

/** Sessions mid-turn (tools running, streams flowing) when Redis is killed and started again, empty. */
async function restartUnderLoad(tag: string): Promise<Planned[]> {
  const sessions: Planned[] = [];
  for (let i = 0; i < 12; i++) {
    const sessionId = await client.session('agent');
    const text = `[${tag}${i}] ${i % 3 === 0 ? '[stream] tell me a story' : '[tool:slow] run the slow job'}`;
    sessions.push({ tenantId: client.tenantId, sessionId, accepted: [], text, key: `${tag}-k-${i}` });
  }
  for (const s of sessions) {
    const res = await post(s.sessionId, s.text, s.key);
    expect(res.status).toBe(202);
    s.accepted.push(res.body.message.info.id);
  }
  allSessions.push(...sessions);
  await until('three tools in flight', () => tools.inFlight().length >= 3, 15_000, 50);
  await redis.kill();
  await sleep(1000); // on purpose: Redis stays down a while, as in a real restart
  await redis.start();
  return sessions;
}

/** Waits for every session to be at rest; returns those that are not after `timeoutMs`. */
async function settle(ids: string[], timeoutMs: number): Promise<string[]> {
  await until(
    'every session at rest',
    async () => [...(await atRest(ids)).values()].every(Boolean),
    timeoutMs,
    250,
  ).catch(() => undefined);
  const done = await atRest(ids);
  return ids.filter((id) => !done.get(id));
}

async function invariantsHold(p: WorkerPool) {
  await p.stopAll();
  expect(p.crashes).toEqual([]);
  const report = await checkInvariants({
    db: admin,
    sessions: allSessions,
    toolCalls: tools.calls,
    webhookTools: ['slow'],
    fenceAudit: true,
    allSessions: true,
    modelView: (s) => client.history(s.sessionId, 'model'),
  });
  expect(report.violations).toEqual([]);
}

describe('Redis restarted while sessions run', () => {
  it('reconciler off: loses no message and doubles nothing; a client retry with the same Idempotency-Key resumes every session', async () => {
    pool = startPool('no-reconciler', 0);
    const sessions = await restartUnderLoad('a');

    // On their own, sessions whose job or lock was lost do not move again: on purpose, a window
    // in which nothing may move them.
    await sleep(8000);
    const ids = sessions.map((s) => s.sessionId);
    const rest = await atRest(ids);
    const stuck = sessions.filter((s) => !rest.get(s.sessionId));
    const statuses = await admin
      .selectFrom('sessions')
      .select('status')
      .where('id', 'in', stuck.length ? stuck.map((s) => s.sessionId) : [''])
      .execute();
    console.log(
      `redis restart, reconciler off: ${stuck.length} of ${sessions.length} sessions stuck 8 s after ` +
        `the restart without a client retry (statuses: ${statuses.map((r) => r.status).join(', ')})`,
    );

    expect(stuck.length).toBeGreaterThan(0);
    // The client retries its POST with the same Idempotency-Key: same message, nothing written, woken again.
    for (const s of stuck) {
      const res = await post(s.sessionId, s.text, s.key);
      expect(res.status).toBe(202);
      expect(res.body.message.info.id).toBe(s.accepted[0]);
    }
    expect(await settle(ids, 40_000)).toEqual([]);
    await invariantsHold(pool);
  }, 120_000);

  it('reconciler on: every session left queued/running by the restart finishes without any client retry', async () => {
    const workers = startPool('reconciler', 1000);
    pool = workers;
    const sessions = await restartUnderLoad('b');
    const ids = sessions.map((s) => s.sessionId);
    // No client writes from here on: the workers re-register the scheduler Redis lost, and the
    // reconciler re-wakes what the restart orphaned.
    expect(await settle(ids, 60_000)).toEqual([]);
    expect(await stack.deps.queues.reconcile.getJobScheduler('reconcile')).toMatchObject({ every: 1000 });
    // Log lines come through a pipe, possibly after the sessions are seen settled.
    const rewoken = await until('a re-wake log line', () => {
      const lines = workers.logged('reconciler re-woke a stalled session');
      return lines.length > 0 && lines;
    });
    console.log(
      `redis restart, reconciler on: ${new Set(rewoken.map((l) => l.sessionId)).size} of ${sessions.length} ` +
        'sessions re-woken by the reconciler, all finished',
    );
    expect(rewoken.length).toBeGreaterThan(0);
    // Every re-wake was for a session of this test, at most once per session and fence.
    const keys = rewoken.map((l) => `${l.sessionId}/${l.fence}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const l of rewoken) expect(ids).toContain(l.sessionId);
    await invariantsHold(pool);
  }, 120_000);
});
