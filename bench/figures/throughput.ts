import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import { chainRows, createChainTable } from '../lib/bare-chain.ts';
import { freshDatabase, namespace, purgeNamespace, REDIS_URL, rssOf, sleep } from '../lib/infra.ts';
import { forkChild, OUT_DIR, spawnNode, stopProcess } from '../lib/proc.ts';
import { emit, log, type Row, ratioOf } from '../lib/result.ts';
import { benchSessions, benchTenant, sendAll, startService } from '../lib/service.ts';
import { fmt, median, summarize } from '../lib/stats.ts';

// Steps per second with 100 and with 1,000 concurrent sessions, and the worker's memory.
// The worker is the real worker process (apps/worker/src/main.ts, step concurrency 16, pool 20),
// the mock model another process, the gateway (used to wake the sessions) stays in this one.
// Every session loops until its 1,000th step, so all of them stay busy through the window.
// Steps are counted from the steps ledger at the start and end of the window.
// Ceiling: 100 bare chains (Redis lock + one PostgreSQL row + next job) in a child process with
// the same BullMQ concurrency. Memory: the worker's RSS, sampled every 250 ms, and its peak (VmHWM).

const args = figureArgs({ runs: 3, quickRuns: 1 });
const WARMUP_MS = args.quick ? 2_000 : 3_000;
const WINDOW_MS = args.quick ? 5_000 : 8_000;
const CONCURRENCY = 16;
// The worker as deployed (infra/compose.yaml, docs/DEPLOYMENT.md): young generation capped at 8 MiB.
// BENCH_WORKER_NODE_ARGS='' measures V8's default (16 MiB semi-spaces) instead.
const WORKER_NODE_ARGS = (process.env.BENCH_WORKER_NODE_ARGS ?? '--max-semi-space-size=8')
  .split(' ')
  .filter((a) => a !== '');
const started = performance.now();

const mock = forkChild('lib/mock-child.ts', [], { MOCK_RESET_EVERY_MS: '2000' });
const { url: mockUrl } = (await mock.ready) as { url: string };

interface LoopRun {
  stepsPerSecond: number;
  peakRss: number;
  windowRss: number;
  ready: number;
}

