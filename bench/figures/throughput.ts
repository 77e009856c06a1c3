import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import type { ChainKind } from '../lib/bare-chain.ts';
import { createChainTable } from '../lib/bare-chain.ts';
import { freshDatabase, namespace, purgeNamespace, rssOf, sleep } from '../lib/infra.ts';
import { forkChild, OUT_DIR, stopProcess } from '../lib/proc.ts';
import { emit, log, type Row, ratioOf } from '../lib/result.ts';
import { benchSessions, benchTenant, sendAll, startService } from '../lib/service.ts';
import { machineBusyMs, type ServiceCpu, serviceCpu, serviceCpuPer } from '../lib/service-cpu.ts';
import { fmt, median, summarize } from '../lib/stats.ts';
import {
  cpuMsOf,
  spawnWorker,
  stepConcurrencyOf,
  workerEnv,
  workerRuntimeLabel,
} from '../lib/worker-proc.ts';

// Steps per second with 100 and with 1,000 concurrent sessions, the worker's CPU per step and its
// memory. The worker is the real worker process (apps/worker/src/main.ts, its own default step
// concurrency unless BENCH_WORKER_STEP_CONCURRENCY says otherwise, pool 20), the mock model
// another process, the gateway (used to wake the sessions) stays in this one. Every session loops
// until its 1,000th step, so all of them stay busy through the window. Steps are counted from the
// steps ledger at the start and end of the window; CPU from /proc/<pid>/stat over the window.
// Ceilings, in a child process with the same BullMQ concurrency, interleaved in every run: the bare
// durable chain (lib/durable-step.ts: lock, fence bump, message + 3 parts, XADD, next job) with 100
// and with 1,000 sessions, and the old bare chain (lock + one row) with 100 chains as an extra row.
// Memory: the worker's RSS, sampled every 250 ms, and its peak (VmHWM).

const args = figureArgs({ runs: 3, quickRuns: 1 });
const WARMUP_MS = args.quick ? 2_000 : 3_000;
const WINDOW_MS = args.quick ? 5_000 : 8_000;
const started = performance.now();

const mock = forkChild('lib/mock-child.ts', [], { MOCK_RESET_EVERY_MS: '2000' });
const { url: mockUrl } = (await mock.ready) as { url: string };
// What the worker will run with (its default, or BENCH_WORKER_STEP_CONCURRENCY); the ceilings use the same.
const CONCURRENCY = stepConcurrencyOf(workerEnv({ databaseUrl: 'postgres://x', namespace: 'x', mockUrl }));

interface LoopRun {
  stepsPerSecond: number;
  /** Worker CPU (user + system) per step in the window, ms. */
  cpuPerStep: number;
  /** PostgreSQL's and Redis' CPU per step in the window, ms. */
  services: ServiceCpu;
  /** The mock model's process CPU per step, and the whole machine's busy CPU per step, ms. */
  mockCpu: number;
  machineCpu: number;
  peakRss: number;
  windowRss: number;
  ready: number;
}

