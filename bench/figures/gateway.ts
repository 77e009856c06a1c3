import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import autocannon, { type Result } from 'autocannon';
import { figureArgs } from '../lib/args.ts';
import { freshDatabase, namespace, purgeNamespace, REDIS_URL, sleep } from '../lib/infra.ts';
import { forkChild, spawnNode, stopProcess } from '../lib/proc.ts';
import { emit, log, ratioOf } from '../lib/result.ts';
import { benchSessions, benchTenant } from '../lib/service.ts';
import { fmt, summarize } from '../lib/stats.ts';
import { cpuMsOf } from '../lib/worker-proc.ts';

// Gateway POST /v1/sessions/:id/messages: requests per second with autocannon, 50 connections,
// round-robin over 200 sessions (so the per-session row lock is not what is measured), workers
// off. The gateway is the real server process (apps/gateway/src/server.ts, LOG_LEVEL=warn);
// autocannon runs in this process. Ceiling: the bare durable POST (lib/durable-post-server.ts: a
// Fastify route doing the same one-statement insert and the same BullMQ job add, nothing else);
// the old ceiling, a bare Fastify route doing one Redis XADD (lib/xadd-server.ts), is kept as an
// extra row, and so is the gateway with its group commit off (every message in a statement of
// its own, as the ceiling). Same requests, same client, interleaved in every run.
// BENCH_GATEWAY_PROF=<dir> runs the gateway under --cpu-prof (profile written there at its exit).

const args = figureArgs({ runs: 3, quickRuns: 1 });
const DURATION_S = args.quick ? 4 : 8;
// BENCH_GATEWAY_CONNECTIONS=<n> for a one-off run at another load (the figure is defined at 50).
const CONNECTIONS = Number(process.env.BENCH_GATEWAY_CONNECTIONS ?? 50);
const SESSIONS = 200;
const started = performance.now();

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

