import { createDb } from '@loopline/db';
import { createQueues, keySpace } from '@loopline/queue';
import { Redis } from 'ioredis';
import { buildApp } from '../../apps/gateway/src/app.ts';
import { counts, installCounters, resetCounts, topShapes } from './counters.ts';
import { freshDatabase, namespace, purgeNamespace, REDIS_URL } from './infra.ts';
import { benchSessions, benchTenant } from './service.ts';

// Statements and Redis commands per POST …/messages: the gateway app in this process (inject, no
// socket), its connections named so the counters see only its traffic. `node bench/lib/gateway-counts.ts`.

const NAME = 'bench-gateway';
const N = 200;
const database = await freshDatabase('gwcount');
const ns = namespace('gwcount');
const db = createDb(database.url, { applicationName: NAME });
const redis = new Redis(REDIS_URL, { connectionName: NAME, maxRetriesPerRequest: 3 });
const keys = keySpace(ns);
const queues = createQueues(redis, keys);
process.env.LOOPLINE_RATE_LIMIT_PER_MINUTE = String(1_000_000_000);
const app = await buildApp({ db, redis, queues, keys, operatorToken: 'op', logger: false });
await app.ready();
const tenant = await benchTenant(database.db);
const sessions = await benchSessions(database.db, tenant, 20);
const post = (i: number) =>
  app.inject({
    method: 'POST',
    url: `/v1/sessions/${sessions[i % sessions.length]}/messages`,
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    payload: { text: 'What is the weather in Paris today, and should I take an umbrella?' },
  });
installCounters(NAME);
for (let i = 0; i < 20; i++) await post(i); // warm-up: first wake-ups (idle → queued), caches
resetCounts();
for (let i = 0; i < N; i++) {
  const res = await post(i);
  if (res.statusCode !== 202) throw new Error(`${res.statusCode} ${res.body}`);
}
const c = counts();
console.log(
  `per POST: ${(c.queries / N).toFixed(2)} statements, ${(c.commands / N).toFixed(2)} Redis commands`,
);
for (const [k, v] of topShapes(c.sql, N, 20)) console.log(`${v.toFixed(2)}  ${k}`);
for (const [k, v] of topShapes(c.redis, N, 20)) console.log(`${v.toFixed(2)}  ${k}`);
await app.close();
await queues.close();
await purgeNamespace(ns).catch(() => undefined);
redis.disconnect();
await db.destroy();
await database.drop();
