import os from 'node:os';
import path from 'node:path';
import { closeDb, createDb, type Db } from '@loopline/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultToolServer, startFaultToolServer } from '../support/fault-tools.ts';
import { installFenceAudit } from '../support/fence-audit.ts';
import { checkInvariants, type SessionExpectation } from '../support/invariants.ts';
import { WorkerPool } from '../support/procs.ts';
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Redis restarted (kill -9, then started again on the same port, empty: no persistence, as in
// CI) while sessions run, on a private redis-server — never the machine's shared Redis.
//
// A restart loses every BullMQ job, session lock and event stream. What Loopline guarantees
// today, and this test asserts:
//   - nothing is lost or doubled in PostgreSQL: the log, the fence and the idempotency keys live
//     there; a runner that was mid-step when Redis went away loses its lock (the renewal finds
//     the key gone), stops, and its writes stay fenced;
//   - the workers and the gateway reconnect by themselves;
//   - a client that retries its POST with the same Idempotency-Key (what the 503 "retry with the
//     same Idempotency-Key" answer asks for) gets its first response back (same message id,
//     nothing written) and the replay re-adds the session's wake job, which picks the session up
//     where the log says it is (closing an interrupted step, never re-running a tool).
// What it does not guarantee yet (it.todo below): a session whose job was lost stays queued or
// running until some client writes to it — nothing re-wakes it. That needs a reconciler.

let redis: PrivateRedis;
let stack: Stack;
let client: Client;
let admin: Db;
let tools: FaultToolServer;
let pool: WorkerPool;

beforeAll(async () => {
  redis = await startPrivateRedis();
  stack = await startStack({
    workers: false,
    redisUrl: redis.url,
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
  });
  // Connection errors while Redis is down are expected; keep them out of the test output.
  stack.deps.redis.on('error', () => undefined);
  for (const q of stack.deps.queues.all()) q.on('error', () => undefined);
  admin = createDb(stack.databaseUrl, { applicationName: 'fault-admin', max: 2 });
  await installFenceAudit(admin);
  tools = await startFaultToolServer();
  client = await stack.tenant();
  await client.tool('slow', {
    kind: 'webhook',
    description: 'a slow tool',
    inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
    url: `${tools.url}/slow`,
    timeoutMs: 10_000,
  });
  await client.agent('agent', { tools: ['slow'] });
  pool = new WorkerPool(
    {
      databaseUrl: stack.databaseUrl,
      redisUrl: redis.url,
      namespace: stack.namespace,
      llmUrl: stack.mock.url,
      lockMs: 2000,
      stalledMs: 1000,
    },
    path.join(os.tmpdir(), `loopline-faults-${stack.namespace}`),
  );
  pool.supervise = true;
  pool.start();
  pool.start();
}, 60_000);

afterAll(async () => {
  await pool?.killAll();
  await tools?.close();
  if (admin) await closeDb(admin);
  await stack?.close();
  await redis?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    await sleep(250);
  }
}

describe('Redis restarted while sessions run', () => {
  it('loses no message and doubles nothing; a client retry with the same Idempotency-Key resumes every session', async () => {
    const sessions: Array<SessionExpectation & { text: string; key: string }> = [];
    for (let i = 0; i < 12; i++) {
      const sessionId = await client.session('agent');
      const text = `[s${i}] ${i % 3 === 0 ? '[stream] tell me a story' : '[tool:slow] run the slow job'}`;
      sessions.push({ tenantId: client.tenantId, sessionId, accepted: [], text, key: `k-${i}` });
    }
    for (const s of sessions) {
      const res = await post(s.sessionId, s.text, s.key);
      expect(res.status).toBe(202);
      s.accepted.push(res.body.message.info.id);
    }
    // Restart Redis while tools run and streams flow.
    const deadline = Date.now() + 15_000;
    while (tools.inFlight().length < 3 && Date.now() < deadline) await sleep(50);
    expect(tools.inFlight().length).toBeGreaterThanOrEqual(3);
    await redis.kill();
    await sleep(1000);
    await redis.start();

    // On their own, sessions whose job or lock was lost do not move again.
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
      `redis restart: ${stuck.length} of ${sessions.length} sessions stuck 8 s after the restart ` +
        `without a client retry (statuses: ${statuses.map((r) => r.status).join(', ')})`,
    );

    // The client retries its POST with the same Idempotency-Key: same message, nothing written, woken again.
    for (const s of stuck) {
      const res = await post(s.sessionId, s.text, s.key);
      expect(res.status).toBe(202);
      expect(res.body.message.info.id).toBe(s.accepted[0]);
    }
    const settle = Date.now() + 40_000;
    let done = await atRest(ids);
    while ([...done.values()].some((v) => !v) && Date.now() < settle) {
      await sleep(250);
      done = await atRest(ids);
    }
    expect(sessions.filter((s) => !done.get(s.sessionId)).map((s) => s.sessionId)).toEqual([]);

    await pool.stopAll();
    expect(pool.crashes).toEqual([]);
    const report = await checkInvariants({
      db: admin,
      sessions,
      toolCalls: tools.calls,
      webhookTools: ['slow'],
      fenceAudit: true,
      allSessions: true,
      modelView: (s) => client.history(s.sessionId, 'model'),
    });
    expect(report.violations).toEqual([]);
  }, 120_000);

  it.todo(
    'a session left queued/running by a Redis restart is re-woken without any client retry ' +
      '(needs a reconciler: a repeatable job that re-adds the wake job of every session whose status is ' +
      'queued/running/compacting but that has no live lock and no pending job)',
  );
});
