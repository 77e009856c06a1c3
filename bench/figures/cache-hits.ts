import { performance } from 'node:perf_hooks';
import {
  defaultSessionCache,
  defaultWorkerOptions,
  SessionCache,
  startWorkers,
  stopWorkers,
} from '@loopline/worker';
import type { Worker } from 'bullmq';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import { sleep } from '../lib/infra.ts';
import { forkChild } from '../lib/proc.ts';
import { log } from '../lib/result.ts';
import { benchSessions, benchTenant, sendAll, startService } from '../lib/service.ts';
import { fmt } from '../lib/stats.ts';

// Session cache hit rate with 1, 2 and 4 workers on one queue (in this process, each with its
// own cache, as separate processes would have): sessions looping through tool steps on the
// zero-latency mock, every step a BullMQ job any worker may take. A lookup is every loadContext
// (a step reads the log once or twice). A worker that last read a session several steps ago still
// hits: it reads the rows of those steps. So misses are first reads (each worker meets each session
// once) and moved boundaries. BENCH_NO_CACHE=1 runs the same without caches (step counts only).
// Run: node bench/figures/cache-hits.ts [--quick]

const args = figureArgs({ runs: 1, quickRuns: 1 });
const SESSIONS = 40;
const WINDOW_MS = args.quick ? 4_000 : 8_000;

const mock = forkChild('lib/mock-child.ts', [], { MOCK_RESET_EVERY_MS: '2000' });
const { url: mockUrl } = (await mock.ready) as { url: string };

const lines: string[] = [];
for (const workers of [1, 2, 4]) {
  const svc = await startService({ label: `hits${workers}`, mockUrl });
  const tenant = await benchTenant(svc.db, { maxSteps: 1000 });
  const ids = await benchSessions(svc.db, tenant, SESSIONS);
  const caches = Array.from({ length: workers }, () => new SessionCache(defaultSessionCache));
  const off = process.env.BENCH_NO_CACHE === '1';
  const running: Worker[][] = caches.map((sessionCache) =>
    startWorkers(
      { ...svc.workerDeps, sessionCache: off ? null : sessionCache },
      { ...defaultWorkerOptions, concurrency: { ...defaultWorkerOptions.concurrency, step: 16 } },
    ),
  );
  const t0 = performance.now();
  await sendAll(svc.url, tenant, ids, 'Run the bench chain.');
  await sleep(WINDOW_MS);
  for (const w of running) await stopWorkers(w);
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from steps where kind = 'step'`.execute(
    svc.db,
  );
  const hits = caches.reduce((s, c) => s + c.stats.hits, 0);
  const misses = caches.reduce((s, c) => s + Object.values(c.stats.misses).reduce((a, b) => a + b, 0), 0);
  const rate = hits / Math.max(1, hits + misses);
  const absent = caches.reduce((s, c) => s + c.stats.misses.absent, 0);
  log(
    `  ${workers} worker(s): ${rows[0]!.n} steps in ${fmt((performance.now() - t0) / 1000)} s, ${hits} hits / ${misses} misses`,
  );
  lines.push(
    `| ${workers} | ${rows[0]!.n} | ${hits} | ${misses} (${absent} first reads) | ${fmt(rate * 100)} % |`,
  );
  await svc.close();
}
await mock.stop();
process.stdout.write(
  [
    '| workers | steps | hits | misses | hit rate |',
    '| ---: | ---: | ---: | ---: | ---: |',
    ...lines,
    '',
  ].join('\n'),
);
process.exit(0);
