import { randomUUID } from 'node:crypto';
import type { Db } from '@loopline/db';
import { createQueues, type KeySpace, keySpace, type Queues } from '@loopline/queue';
import { createTestDatabase, redisUrl, type TestDatabase } from '@loopline/testkit';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { buildApp } from '../src/app.ts';
import type { GatewayDeps } from '../src/deps.ts';

// One gateway per test file: its own database (cloned from the migrated template), its own Redis
// key namespace (keySpace(`test-<uuid>`)), real Redis and PostgreSQL, requests through inject().

export const OPERATOR = 'operator-secret-for-tests';

export interface Stack {
  app: FastifyInstance;
  db: Db;
  redis: Redis;
  queues: Queues;
  keys: KeySpace;
  namespace: string;
  close(): Promise<void>;
}

/** A gateway app on its own database and Redis namespace. */
export async function startStack(label: string, overrides: Partial<GatewayDeps> = {}): Promise<Stack> {
  const database: TestDatabase = await createTestDatabase(`gw_${label}`);
  const redis = new Redis(redisUrl(), { maxRetriesPerRequest: 3 });
  const namespace = `test-${randomUUID()}`;
  const keys = keySpace(namespace);
  const queues = createQueues(redis, keys);
  const app = await buildApp({
    db: database.db,
    redis,
    queues,
    keys,
    operatorToken: OPERATOR,
    logger: false,
    ...overrides,
  });
  await app.ready();
  return {
    app,
    db: database.db,
    redis,
    queues,
    keys,
    namespace,
    async close() {
      await app.close();
      await queues.close();
      await deleteNamespace(redis, namespace);
      redis.disconnect();
      await database.drop();
    },
  };
}

async function deleteNamespace(redis: Redis, namespace: string): Promise<void> {
  for (const pattern of [`${namespace}:*`, `{${namespace}}:*`]) {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (found.length > 0) await redis.del(...found);
    } while (cursor !== '0');
  }
}

/** The Authorization header of a token. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Creates a tenant through the admin API: the tenant, its API key and key id. */
export async function createTenant(app: FastifyInstance, name = 'acme') {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/admin/tenants',
    headers: bearer(OPERATOR),
    payload: { name },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as {
    tenant: { id: string; name: string; createdAt: string };
    apiKey: string;
    keyId: string;
  };
}

/** A tenant with an agent (and a session) made through the API. */
export async function tenantWithSession(
  app: FastifyInstance,
  name = 'acme',
  agent: Record<string, unknown> = {},
) {
  const tenant = await createTenant(app, name);
  const auth = bearer(tenant.apiKey);
  const put = await app.inject({
    method: 'PUT',
    url: '/v1/agents/helper',
    headers: auth,
    payload: { model: 'compatible/mock', ...agent },
  });
  expect(put.statusCode, put.body).toBe(201);
  const created = await app.inject({
    method: 'POST',
    url: '/v1/sessions',
    headers: auth,
    payload: { agent: 'helper' },
  });
  expect(created.statusCode, created.body).toBe(201);
  return { ...tenant, auth, sessionId: (created.json() as { id: string }).id };
}

const TABLES = [
  'tenants',
  'api_keys',
  'agents',
  'tools',
  'sessions',
  'messages',
  'parts',
  'idempotency_keys',
  'batches',
  'batch_items',
] as const;
export type RowCounts = Record<(typeof TABLES)[number], number>;

/** Row counts of every table (to assert that a refused request wrote nothing). */
export async function rowCounts(db: Db): Promise<RowCounts> {
  const out = {} as RowCounts;
  for (const table of TABLES) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

/** Every job of the step queue, in any state. */
export async function stepJobs(queues: Queues) {
  return queues.step.getJobs([
    'waiting',
    'prioritized',
    'delayed',
    'active',
    'completed',
    'failed',
    'waiting-children',
  ]);
}

/** Asserts the status and the `{ error: { code, message } }` body of a refusal. */
export function expectProblem(res: LightMyRequestResponse, status: number, code?: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json() as { error: { code: string; message: string; details?: unknown } };
  expect(typeof body.error.code).toBe('string');
  expect(typeof body.error.message).toBe('string');
  expect(Object.keys(body).sort()).toEqual(['error']);
  if (code) expect(body.error.code).toBe(code);
  return body.error;
}
