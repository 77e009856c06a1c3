import { performance } from 'node:perf_hooks';
import { figureArgs } from '../lib/args.ts';
import type { DelayStats } from '../lib/delay-proxy.ts';
import { rssOf, sleep } from '../lib/infra.ts';
import { forkChild, stopProcess } from '../lib/proc.ts';
import { emit, log, type Row } from '../lib/result.ts';
import { benchSessions, benchTenant, send, startService } from '../lib/service.ts';
import { fmt, median, percentile, summarize } from '../lib/stats.ts';
import { spawnWorker, workerRuntimeLabel } from '../lib/worker-proc.ts';

// Sessions in flight per worker process, with the mock model at a realistic 2 s per call
// (lib/delay-proxy.ts holds each call that long in front of the mock; the mock is unchanged).
// N sessions are woken at once (their messages posted before the worker starts); the real worker
// process then runs with its default settings (WORKER_STEP_CONCURRENCY as it parses it, reported).
// Measured over a window once the first call arrives: the most model calls in flight at once as
// the proxy sees them, the worker's peak RSS (VmHWM), and the step overhead between two model
// calls of one session (end of an answer → the session's next call, at the proxy).

const args = figureArgs({ runs: 2, quickRuns: 1 });
// More sessions than the target's 1,000, so that the figure can reach it when the worker keeps up
// (with exactly 1,000, every one of them would have to be mid-call at the same instant).
const SESSIONS = Number(process.env.BENCH_INFLIGHT_SESSIONS ?? 1_200);
const DELAY_MS = 2_000;
const WINDOW_MS = args.quick ? 20_000 : 30_000;
const started = performance.now();

const mock = forkChild('lib/mock-child.ts', [], {
  MOCK_DELAY_MS: String(DELAY_MS),
  MOCK_RESET_EVERY_MS: '2000',
});
const { url: modelUrl } = (await mock.ready) as { url: string };

interface InflightRun {
  stepConcurrency: number;
  maxInFlight: number;
  peakRss: number;
  calls: number;
  gaps: number[];
  ready: number;
}

async function run(): Promise<InflightRun> {
  const svc = await startService({ label: 'inflight', mockUrl: modelUrl });
  try {
    const t0 = performance.now();
    const tenant = await benchTenant(svc.db, { maxSteps: 1000 });
    const ids = await benchSessions(svc.db, tenant, SESSIONS);
    // The session id in the text lets the proxy tell the sessions' calls apart.
    let next = 0;
    const lane = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        await send(svc.url, tenant, id, `Run the bench chain (session ${id}).`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, lane));
    const ready = performance.now() - t0;
    const worker = spawnWorker(
      { databaseUrl: svc.database.url, namespace: svc.namespace, mockUrl: modelUrl },
      'worker-inflight',
    );
    try {
      const stats = () => mock.request<DelayStats>({ type: 'delay-stats' });
      const deadline = Date.now() + 60_000;
      while ((await stats()).calls === 0) {
        if (Date.now() > deadline || worker.child.exitCode !== null)
          throw new Error('the worker made no model call (see bench/out/logs)');
        await sleep(100);
      }
      await mock.request({ type: 'delay-reset' });
      await sleep(WINDOW_MS);
      const s = await stats();
      const peak = worker.child.pid ? (rssOf(worker.child.pid)?.peak ?? Number.NaN) : Number.NaN;
      return {
        stepConcurrency: worker.stepConcurrency,
        maxInFlight: s.maxInFlight,
        peakRss: peak,
        calls: s.calls,
        gaps: s.gaps,
        ready,
      };
    } finally {
      await stopProcess(worker.child, 5_000);
    }
  } finally {
    await svc.close();
  }
}