const database = await freshDatabase('gateway');
const ns = namespace('gateway');
const tenant = await benchTenant(database.db);
const sessions = await benchSessions(database.db, tenant, SESSIONS);
const body = JSON.stringify({ text: 'What is the weather in Paris today, and should I take an umbrella?' });
const headers = { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' };

/** The real gateway process; `env` on top of the bench's settings. */
async function startGateway(label: string, env: NodeJS.ProcessEnv = {}) {
  const port = await freePort();
  const child = spawnNode(
    'apps/gateway/src/server.ts',
    {
      DATABASE_URL: database.url,
      REDIS_URL,
      LOOPLINE_NAMESPACE: ns,
      LOOPLINE_OPERATOR_TOKEN: randomUUID(),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // The per-key limiter stays on but never refuses; at this limit it takes its counts from Redis
      // in blocks of 10,000 (apps/gateway/src/lib/rate-lease.ts).
      LOOPLINE_RATE_LIMIT_PER_MINUTE: String(10_000_000),
      ...env,
    },
    {
      log: label,
      nodeArgs:
        process.env.BENCH_GATEWAY_PROF && label === 'gateway'
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_GATEWAY_PROF}`]
          : [],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 300 || child.exitCode !== null)
      throw new Error(`the gateway did not start (see bench/out/logs/${label}.log)`);
    await sleep(100);
  }
  return { child, url };
}

// As configured by default (group commit, docs/decisions.md D39), and with every message in a
// statement of its own (LOOPLINE_APPEND_BATCH_MAX=1), as the ceiling writes them.
const { child: gateway, url: gatewayUrl } = await startGateway('gateway');
const { child: single, url: singleUrl } = await startGateway('gateway-single', {
  LOOPLINE_APPEND_BATCH_MAX: '1',
});
const xadd = forkChild('lib/xadd-server.ts', [], { BENCH_NS: `${ns}-x` });
const { port: xaddPort } = (await xadd.ready) as { port: number };
const durable = forkChild('lib/durable-post-server.ts', [], {
  BENCH_DB_URL: database.url,
  BENCH_NS: `${ns}-d`,
  BENCH_TENANT: tenant.tenantId,
});
const { port: durablePort } = (await durable.ready) as { port: number };

interface Run extends Result {
  /** CPU (user + system) of the server process per 2xx answer, in ms. */
  cpuPerRequest: number;
}

async function cannon(url: string, seconds: number, pid?: number): Promise<Run> {
  let i = 0;
  const cpu0 = pid === undefined ? Number.NaN : cpuMsOf(pid);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({
          ...req,
          path: `/v1/sessions/${sessions[i++ % SESSIONS]}/messages`,
          headers,
          body,
        }),
      },
    ],
  });
  const cpu = pid === undefined ? Number.NaN : cpuMsOf(pid) - cpu0;
  return Object.assign(result, { cpuPerRequest: cpu / Math.max(1, result['2xx']) });
}

const perSecond = (r: Result) => r['2xx'] / r.duration;
log(`gateway: ${args.runs} runs of ${DURATION_S} s, ${CONNECTIONS} connections (2 s warm-up each)`);
const durableUrl = `http://127.0.0.1:${durablePort}`;
await cannon(gatewayUrl, 2);
await cannon(singleUrl, 2);
await cannon(durableUrl, 2);
await cannon(`http://127.0.0.1:${xaddPort}`, 2);
const loop: Run[] = [];
const singles: Run[] = [];
const durables: Run[] = [];
const ceiling: Run[] = [];
const loadAverages: string[] = [];
for (let r = 0; r < args.runs; r++) {
  loadAverages.push(
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' / '),
  );
  loop.push(await cannon(gatewayUrl, DURATION_S, gateway.pid));
  singles.push(await cannon(singleUrl, DURATION_S, single.pid));
  durables.push(await cannon(durableUrl, DURATION_S, durable.child.pid));
  ceiling.push(await cannon(`http://127.0.0.1:${xaddPort}`, DURATION_S, xadd.child.pid));
  log(
    `  run ${r + 1}: gateway ${fmt(perSecond(loop[r]!))} req/s (p50 ${loop[r]!.latency.p50} ms, non-2xx ` +
      `${loop[r]!.non2xx}, errors ${loop[r]!.errors}, CPU ${loop[r]!.cpuPerRequest.toFixed(3)} ms/req); ` +
      `each message alone ${fmt(perSecond(singles[r]!))} req/s (CPU ${singles[r]!.cpuPerRequest.toFixed(3)} ms/req); ` +
      `bare durable POST ${fmt(perSecond(durables[r]!))} req/s (non-2xx ${durables[r]!.non2xx}, CPU ` +
      `${durables[r]!.cpuPerRequest.toFixed(3)} ms/req); XADD route ${fmt(perSecond(ceiling[r]!))} req/s ` +
      `(load ${loadAverages[r]})`,
  );
}
await stopProcess(gateway);
await stopProcess(single);
await xadd.stop();
await durable.stop();
await database.drop();
await purgeNamespace(ns);

const l = loop.map(perSecond);
const c = ceiling.map(perSecond);
const d = durables.map(perSecond);
const g1 = singles.map(perSecond);
const lc = loop.map((x) => x.cpuPerRequest);
const dc = durables.map((x) => x.cpuPerRequest);
emit({
  name: 'gateway',
  title: 'Gateway POST …/messages',
  rows: [
    {
      figure: 'gateway POST …/messages, 50 connections',
      unit: 'req/s',
      loopline: summarize(l),
      ceilingLabel: 'bare durable POST (same insert + job add)',
      ceiling: summarize(d),
      ratio: ratioOf(l, d),
      target: '≥ 90 % of ceiling',
      met: ratioOf(l, d).median >= 0.9,
    },
    {
      figure: 'gateway POST …/messages, 50 connections, each message in its own statement',
      note: 'LOOPLINE_APPEND_BATCH_MAX=1: group commit off, one statement per message as the ceiling',
      unit: 'req/s',
      loopline: summarize(g1),
      ceilingLabel: 'bare durable POST (same insert + job add)',
      ceiling: summarize(d),
      ratio: ratioOf(g1, d),
      target: '— (%)',
      met: null,
    },
    {
      figure: 'gateway POST …/messages, 50 connections (old ceiling)',
      unit: 'req/s',
      loopline: summarize(l),
      ceilingLabel: 'Fastify route + one XADD',
      ceiling: summarize(c),
      ratio: ratioOf(l, c),
      target: '— (was ≥ 30 %)',
      met: null,
    },
    {
      figure: 'gateway POST …/messages: server CPU per request',
      note: 'process CPU (user + system) of the server process over a run, per 2xx answer',
      unit: 'ms',
      loopline: summarize(lc),
      ceilingLabel: 'bare durable POST CPU per request',
      ceiling: summarize(dc),
      ratio: ratioOf(lc, dc),
      target: '—',
      met: null,
    },
  ],
  details: [
    `autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per run after a 2 s warm-up, round-robin over ` +
      `${SESSIONS} sessions, body ${body.length} bytes; only 2xx answers are counted. Each POST authenticates ` +
      'the API key, appends the message in one statement (status, seq, message, part; messages that arrive ' +
      'while the LOOPLINE_APPEND_CONCURRENCY=4 append statements are busy go in one statement together, ' +
      'docs/decisions.md D39), ' +
      'publishes the events and adds the wake job (one Redis write); workers are off, so the wake jobs only ' +
      'queue. The per-key rate limiter is on with a limit never reached (LOOPLINE_RATE_LIMIT_PER_MINUTE=10^7, ' +
      'its maximum: counts taken from Redis in blocks of 10,000), LOG_LEVEL=warn.',
    '',
    'Ceiling: the bare durable POST (lib/durable-post-server.ts), a Fastify route in a process of its own ' +
      "doing the gateway's durable work and nothing else: the one statement that locks the session row, " +
      'takes the seq, moves idle|error → queued and inserts the message and its text part, then the wake ' +
      'job added with BullMQ (same queue options), pool of 20 as the gateway. No auth, rate limit, ' +
      'validation, token count or event publish. The old ceiling (a Fastify route doing one XADD, no ' +
      'PostgreSQL) is kept as an extra row, and so is a second gateway process with group commit off ' +
      '(LOOPLINE_APPEND_BATCH_MAX=1: every message in a statement of its own, as the ceiling writes it). ' +
      'Each run measures the four in this order. CPU per request: ' +
      "the server process' CPU (user + system, /proc/<pid>/stat) over the run divided by its 2xx answers " +
      '(PostgreSQL, Redis and autocannon are other processes).',
    '',
    '| run | load average | gateway req/s | p50 / p99 latency | non-2xx / errors | CPU/req | each message alone req/s | CPU/req | bare durable POST req/s | p50 / p99 latency | CPU/req | XADD route req/s | p50 / p99 latency |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...loop.map(
      (g, i) =>
        `| ${i + 1} | ${loadAverages[i]} | ${fmt(perSecond(g))} | ${g.latency.p50} / ${g.latency.p99} ms | ${g.non2xx} / ${g.errors} | ` +
        `${g.cpuPerRequest.toFixed(3)} ms | ` +
        `${fmt(perSecond(singles[i]!))} | ${singles[i]!.cpuPerRequest.toFixed(3)} ms | ` +
        `${fmt(perSecond(durables[i]!))} | ${durables[i]!.latency.p50} / ${durables[i]!.latency.p99} ms | ` +
        `${durables[i]!.cpuPerRequest.toFixed(3)} ms | ` +
        `${fmt(perSecond(ceiling[i]!))} | ${ceiling[i]!.latency.p50} / ${ceiling[i]!.latency.p99} ms |`,
    ),
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