async function loopRun(sessions: number, concurrency?: number): Promise<LoopRun> {
  const svc = await startService({ label: `tput${sessions}`, mockUrl });
  const t0 = performance.now();
  const tenant = await benchTenant(svc.db, { maxSteps: 1000 });
  const ids = await benchSessions(svc.db, tenant, sessions);
  await sendAll(svc.url, tenant, ids, 'Run the bench chain.');
  const ready = performance.now() - t0;
  const { child: worker } = spawnWorker(
    {
      databaseUrl: svc.database.url,
      namespace: svc.namespace,
      mockUrl,
      ...(concurrency ? { env: { WORKER_STEP_CONCURRENCY: String(concurrency) } } : {}),
    },
    `worker-${sessions}-c${concurrency ?? CONCURRENCY}`,
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
    const cpu0 = cpuMsOf(worker.pid!);
    const s0 = serviceCpu();
    const m0 = cpuMsOf(mock.child.pid!);
    const b0 = machineBusyMs();
    const w0 = performance.now();
    await sleep(WINDOW_MS);
    const c1 = await count();
    const cpu1 = cpuMsOf(worker.pid!);
    const s1 = serviceCpu();
    const m1 = cpuMsOf(mock.child.pid!);
    const b1 = machineBusyMs();
    const w1 = performance.now();
    const peak = worker.pid ? (rssOf(worker.pid)?.peak ?? Number.NaN) : Number.NaN;
    const inWindow = samples.filter((s) => s.at >= w0).map((s) => s.rss);
    return {
      stepsPerSecond: ((c1 - c0) * 1000) / (w1 - w0),
      cpuPerStep: (cpu1 - cpu0) / Math.max(1, c1 - c0),
      services: serviceCpuPer(s0, s1, c1 - c0),
      mockCpu: (m1 - m0) / Math.max(1, c1 - c0),
      machineCpu: (b1 - b0) / Math.max(1, c1 - c0),
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

interface CeilingRun {
  stepsPerSecond: number;
  /** The chain process' CPU per job in the window, ms. */
  cpuPerStep: number;
  services: ServiceCpu;
  /** The whole machine's busy CPU per step, ms. */
  machineCpu: number;
}

async function ceilingRun(kind: ChainKind, chains: number): Promise<CeilingRun> {
  const database = await freshDatabase(kind === 'durable' ? 'durable' : 'chain');
  const ns = namespace(kind === 'durable' ? 'durable' : 'chain');
  await createChainTable(database.db);
  const child = forkChild('lib/bare-chain.ts', [], {
    BENCH_DB_URL: database.url,
    BENCH_NS: ns,
    BENCH_CHAINS: String(chains),
    BENCH_CONCURRENCY: String(CONCURRENCY),
    BENCH_KIND: kind,
  });
  const done = () => child.request<number>({ type: 'completed' });
  const cpu = async () => {
    const c = await child.request<{ user: number; system: number }>({ type: 'cpu' });
    return (c.user + c.system) / 1000;
  };
  try {
    await child.ready;
    await sleep(WARMUP_MS);
    const c0 = await done();
    const cpu0 = await cpu();
    const s0 = serviceCpu();
    const b0 = machineBusyMs();
    const w0 = performance.now();
    await sleep(WINDOW_MS);
    const c1 = await done();
    const cpu1 = await cpu();
    const s1 = serviceCpu();
    const b1 = machineBusyMs();
    return {
      stepsPerSecond: ((c1 - c0) * 1000) / (performance.now() - w0),
      cpuPerStep: (cpu1 - cpu0) / Math.max(1, c1 - c0),
      services: serviceCpuPer(s0, s1, c1 - c0),
      machineCpu: (b1 - b0) / Math.max(1, c1 - c0),
    };
  } finally {
    await stopProcess(child.child, 5_000);
    await database.drop();
    await purgeNamespace(ns);
  }
}

/** The worker's RSS once started, with nothing to do: the floor under the memory figure. */
async function idleRss(): Promise<number> {
  const svc = await startService({ label: 'idle', mockUrl });
  const { child: worker } = spawnWorker(
    { databaseUrl: svc.database.url, namespace: svc.namespace, mockUrl, env: { LOG_LEVEL: 'info' } },
    'worker-idle',
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
const durable100: CeilingRun[] = [];
const durable1000: CeilingRun[] = [];
const chain100: CeilingRun[] = [];
log(
  `throughput: ${args.runs} runs, warm-up ${WARMUP_MS} ms, window ${WINDOW_MS} ms, step concurrency ${CONCURRENCY}`,
);
for (let r = 0; r < args.runs; r++) {
  durable100.push(await ceilingRun('durable', 100));
  at100.push(await loopRun(100));
  durable1000.push(await ceilingRun('durable', 1000));
  at1000.push(await loopRun(1000));
  chain100.push(await ceilingRun('row', 100));
  log(
    `  run ${r + 1}: bare durable chain 100 ${fmt(durable100[r]!.stepsPerSecond)} / 1,000 ` +
      `${fmt(durable1000[r]!.stepsPerSecond)} steps/s, bare chain ${fmt(chain100[r]!.stepsPerSecond)} steps/s; ` +
      `100 sessions ${fmt(at100[r]!.stepsPerSecond)} steps/s (CPU ${fmt(at100[r]!.cpuPerStep)} ms/step, RSS peak ` +
      `${fmt(at100[r]!.peakRss)} MiB); 1,000 sessions ${fmt(at1000[r]!.stepsPerSecond)} steps/s ` +
      `(CPU ${fmt(at1000[r]!.cpuPerStep)} ms/step, RSS peak ${fmt(at1000[r]!.peakRss)} MiB)`,
  );
  log(`  run ${r + 1}, machine CPU per step at 1,000 sessions: ${machineLine(at1000[r]!, durable1000[r]!)}`);
}
/** Where one step's CPU went on the whole machine, Loopline against the bare durable chain. */
function machineLine(a: LoopRun, d: CeilingRun): string {
  const rest = (total: number, parts: number[]) => total - parts.reduce((x, y) => x + y, 0);
  const { postgres, redis } = a.services;
  return (
    `Loopline ${fmt(a.machineCpu)} ms (worker ${fmt(a.cpuPerStep)}, mock model ${fmt(a.mockCpu)}, PostgreSQL ` +
    `${fmt(postgres)}, Redis ${fmt(redis)}, the rest ${fmt(rest(a.machineCpu, [a.cpuPerStep, a.mockCpu, postgres, redis]))}); ` +
    `bare durable chain ${fmt(d.machineCpu)} ms (chain process ${fmt(d.cpuPerStep)}, PostgreSQL ` +
    `${fmt(d.services.postgres)}, Redis ${fmt(d.services.redis)}, the rest ` +
    `${fmt(rest(d.machineCpu, [d.cpuPerStep, d.services.postgres, d.services.redis]))})`
  );
}

let inflight: LoopRun | undefined;
if (!args.quick && CONCURRENCY < 1000) {
  inflight = await loopRun(1000, 1000);
  log(
    `  1,000 sessions all in flight: ${fmt(inflight.stepsPerSecond)} steps/s, RSS peak ${fmt(inflight.peakRss)} MiB`,
  );
}
await mock.stop();

const s100 = at100.map((r) => r.stepsPerSecond);
const s1000 = at1000.map((r) => r.stepsPerSecond);
const d100 = durable100.map((r) => r.stepsPerSecond);
const d1000 = durable1000.map((r) => r.stepsPerSecond);
const b100 = chain100.map((r) => r.stepsPerSecond);
const rows: Row[] = [
  {
    figure: 'steps/s, 100 concurrent sessions',
    unit: 'steps/s',
    loopline: summarize(s100),
    ceilingLabel: 'bare durable chain, 100 sessions',
    ceiling: summarize(d100),
    ratio: ratioOf(s100, d100),
    target: '≥ 50 % of ceiling',
    met: ratioOf(s100, d100).median >= 0.5,
  },
  {
    figure: 'steps/s, 1,000 concurrent sessions',
    unit: 'steps/s',
    loopline: summarize(s1000),
    ceilingLabel: 'bare durable chain, 1,000 sessions',
    ceiling: summarize(d1000),
    ratio: ratioOf(s1000, d1000),
    target: '≥ 50 % of ceiling',
    met: ratioOf(s1000, d1000).median >= 0.5,
  },
  {
    figure: 'steps/s, 100 concurrent sessions (old ceiling)',
    unit: 'steps/s',
    loopline: summarize(s100),
    ceilingLabel: '100 bare chains (lock + one row)',
    ceiling: summarize(b100),
    ratio: ratioOf(s100, b100),
    target: '— (%)',
    met: null,
  },
  {
    figure: 'steps/s: worker CPU per step, 1,000 sessions',
    unit: 'ms',
    loopline: summarize(at1000.map((r) => r.cpuPerStep)),
    ceilingLabel: 'bare durable chain CPU per step',
    ceiling: summarize(durable1000.map((r) => r.cpuPerStep)),
    ratio: ratioOf(
      at1000.map((r) => r.cpuPerStep),
      durable1000.map((r) => r.cpuPerStep),
    ),
    target: '—',
    met: null,
    note: 'process CPU (user + system) of the worker process over the window, per step',
  },
  ...(['postgres', 'redis'] as const).map(
    (server): Row => ({
      figure: `steps/s: ${server === 'postgres' ? 'PostgreSQL' : 'Redis'} CPU per step, 1,000 sessions`,
      unit: 'ms',
      loopline: summarize(at1000.map((r) => r.services[server])),
      ceilingLabel: 'same for the bare durable chain',
      ceiling: summarize(durable1000.map((r) => r.services[server])),
      ratio: ratioOf(
        at1000.map((r) => r.services[server]),
        durable1000.map((r) => r.services[server]),
      ),
      target: '—',
      met: null,
      note: `CPU of every ${server === 'postgres' ? '`postgres`' : '`redis-server`'} process over the window, per step`,
    }),
  ),
  {
    figure: `worker RSS, 1,000 concurrent sessions (step concurrency ${CONCURRENCY})`,
    unit: 'MiB',
    loopline: summarize(at1000.map((r) => r.peakRss)),
    target: '≤ 250 MiB',
    met: median(at1000.map((r) => r.peakRss)) <= 250,
    note: `peak RSS (VmHWM) of the worker process; idle worker ${fmt(idle)} MiB`,
  },
];
if (inflight) {
  rows.push({
    figure: 'worker RSS, 1,000 sessions all in flight (step concurrency 1,000)',
    unit: 'MiB',
    loopline: summarize([inflight.peakRss]),
    target: '≤ 300 MiB',
    met: inflight.peakRss <= 300,
    note: `one run; ${fmt(inflight.stepsPerSecond)} steps/s`,
  });
}
emit({
  name: 'throughput',
  title: 'Throughput and worker memory',
  rows,
  details: [
    `Each run, in this order: the bare durable chain with 100 sessions, Loopline with 100 sessions, the bare ` +
      `durable chain with 1,000 sessions, Loopline with 1,000 sessions, 100 bare chains (fresh database and ` +
      `namespace each). Warm-up ${WARMUP_MS / 1000} s, window ${WINDOW_MS / 1000} s. One worker process, step ` +
      `concurrency ${CONCURRENCY} (WORKER_STEP_CONCURRENCY as the worker parses it from the environment the bench ` +
      `gives it: its default unless BENCH_WORKER_STEP_CONCURRENCY is set), PostgreSQL pool 20, ` +
      `${workerRuntimeLabel()} (as deployed: infra/compose.yaml); mock model (zero ` +
      'latency) in its own process; every step answers "Checking." plus one read_output call. Session ' +
      'titles off (LOOPLINE_DISABLE_TITLES=1: one extra model call per new session), no fairness caps ' +
      '(the defaults). The ceilings run in one child process with the same BullMQ concurrency and pool; ' +
      'CPU per step is the process CPU (user + system) over the window divided by the steps in it ' +
      '(/proc/<pid>/stat for the worker, process.cpuUsage for the ceiling).',
    '',
    `The worker process alone, started and idle (no session): ${fmt(idle)} MiB RSS.`,
    '',
    'PostgreSQL and Redis CPU per step: the CPU of every `postgres` and `redis-server` process on the ' +
      'machine (lib/service-cpu.ts) over the same window, divided by the steps in it. Per run, 100 / 1,000 ' +
      'sessions, Loopline then the bare durable chain: ' +
      at100
        .map(
          (a, i) =>
            `run ${i + 1}: PostgreSQL ${fmt(a.services.postgres)} / ${fmt(at1000[i]!.services.postgres)} ms vs ` +
            `${fmt(durable100[i]!.services.postgres)} / ${fmt(durable1000[i]!.services.postgres)} ms, Redis ` +
            `${fmt(a.services.redis)} / ${fmt(at1000[i]!.services.redis)} ms vs ${fmt(durable100[i]!.services.redis)} / ` +
            `${fmt(durable1000[i]!.services.redis)} ms`,
        )
        .join('; ') +
      '.',
    '',
    "The whole machine's busy CPU per step at 1,000 sessions (/proc/stat, every CPU, kernel included) " +
      "and its parts: the mock model is the bench's stand-in for a model that runs elsewhere (it has no " +
      "counterpart in the bare chain), 'the rest' is mostly the kernel's loopback network work, this " +
      "process and the machine's other tasks. " +
      at1000.map((a, i) => `Run ${i + 1}: ${machineLine(a, durable1000[i]!)}.`).join(' '),
    '',
    '| run | durable chain 100 steps/s (CPU/step) | 100 sessions steps/s (CPU/step) | RSS peak | durable chain 1,000 steps/s (CPU/step) | 1,000 sessions steps/s (CPU/step) | RSS peak | RSS max in window | bare chain 100 steps/s |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...at100.map(
      (a, i) =>
        `| ${i + 1} | ${fmt(d100[i]!)} (${fmt(durable100[i]!.cpuPerStep)} ms) | ${fmt(a.stepsPerSecond)} ` +
        `(${fmt(a.cpuPerStep)} ms) | ${fmt(a.peakRss)} MiB | ${fmt(d1000[i]!)} (${fmt(durable1000[i]!.cpuPerStep)} ms) | ` +
        `${fmt(at1000[i]!.stepsPerSecond)} (${fmt(at1000[i]!.cpuPerStep)} ms) | ${fmt(at1000[i]!.peakRss)} MiB | ` +
        `${fmt(at1000[i]!.windowRss)} MiB | ${fmt(b100[i]!)} |`,
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
