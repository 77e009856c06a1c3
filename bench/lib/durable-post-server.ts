import { newId } from '@loopline/core';
import { createDb } from '@loopline/db';
import { JOBS, keySpace, PRIORITY } from '@loopline/queue';
import { type JobsOptions, Queue } from 'bullmq';
import Fastify from 'fastify';
import { sql } from 'kysely';
import { redis } from './infra.ts';
import { serveParent } from './proc.ts';

// The gateway's ceiling, the bare durable POST: a Fastify route with the same path and JSON body
// as POST /v1/sessions/:id/messages doing the same durable work as its common case (no
// Idempotency-Key: apps/gateway/src/lib/append.ts appendMessageAndWake), written by hand: ONE
// statement that locks the session row, takes the next seq, moves idle|error → queued, inserts the
// user message and its text part (as db appendUserMessageAndQueue), then the wake job added to the
// step queue with BullMQ (deterministic id, interactive priority, the step job options), and 202.
// No auth, no rate limit, no validation, no token count, no event publish, no logger.
// Env: BENCH_DB_URL, BENCH_NS (the gateway's namespace: the jobs land in the same queue),
// BENCH_TENANT. Forked by figures/gateway.ts; prints its port over IPC.

const env = process.env;
const tenantId = env.BENCH_TENANT!;
const keys = keySpace(env.BENCH_NS ?? 'bench-durable-post');
// The gateway's pool size (DB_POOL_MAX default).
const db = createDb(env.BENCH_DB_URL!, { max: 20, applicationName: 'bench-durable-post' });
const connection = redis();
const queue = new Queue(JOBS.step.queue, {
  connection,
  prefix: keys.queuePrefix,
  defaultJobOptions: JOBS.step.options as JobsOptions,
});

const app = Fastify({ logger: false });
app.post<{ Params: { id: string }; Body: { text: string } }>(
  '/v1/sessions/:id/messages',
  async (request, reply) => {
    const sessionId = request.params.id;
    const messageId = newId('msg');
    const partId = newId('prt');
    const base = { role: 'user', time: { created: Date.now() } };
    const part = { type: 'text', text: request.body.text };
    const { rows } = await sql<{ status: string; last_seq: number }>`
      with prev as (
        select status from sessions where id = ${sessionId} and tenant_id = ${tenantId} for update
      ), s as (
        update sessions s set
          last_seq = s.last_seq + 1,
          status = case when prev.status in ('idle', 'error') then 'queued' else s.status end,
          status_detail = case when prev.status in ('idle', 'error') then null else s.status_detail end,
          error = case when prev.status in ('idle', 'error') then null else s.error end,
          updated_at = case when prev.status in ('idle', 'error') then now() else s.updated_at end
        from prev
        where s.id = ${sessionId} and s.tenant_id = ${tenantId}
        returning s.*
      ), m as (
        insert into messages (id, tenant_id, session_id, seq, role, info)
        select ${messageId}, s.tenant_id, s.id, s.last_seq, 'user',
          ${JSON.stringify(base)}::jsonb || jsonb_build_object('agent', s.agent_name)
        from s
        returning id
      ), p as (
        insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
        select ${partId}, ${tenantId}, ${sessionId}, m.id, 'text', ${JSON.stringify(part)}::jsonb, 16
        from m
        returning id
      )
      select s.status, s.last_seq from s`.execute(db);
    const row = rows[0];
    if (!row) return reply.status(404).send({ error: 'not_found' });
    await queue.add(
      'step',
      { tenantId, sessionId, reason: 'message' },
      { jobId: `wake-${sessionId}-${messageId}`, priority: PRIORITY.interactive },
    );
    return reply.status(202).send({
      message: { info: { id: messageId, sessionId, seq: Number(row.last_seq), ...base }, parts: [part] },
      session: { id: sessionId, status: row.status },
    });
  },
);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.once('SIGTERM', () => {
  void app.close().then(async () => {
    await queue.close();
    connection.disconnect();
    await db.destroy();
    process.exit(0);
  });
});
serveParent({ port: typeof address === 'object' && address ? address.port : 0 }, () => undefined);