async function loopRun(sessions: number, concurrency = CONCURRENCY): Promise<LoopRun> {
  const svc = await startService({ label: `tput${sessions}`, mockUrl });
  const t0 = performance.now();
  const tenant = await benchTenant(svc.db, { maxSteps: 1000 });
  const ids = await benchSessions(svc.db, tenant, sessions);
  await sendAll(svc.url, tenant, ids, 'Run the bench chain.');
  const ready = performance.now() - t0;
  const worker = spawnNode(
    'apps/worker/src/main.ts',
    {
      DATABASE_URL: svc.database.url,
      REDIS_URL,
      LOOPLINE_NAMESPACE: svc.namespace,
      OPENAI_BASE_URL: mockUrl,
      OPENAI_API_KEY: 'bench-key',
      WORKER_STEP_CONCURRENCY: String(concurrency),
      LOG_LEVEL: 'warn',
      // A title is one extra model call per new session, not part of the loop being measured.
      LOOPLINE_DISABLE_TITLES: '1',
      // e.g. BENCH_WORKER_NODE_OPTIONS=--max-semi-space-size=4 to try V8 heap settings.
      ...(process.env.BENCH_WORKER_NODE_OPTIONS
        ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS }
        : {}),
    },
    { log: `worker-${sessions}-c${concurrency}`, nodeArgs: WORKER_NODE_ARGS },
  );
  const samples: Array<{ at: number; rss: number }> = [];
  const sampler = setInterval(() => {
    const m = worker.pid ? rssOf(worker.pid) : undefined;
    if (m) samples.push({ at: performance.now(), rss: m.rss });
  }, 250);
  const count = async () => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from steps where kind = 'step'`.execute(svc.db);
    return rows[0]?.n ?? 0;
  };
  try {
    const deadline = Date.now() + 60_000;
    while ((await count()) === 0) {
      if (Date.now() > deadline || worker.exitCode !== null)
        throw new Error('the worker made no step (see bench/out/logs)');
      await sleep(100);
    }
    await sleep(WARMUP_MS);
    const c0 = await count();
    const w0 = performance.now();
    await sleep(WINDOW_MS);
    const c1 = await count();
    const w1 = performance.now();
    const peak = worker.pid ? (rssOf(worker.pid)?.peak ?? Number.NaN) : Number.NaN;
    const inWindow = samples.filter((s) => s.at >= w0).map((s) => s.rss);
    return {
      stepsPerSecond: ((c1 - c0) * 1000) / (w1 - w0),
      peakRss: peak,
      windowRss: Math.max(...inWindow),
      ready,
    };
  } finally {
    clearInterval(sampler);
    await stopProcess(worker, 5_000);
    await svc.close();
  }
}

async function ceilingRun(chains: number): Promise<number> {
  const database = await freshDatabase('chain');
  const ns = namespace('chain');
  await createChainTable(database.db);
  const child = forkChild('lib/bare-chain.ts', [], {
    BENCH_DB_URL: database.url,
    BENCH_NS: ns,
    BENCH_CHAINS: String(chains),
    BENCH_CONCURRENCY: String(CONCURRENCY),
  });
  try {
    await child.ready;
    await sleep(WARMUP_MS);
    const c0 = await chainRows(database.db);
    const w0 = performance.now();
    await sleep(WINDOW_MS);
    const c1 = await chainRows(database.db);
    return ((c1 - c0) * 1000) / (performance.now() - w0);
  } finally {
    await stopProcess(child.child, 5_000);
    await database.drop();
    await purgeNamespace(ns);
  }
}

/** The worker's RSS once started, with nothing to do: the floor under the memory figure. */
async function idleRss(): Promise<number> {
  const svc = await startService({ label: 'idle', mockUrl });
  const worker = spawnNode(
    'apps/worker/src/main.ts',
    {
      DATABASE_URL: svc.database.url,
      REDIS_URL,
      LOOPLINE_NAMESPACE: svc.namespace,
      OPENAI_BASE_URL: mockUrl,
      OPENAI_API_KEY: 'bench-key',
      LOG_LEVEL: 'info',
    },
    { log: 'worker-idle', nodeArgs: WORKER_NODE_ARGS },
  );
  try {
    const file = path.join(OUT_DIR, 'logs', 'worker-idle.log');
    for (let i = 0; !readFileSync(file, 'utf8').includes('worker started'); i++) {
      if (i > 300 || worker.exitCode !== null) throw new Error('the idle worker did not start');
      await sleep(100);
    }
    await sleep(3_000);
    return worker.pid ? (rssOf(worker.pid)?.rss ?? Number.NaN) : Number.NaN;
  } finally {
    await stopProcess(worker, 5_000);
    await svc.close();
  }
}

const idle = await idleRss();
log(`  idle worker RSS ${fmt(idle)} MiB`);
const at100: LoopRun[] = [];
const at1000: LoopRun[] = [];
const ceiling: number[] = [];
log(
  `throughput: ${args.runs} runs, warm-up ${WARMUP_MS} ms, window ${WINDOW_MS} ms, step concurrency ${CONCURRENCY}`,
);
for (let r = 0; r < args.runs; r++) {
  ceiling.push(await ceilingRun(100));
  at100.push(await loopRun(100));
  at1000.push(await loopRun(1000));
  log(
    `  run ${r + 1}: ceiling ${fmt(ceiling[r]!)} steps/s; 100 sessions ${fmt(at100[r]!.stepsPerSecond)} steps/s ` +
      `(RSS peak ${fmt(at100[r]!.peakRss)} MiB); 1,000 sessions ${fmt(at1000[r]!.stepsPerSecond)} steps/s ` +
      `(RSS peak ${fmt(at1000[r]!.peakRss)} MiB)`,
  );
}
let inflight: LoopRun | undefined;
if (!args.quick) {
  inflight = await loopRun(1000, 1000);
  log(
    `  1,000 sessions all in flight: ${fmt(inflight.stepsPerSecond)} steps/s, RSS peak ${fmt(inflight.peakRss)} MiB`,
  );
}
await mock.stop();

const s100 = at100.map((r) => r.stepsPerSecond);
const s1000 = at1000.map((r) => r.stepsPerSecond);
const rows: Row[] = [
  {
    figure: 'steps/s, 100 concurrent sessions',
    unit: 'steps/s',
    loopline: summarize(s100),
    ceilingLabel: '100 bare chains',
    ceiling: summarize(ceiling),
    ratio: ratioOf(s100, ceiling),
    target: '≥ 50 % of ceiling',
    met: ratioOf(s100, ceiling).median >= 0.5,
  },
  {
    figure: 'steps/s, 1,000 concurrent sessions',
    unit: 'steps/s',
    loopline: summarize(s1000),
    ceilingLabel: '100 bare chains',
    ceiling: summarize(ceiling),
    ratio: ratioOf(s1000, ceiling),
    target: '≥ 50 % of ceiling',
    met: ratioOf(s1000, ceiling).median >= 0.5,
  },
  {
    figure: `worker RSS, 1,000 concurrent sessions (step concurrency ${CONCURRENCY})`,
    unit: 'MiB',
    loopline: summarize(at1000.map((r) => r.peakRss)),
    target: '≤ 300 MB (MiB)',
    met: median(at1000.map((r) => r.peakRss)) <= 300,
    note: `peak RSS (VmHWM) of the worker process; idle worker ${fmt(idle)} MiB`,
  },
];
if (inflight) {
  rows.push({
    figure: 'worker RSS, 1,000 sessions all in flight (step concurrency 1,000)',
    unit: 'MiB',
    loopline: summarize([inflight.peakRss]),
    target: '≤ 300 MB (MiB)',
    met: inflight.peakRss <= 300,
    note: `one run; ${fmt(inflight.stepsPerSecond)} steps/s`,
  });
}
emit({
  name: 'throughput',
  title: 'Throughput and worker memory',
  rows,
  details: [
    `Each run: 100 bare chains, then Loopline with 100 sessions, then with 1,000 sessions (fresh database and ` +
      `namespace each). Warm-up ${WARMUP_MS / 1000} s, window ${WINDOW_MS / 1000} s. One worker process, step ` +
      `concurrency ${CONCURRENCY}, PostgreSQL pool 20 (the defaults of apps/worker/src/main.ts), node ` +
      `${WORKER_NODE_ARGS.join(' ') || '(V8 defaults)'} (as deployed: infra/compose.yaml); mock model (zero ` +
      'latency) in its own process; every step answers "Checking." plus one read_output call. Session ' +
      'titles off (LOOPLINE_DISABLE_TITLES=1: one extra model call per new session), no fairness caps ' +
      '(the defaults).',
    '',
    `The worker process alone, started and idle (no session): ${fmt(idle)} MiB RSS.`,
    '',
    '| run | ceiling steps/s | 100 sessions steps/s | RSS peak | 1,000 sessions steps/s | RSS peak | RSS max in window |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...at100.map(
      (a, i) =>
        `| ${i + 1} | ${fmt(ceiling[i]!)} | ${fmt(a.stepsPerSecond)} | ${fmt(a.peakRss)} MiB | ` +
        `${fmt(at1000[i]!.stepsPerSecond)} | ${fmt(at1000[i]!.peakRss)} MiB | ${fmt(at1000[i]!.windowRss)} MiB |`,
    ),
    ...(inflight
      ? [
          '',
          `All 1,000 sessions in flight at once (WORKER_STEP_CONCURRENCY=1000): ${fmt(inflight.stepsPerSecond)} ` +
            `steps/s, RSS peak ${fmt(inflight.peakRss)} MiB.`,
        ]
      : []),
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
