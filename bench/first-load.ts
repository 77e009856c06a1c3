import { performance } from 'node:perf_hooks';
import { acquireFenceWithSnapshot } from '@loopline/db';
import { createTokenizer } from '@loopline/llm';
import { loadContext, SessionCache, type WorkerDeps } from '@loopline/worker';
import { sql } from 'kysely';
import { freshDatabase } from './lib/infra.ts';
import { seedHistory } from './lib/seed.ts';
import { benchSessions, benchTenant } from './lib/service.ts';
import { fmt, percentile } from './lib/stats.ts';

// CPU of a session's first step on a worker before it decides, by history length: the fence
// statement that also reads the whole log since the boundary (db acquireFenceWithSnapshot: the
// statement, its transfer and JSON.parse, the rows mapped to messages), then the session cache's
// new entry and the context (filterCompacted, loop facts, the request shape, the estimate). This
// is the load the history-scaling figure spreads over a first turn's steps. CPU of this process
// (user + system) per load, p50 over the iterations, each with an empty cache. A log above the
// fence statement's size cap (10,000 messages here) is read by the cache on its own, counted in
// the second column.
//   node bench/first-load.ts [iterations=40] [lengths=100,1000,10000]

const ITERATIONS = Number(process.argv[2] ?? 40);
const LENGTHS = (process.argv[3] ?? '100,1000,10000').split(',').map(Number);

const database = await freshDatabase('first-load');
const { db } = database;
const tenant = await benchTenant(db, { limits: { context: 10_000_000, output: 4_096 } });
const sessions = await benchSessions(db, tenant, LENGTHS.length);
for (const [i, n] of LENGTHS.entries())
  await seedHistory(db, { tenantId: tenant.tenantId, sessionId: sessions[i]!, messages: n + 2, recent: n });
await sql`analyze messages`.execute(db);
await sql`analyze parts`.execute(db);
const tokenizer = createTokenizer('o200k_base');

const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;

async function measure(sessionId: string, iterations: number) {
  const fence: number[] = [];
  const context: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < iterations + 3; i++) {
    const deps = {
      db,
      tokenizer,
      sessionCache: new SessionCache({ maxEntries: 10, maxBytes: 1024 * 1024 * 1024 }),
    } as unknown as WorkerDeps;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const taken = await acquireFenceWithSnapshot(db, tenant.tenantId, sessionId);
    const c1 = process.cpuUsage();
    if (!taken) throw new Error('fence not taken');
    // A log above the statement's size cap comes without it: the cache then reads it on its own.
    const { session, snapshot } = taken;
    const prefetched = snapshot ? { fromSeq: session.boundarySeq, snapshot } : undefined;
    const ctx = await loadContext(deps, tenant.tenantId, sessionId, session, prefetched);
    const c2 = process.cpuUsage();
    if (!ctx) throw new Error('no context');
    if (i < 3) continue; // warm-up
    wall.push(performance.now() - t0);
    fence.push(cpuMs(process.cpuUsage(c0)) - cpuMs(process.cpuUsage(c1)));
    context.push(cpuMs(process.cpuUsage(c1)) - cpuMs(process.cpuUsage(c2)));
  }
  return { fence: percentile(fence, 50), context: percentile(context, 50), wall: percentile(wall, 50) };
}

const rows: string[] = [];
for (const [i, n] of LENGTHS.entries()) {
  const r = await measure(sessions[i]!, n >= 10_000 ? Math.ceil(ITERATIONS / 4) : ITERATIONS);
  rows.push(
    `| ${n.toLocaleString('en-US')} | ${fmt(r.fence)} | ${fmt(r.context)} | ${fmt(r.fence + r.context)} | ${fmt(r.wall)} |`,
  );
}
await database.drop();
process.stdout.write(
  [
    '| messages since the boundary | fence + log statement CPU (ms) | cache entry + context CPU (ms) | total CPU (ms) | wall (ms) |',
    '| ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n'),
);
process.exit(0);