log(
  `in flight: ${args.runs} runs, ${SESSIONS} sessions, model ${DELAY_MS} ms per call, window ${WINDOW_MS} ms`,
);
const runs: InflightRun[] = [];
for (let r = 0; r < args.runs; r++) {
  const x = await run();
  runs.push(x);
  log(
    `  run ${r + 1}: step concurrency ${x.stepConcurrency}, max in flight ${x.maxInFlight}, ${x.calls} calls, ` +
      `RSS peak ${fmt(x.peakRss)} MiB, overhead between calls p50 ${fmt(percentile(x.gaps, 50))} / p99 ` +
      `${fmt(percentile(x.gaps, 99))} ms`,
  );
}
await mock.stop();

const concurrency = [...new Set(runs.map((x) => x.stepConcurrency))].join(', ');
const maxIn = runs.map((x) => x.maxInFlight);
const rss = runs.map((x) => x.peakRss);
const gap50 = runs.map((x) => percentile(x.gaps, 50));
const gap99 = runs.map((x) => percentile(x.gaps, 99));
const rows: Row[] = [
  {
    figure: `sessions in flight per worker process, model 2 s per call, ${SESSIONS.toLocaleString('en-US')} sessions`,
    unit: 'calls',
    loopline: summarize(maxIn),
    target: '≥ 1,000 with RSS ≤ 300 MiB',
    met: median(maxIn) >= 1_000 && median(rss) <= 300,
    note:
      `most model calls in flight at once; default settings: step concurrency ${concurrency}; ` +
      `worker RSS peak ${fmt(median(rss))} MiB`,
  },
  {
    figure: `worker RSS, ${SESSIONS.toLocaleString('en-US')} sessions in flight, model 2 s per call`,
    unit: 'MiB',
    loopline: summarize(rss),
    target: '≤ 300 MiB',
    met: median(rss) <= 300,
    note: 'peak RSS (VmHWM) of the worker process',
  },
  {
    figure: 'step overhead p50 between model calls, sessions in flight',
    unit: 'ms',
    loopline: summarize(gap50),
    target: '— (unchanged from 1 session)',
    met: null,
    note: `p99 ${fmt(median(gap99))} ms`,
  },
];
emit({
  name: 'inflight',
  title: 'Sessions in flight per worker process (model 2 s per call)',
  rows,
  details: [
    `${args.runs} run(s). Each run: a fresh database and namespace, ${SESSIONS.toLocaleString('en-US')} sessions ` +
      'of one tenant (agent maxSteps 1,000, so they all keep looping), a message posted to each through the ' +
      'gateway before the worker starts (all woken at once), then the real worker process with its default ' +
      `settings (step concurrency ${concurrency} as it parses its environment; ` +
      `${workerRuntimeLabel()}; titles off). The mock model answers as in the ` +
      `throughput figure, behind a proxy (lib/delay-proxy.ts) that holds every call ${DELAY_MS / 1000} s before ` +
      `forwarding it. Window: ${WINDOW_MS / 1000} s from the first model call. In flight = calls received by ` +
      'the proxy whose answer has not finished; step overhead = time from the end of a model answer to the ' +
      "same session's next call, at the proxy (writing the step, the job hop, the lock, the history load " +
      'and building the request); when the worker cannot start steps as fast as answers come back (its ' +
      'CPU, or a step concurrency below the sessions), it includes the wait of the next step job in the ' +
      'queue, and it is n/a when no session made two calls within the window.',
    '',
    '| run | step concurrency | sessions ready in | max calls in flight | calls in window (per s) | worker RSS peak | overhead between calls p50 / p99 |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...runs.map(
      (x, i) =>
        `| ${i + 1} | ${x.stepConcurrency} | ${fmt(x.ready / 1000)} s | ${x.maxInFlight} | ${x.calls} ` +
        `(${fmt((x.calls * 1000) / WINDOW_MS)}) | ` +
        `${fmt(x.peakRss)} MiB | ${fmt(gap50[i]!)} / ${fmt(gap99[i]!)} ms |`,
    ),
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
