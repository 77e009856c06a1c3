import { performance } from 'node:perf_hooks';
import { filterCompacted } from '@loopline/core';
import { getSession, loadHistory } from '@loopline/db';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import { freshDatabase } from '../lib/infra.ts';
import { emit, log, ratioOf } from '../lib/result.ts';
import { seedHistory } from '../lib/seed.ts';
import { benchSessions, benchTenant } from '../lib/service.ts';
import { fmt, percentile, summarize } from '../lib/stats.ts';

// History load with a recent boundary: what every step does first (session row, log from the
// boundary pointer, filterCompacted), for a session of 100,000 messages and one of 100, both
// with a completed compaction boundary 60 messages from the end (so both load 60 messages).
// Interleaved, many iterations per run; ratio = p50 at 100,000 / p50 at 100.

const args = figureArgs({ runs: 3, quickRuns: 2 });
const ITERATIONS = args.quick ? 150 : 300;
const RECENT = 60;
const started = performance.now();

const database = await freshDatabase('history');
const { db } = database;
const tenant = await benchTenant(db);
const [large, small] = await benchSessions(db, tenant, 2);
log('history: seeding 100,000 messages …');
const seedStart = performance.now();
await seedHistory(db, { tenantId: tenant.tenantId, sessionId: small!, messages: 100, recent: RECENT });
await seedHistory(db, { tenantId: tenant.tenantId, sessionId: large!, messages: 100_000, recent: RECENT });
await sql`analyze messages`.execute(db);
await sql`analyze parts`.execute(db);
const seedMs = performance.now() - seedStart;
const { rows: sizes } = await sql<{ messages: number; parts: number }>`
  select (select count(*)::int from messages) as messages, (select count(*)::int from parts) as parts`.execute(
  db,
);

async function load(sessionId: string): Promise<{ ms: number; loaded: number; visible: number }> {
  const t0 = performance.now();
  const session = await getSession(db, tenant.tenantId, sessionId);
  const history = await loadHistory(db, tenant.tenantId, sessionId, { fromSeq: session!.boundarySeq });
  const visible = filterCompacted(history);
  return { ms: performance.now() - t0, loaded: history.length, visible: visible.length };
}

for (let i = 0; i < 50; i++) {
  await load(large!);
  await load(small!);
}
const check = [await load(large!), await load(small!)];
log(`  seeded in ${fmt(seedMs / 1000)} s; loaded ${check[0]!.loaded} / ${check[1]!.loaded} messages`);

const runs: Array<{ large: number[]; small: number[] }> = [];
for (let r = 0; r < args.runs; r++) {
  const run = { large: [] as number[], small: [] as number[] };
  for (let i = 0; i < ITERATIONS; i++) {
    run.large.push((await load(large!)).ms);
    run.small.push((await load(small!)).ms);
  }
  runs.push(run);
  log(
    `  run ${r + 1}: 100,000 messages p50 ${fmt(percentile(run.large, 50))} ms, 100 messages p50 ` +
      `${fmt(percentile(run.small, 50))} ms`,
  );
}
await database.drop();

const l50 = runs.map((r) => percentile(r.large, 50));
const s50 = runs.map((r) => percentile(r.small, 50));
emit({
  name: 'history',
  title: 'History load with a recent boundary',
  rows: [
    {
      figure: 'history load, 100,000 messages, recent boundary (p50)',
      unit: 'ms',
      loopline: summarize(l50),
      ceilingLabel: 'same at 100 messages',
      ceiling: summarize(s50),
      ratio: ratioOf(l50, s50),
      target: '≤ 1.5×',
      met: ratioOf(l50, s50).median <= 1.5,
    },
  ],
  details: [
    `Two sessions in one database (${sizes[0]!.messages.toLocaleString('en-US')} messages, ` +
      `${sizes[0]!.parts.toLocaleString('en-US')} parts in all, seeded in ${fmt(seedMs / 1000)} s, then ANALYZE): ` +
      `each has a completed compaction boundary ${RECENT} messages from its end and boundary_seq pointing at it, ` +
      `so both load ${check[0]!.loaded} messages (${check[0]!.visible} visible after filterCompacted). ` +
      `Measured: getSession + loadHistory(fromSeq = boundary_seq) + filterCompacted, ${ITERATIONS} iterations ` +
      'per session per run, interleaved, after 50 warm-up loads.',
    '',
    '| run | 100,000 messages p50 / p99 | 100 messages p50 / p99 |',
    '| ---: | ---: | ---: |',
    ...runs.map(
      (r, i) =>
        `| ${i + 1} | ${fmt(l50[i]!)} / ${fmt(percentile(r.large, 99))} ms | ${fmt(s50[i]!)} / ${fmt(percentile(r.small, 99))} ms |`,
    ),
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
