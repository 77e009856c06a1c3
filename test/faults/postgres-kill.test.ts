import { spawnSync } from 'node:child_process';
import type { Db } from '@loopline/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPgClientCrash } from '../support/chaos.ts';
import { type FaultStack, startFaultStack } from '../support/fault-stack.ts';
import type { FaultToolServer } from '../support/fault-tools.ts';
import { checkInvariants, type SessionExpectation } from '../support/invariants.ts';
import { type Crash, WORKER_APP_PREFIX, type WorkerPool } from '../support/procs.ts';
import type { Client, Stack } from '../support/stack.ts';
import { sleep, until } from '../support/wait.ts';

// PostgreSQL connections killed (pg_terminate_backend) over and over while sessions run. A job
// whose query dies fails and BullMQ retries it; the pool opens new connections; the retried step
// re-derives its work from the log, so every session still finishes with nothing lost or doubled.
//
// Two bugs it found, both fixed: node-postgres emits 'error' on a checked-out client between two
// statements of a transaction, which killed the process until createDb gave every client a
// permanent listener (packages/db/src/client.ts); and a worker restarted mid-storm died in its
// boot migration until boot used migrateWhenReady (packages/db/test/migrate.test.ts). The harness
// still restarts a crashed worker, as a process supervisor would.

let fault: FaultStack;
let stack: Stack;
let client: Client;
let admin: Db;
let tools: FaultToolServer;
let pool: WorkerPool;
let crashes: Crash[] = [];
let terminated = 0;

beforeAll(async () => {
  fault = await startFaultStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: '[tool:slow]', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 700 } }] },
        },
        {
          when: { lastUserIncludes: '[stream]', lastMessageRole: 'user' },
          reply: { text: 'a streamed answer '.repeat(20), chunks: 40 },
          latencyMs: 40,
        },
      ],
    },
    fenceAudit: true,
    workers: { lockMs: 2000, stalledMs: 1000, supervise: true, start: 2 },
  });
  ({ stack, client, admin, tools, pool } = fault);
}, 60_000);

afterAll(() => fault?.close());

describe('PostgreSQL connections terminated while sessions run', () => {
  it('every session still finishes, every invariant holds', async () => {
    const sessions: SessionExpectation[] = [];
    for (let i = 0; i < 10; i++) {
      const sessionId = await client.session('agent');
      const text = `[s${i}] ${i % 2 ? '[stream] tell me' : '[tool:slow] run it'} (turn 1)`;
      const res = await client.send(sessionId, text, { 'idempotency-key': `k-${i}` });
      sessions.push({ tenantId: client.tenantId, sessionId, accepted: [res.message.info.id] });
    }
    // A storm: every worker connection to the test database, every 400 ms, for 6 s from the
    // first worker connection (a loaded machine may take seconds to boot the workers).
    await until(
      'a worker connected to PostgreSQL',
      async () => {
        const { rows } = await sql<{ n: string }>`
          select count(*) as n from pg_stat_activity
          where datname = current_database() and application_name like ${`${WORKER_APP_PREFIX}%`}`.execute(
          admin,
        );
        return Number(rows[0]?.n ?? 0) > 0;
      },
      60_000,
    );
    const stormEnd = Date.now() + 6000;
    while (Date.now() < stormEnd) {
      const { rows } = await sql<{ n: string }>`
        select count(pg_terminate_backend(pid)) as n from pg_stat_activity
        where datname = current_database() and application_name like ${`${WORKER_APP_PREFIX}%`}`.execute(
        admin,
      );
      terminated += Number(rows[0]?.n ?? 0);
      await sleep(400); // the storm's pace
    }
    // A second turn for every session, after the storm.
    for (const [i, s] of sessions.entries()) {
      await client.waitIdle(s.sessionId, 60_000);
      const res = await client.send(s.sessionId, `[s${i}] [tool:slow] again (turn 2)`, {
        'idempotency-key': `k2-${i}`,
      });
      s.accepted.push(res.message.info.id);
    }
    for (const s of sessions) expect((await client.waitIdle(s.sessionId, 60_000)).status).toBe('idle');
    await pool.stopAll();
    crashes = [...pool.crashes];
    console.log(
      `pg_terminate_backend: ${terminated} worker backends terminated, ${crashes.length} worker crashes ` +
        `(${crashes.filter(isPgClientCrash).length} unhandled pg client errors)`,
    );
    expect(terminated).toBeGreaterThan(0);
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

  // The fixes at the top of this file: createDb listens for errors of checked-out clients; boot
  // waits for PostgreSQL instead of exiting.
  it('no worker process crashes when its connections are terminated', () => {
    expect(crashes).toEqual([]);
  });

  // Deterministic: a transaction's backend terminated between two statements.
  it('a process survives its in-transaction connection being terminated (createDb)', () => {
    const script = `
      import { createDb } from '@loopline/db';
      import { sql } from 'kysely';
      const db = createDb(process.env.U, { max: 2, onError: () => undefined });
      const admin = createDb(process.env.U, { max: 1 });
      try {
        await db.transaction().execute(async (trx) => {
          const { rows } = await sql\`select pg_backend_pid() as pid\`.execute(trx);
          await sql\`select pg_terminate_backend(\${rows[0].pid})\`.execute(admin);
          await new Promise((r) => setTimeout(r, 300)); // on purpose: the termination lands first
          await sql\`select 1\`.execute(trx);
        });
      } catch {}
      await sql\`select 1\`.execute(db);
      console.log('survived');
      process.exit(0);`;
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../', import.meta.url).pathname,
      env: { ...process.env, U: stack.databaseUrl },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(res.stderr).not.toContain("Unhandled 'error' event");
    expect(res.stdout).toContain('survived');
  });
});
