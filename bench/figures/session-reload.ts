import { performance } from 'node:perf_hooks';
import { newId } from '@loopline/core';
import { appendUserMessage, createAssistantMessage, getSession, insertParts } from '@loopline/db';
import { createTokenizer } from '@loopline/llm';
import { loadContext, SessionCache, type WorkerDeps } from '@loopline/worker';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import { freshDatabase } from '../lib/infra.ts';
import { log } from '../lib/result.ts';
import { seedHistory } from '../lib/seed.ts';
import { benchSessions, benchTenant } from '../lib/service.ts';
import { fmt, percentile } from '../lib/stats.ts';

// What a step spends before deciding, by history length: loadContext (session log since the
// boundary, filterCompacted, request shape, next-prompt estimate) at 100 / 1,000 / 10,000
// messages since the boundary, without the session cache (every step loads the whole log) and
// with it (every step reads what the previous step wrote: a user message and an assistant reply
// of four parts). CPU of this process (user + system) and wall time per step, p50 over the
// iterations; the writes between steps are not measured. Run: node bench/figures/session-reload.ts

const args = figureArgs({ runs: 1, quickRuns: 1 });
const SIZES = [100, 1_000, 10_000];
const ITERATIONS = args.quick ? 30 : 100;

const database = await freshDatabase('reload');
const { db } = database;
const tenant = await benchTenant(db);
const sessions = await benchSessions(db, tenant, SIZES.length * 2);
for (const [i, n] of SIZES.entries()) {
  for (const sid of [sessions[2 * i]!, sessions[2 * i + 1]!])
    await seedHistory(db, { tenantId: tenant.tenantId, sessionId: sid, messages: n + 2, recent: n + 2 });
}
await sql`analyze messages`.execute(db);
await sql`analyze parts`.execute(db);

const tokenizer = createTokenizer('o200k_base');
const cold = { db, tokenizer, sessionCache: null } as unknown as WorkerDeps;
const cached = {
  db,
  tokenizer,
  sessionCache: new SessionCache({ maxEntries: 100, maxBytes: 1024 * 1024 * 1024 }),
} as unknown as WorkerDeps;

/** What a step writes: a user message and an assistant reply with step-start, text, tool, step-finish. */
async function oneStep(sessionId: string, n: number): Promise<void> {
  const user = await appendUserMessage(db, {
    tenantId: tenant.tenantId,
    sessionId,
    agent: 'bench',
    parts: [{ type: 'text', text: `request ${n}`, tokens: 3 }],
  });
  await db.transaction().execute(async (trx) => {
    const m = await createAssistantMessage(trx, {
      tenantId: tenant.tenantId,
      sessionId,
      parentId: user.info.id,
      model: 'compatible/mock',
      agent: 'bench',
      step: n,
    });
    const base = { sessionId, messageId: m.id };
    await insertParts(trx, tenant.tenantId, [
      { ...base, id: newId('prt'), type: 'step-start', tokens: 0 },
      { ...base, id: newId('prt'), type: 'text', text: 'looking', tokens: 2 },
      {
        ...base,
        id: newId('prt'),
        type: 'tool',
        callId: `c${n}`,
        tool: 'read_output',
        state: {
          status: 'completed',
          input: { id: 'x' },
          output: 'line\n'.repeat(200),
          title: '',
          metadata: {},
          time: { start: 1, end: 2 },
        },
        tokens: 250,
        outputTokens: 240,
      },
      {
        ...base,
        id: newId('prt'),
        type: 'step-finish',
        reason: 'tool-calls',
        usage: { input: 1000, output: 50, reasoning: 0, cache: { read: 0, write: 0 }, total: 1050 },
        tokens: 0,
      },
    ]);
  });
}

async function measure(deps: WorkerDeps, sessionId: string) {
  const cpu: number[] = [];
  const wall: number[] = [];
  let loaded = 0;
  for (let i = 0; i < ITERATIONS + 5; i++) {
    await oneStep(sessionId, i);
    const session = await getSession(db, tenant.tenantId, sessionId);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const ctx = await loadContext(deps, tenant.tenantId, sessionId, session);
    const t1 = performance.now();
    const c = process.cpuUsage(c0);
    loaded = ctx!.history.length;
    if (i < 5) continue; // warm-up (the first cached read is the cold load)
    cpu.push((c.user + c.system) / 1000);
    wall.push(t1 - t0);
  }
  return { cpu: percentile(cpu, 50), wall: percentile(wall, 50), cpu99: percentile(cpu, 99), loaded };
}

const rows: string[] = [];
for (const [i, n] of SIZES.entries()) {
  const before = await measure(cold, sessions[2 * i]!);
  const after = await measure(cached, sessions[2 * i + 1]!);
  log(
    `  ${n} messages: without cache CPU ${fmt(before.cpu)} ms (wall ${fmt(before.wall)}), ` +
      `with cache CPU ${fmt(after.cpu)} ms (wall ${fmt(after.wall)})`,
  );
  rows.push(
    `| ${n.toLocaleString('en-US')} | ${fmt(before.cpu)} / ${fmt(before.cpu99)} | ${fmt(before.wall)} | ${fmt(after.cpu)} / ${fmt(after.cpu99)} | ${fmt(after.wall)} | ${fmt(before.cpu / after.cpu)}× |`,
  );
}
const stats = (cached.sessionCache as SessionCache).stats;
await database.drop();
process.stdout.write(
  [
    '| messages since the boundary | CPU p50 / p99 without cache (ms) | wall p50 | CPU p50 / p99 with cache (ms) | wall p50 | CPU saved |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    `cache: ${stats.hits} hits, misses ${JSON.stringify(stats.misses)}, ${stats.entries} entries, ${fmt(stats.bytes / 1024 / 1024)} MiB`,
    '',
  ].join('\n'),
);
process.exit(0);
