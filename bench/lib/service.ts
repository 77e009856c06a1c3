import { randomUUID } from 'node:crypto';
import type { AgentConfigInput } from '@loopline/core';
import { type AgentInfo, createDb, type Db, getSession } from '@loopline/db';
import { buildApp } from '@loopline/gateway';
import { createTokenizer } from '@loopline/llm';
import { createQueues, type KeySpace, keySpace, type Queues } from '@loopline/queue';
import type { TestDatabase } from '@loopline/testkit';
import { makeAgent, makeSession, makeTenant } from '@loopline/testkit';
import { defaultWorkerOptions, startWorkers, stopWorkers, type WorkerDeps } from '@loopline/worker';
import type { Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { freshDatabase, namespace as newNamespace, redis as newRedis, purgeNamespace } from './infra.ts';

// Loopline in the bench process, built the way test/support/stack.ts builds it but with the
// production worker settings (lock TTL 15 s, lock retry 250 ms, pool of 20, step concurrency 16):
// a fresh database, a unique Redis namespace, the gateway listening on 127.0.0.1, and optionally
// in-process workers. The worker's PostgreSQL and Redis connections are named (application_name
// `bench-worker`, client name `bench-worker`) so that counters can tell its traffic apart.

export const WORKER_CONNECTION_NAME = 'bench-worker';

export interface Service {
  database: TestDatabase;
  /** The gateway's and the bench's own pool. */
  db: Db;
  namespace: string;
  keys: KeySpace;
  url: string;
  operatorToken: string;
  app: FastifyInstance;
  queues: Queues;
  workerDeps: WorkerDeps;
  startWorkers(concurrency?: number): void;
  stopWorkers(): Promise<void>;
  close(): Promise<void>;
}

/** Starts Loopline in the bench process (the file header). */
export async function startService(opts: { label: string; mockUrl: string }): Promise<Service> {
  const database = await freshDatabase(opts.label);
  const ns = newNamespace(opts.label);
  const keys = keySpace(ns);
  const gatewayRedis = newRedis();
  const queues = createQueues(gatewayRedis, keys);
  const tokenizer = createTokenizer('o200k_base');
  const operatorToken = randomUUID();
  const app = await buildApp({
    db: database.db,
    redis: gatewayRedis,
    queues,
    keys,
    tokenizer,
    operatorToken,
    logger: false,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  const workerRedis = newRedis(WORKER_CONNECTION_NAME);
  // DB_PREPARED_STATEMENTS as the worker process reads it (0 = off), for A/B runs.
  const workerDb = createDb(database.url, {
    max: 20,
    applicationName: WORKER_CONNECTION_NAME,
    ...(process.env.DB_PREPARED_STATEMENTS
      ? { preparedStatements: Number(process.env.DB_PREPARED_STATEMENTS) }
      : {}),
  });
  const workerDeps: WorkerDeps = {
    db: workerDb,
    redis: workerRedis,
    keys,
    queues: createQueues(workerRedis, keys),
    tokenizer,
    logger: pino({ level: process.env.BENCH_LOG_LEVEL ?? 'warn' }),
    llm: { apiKey: 'bench-key', baseURL: opts.mockUrl },
    flags: { disableAutocompact: false, disablePrune: false },
    lockTtlMs: 15_000,
    lockRetryMs: 250,
    maxProviderRetries: 8,
  };
  let workers: Worker[] = [];
  return {
    database,
    db: database.db,
    namespace: ns,
    keys,
    url,
    operatorToken,
    app,
    queues,
    workerDeps,
    startWorkers(concurrency = 16) {
      workers = startWorkers(workerDeps, {
        ...defaultWorkerOptions,
        concurrency: { ...defaultWorkerOptions.concurrency, step: concurrency },
      });
    },
    async stopWorkers() {
      await stopWorkers(workers);
      workers = [];
    },
    async close() {
      await stopWorkers(workers);
      await app.close();
      await queues.close();
      await workerDeps.queues.close();
      gatewayRedis.disconnect();
      workerRedis.disconnect();
      await workerDb.destroy();
      await database.drop();
      await purgeNamespace(ns);
    },
  };
}

export interface Tenant {
  tenantId: string;
  apiKey: string;
  agent: AgentInfo;
}

/** A tenant and an agent on the mock model, written directly (no HTTP). */
export async function benchTenant(db: Db, agent: Partial<AgentConfigInput> = {}): Promise<Tenant> {
  const { tenant, apiKey } = await makeTenant(db);
  const made = await makeAgent(db, tenant.id, { name: 'bench', model: 'compatible/mock', ...agent });
  return { tenantId: tenant.id, apiKey, agent: made };
}

/** Creates `count` sessions, `parallel` at a time; their ids. */
export async function benchSessions(db: Db, tenant: Tenant, count: number, parallel = 8): Promise<string[]> {
  const ids: string[] = [];
  let left = count;
  const lane = async () => {
    while (left > 0) {
      left--;
      ids.push((await makeSession(db, tenant.tenantId, { agent: tenant.agent })).id);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, lane));
  return ids;
}

/** POST /v1/sessions/:id/messages through the gateway (appends and wakes the session). */
export async function send(url: string, tenant: Tenant, sessionId: string, text: string): Promise<void> {
  const res = await fetch(`${url}/v1/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  if (res.status !== 202) throw new Error(`send: ${res.status} ${await res.text()}`);
  await res.arrayBuffer().catch(() => undefined);
}

/** Sends one message to each session, `parallel` requests at a time. */
export async function sendAll(
  url: string,
  tenant: Tenant,
  sessionIds: readonly string[],
  text: string,
  parallel = 16,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < sessionIds.length) await send(url, tenant, sessionIds[next++]!, text);
  };
  await Promise.all(Array.from({ length: parallel }, lane));
}

/** Polls the session row (every `everyMs`) until its status is idle or error. */
export async function waitIdle(
  db: Db,
  tenantId: string,
  sessionId: string,
  timeoutMs = 120_000,
  everyMs = 100,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = await getSession(db, tenantId, sessionId);
    if (s && (s.status === 'idle' || s.status === 'error')) return s;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`session ${sessionId} not idle after ${timeoutMs} ms`);
}
