import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { filterCompacted, newId, type Part, toModelMessages } from '@loopline/core';
import {
  acquireFence,
  createDb,
  getSession,
  insertPart,
  loadHistory,
  updatePart,
  withFence,
} from '@loopline/db';
import { createModel, streamStep } from '@loopline/llm';
import { publishEvents } from '@loopline/queue';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import { bareChain, CEILING_CONNECTION_NAME, createChainTable, periods } from '../lib/bare-chain.ts';
import { counts, installCounters, resetCounts, topShapes } from '../lib/counters.ts';
import { type CpuProfile, saveProfile, startProfiler, summarizeProfile } from '../lib/cpuprofile.ts';
import { durableSessions, durableWork } from '../lib/durable-step.ts';
import { forkChild, OUT_DIR } from '../lib/proc.ts';
import { emit, type FigureResult, log, ratioOf } from '../lib/result.ts';
import {
  benchSessions,
  benchTenant,
  send,
  startService,
  WORKER_CONNECTION_NAME,
  waitIdle,
} from '../lib/service.ts';
import { fmt, median, percentile, summarize } from '../lib/stats.ts';

// Step overhead of one session: the period between consecutive steps of one session's loop
// (steps.started_at, taken in the step's first transaction), minus the model's share of the step
// (the same request replayed against the mock from a plain client). Each step: lock, fence, load
// history, decide, model call (text + one read_output call), tool, writes, next job.
// Ceilings, same step count, interleaved with Loopline in every round: the bare durable step
// (lib/durable-step.ts: lock, fence bump, one transaction writing a message and three parts, one
// XADD, next job), and the old bare chain (lock + one PostgreSQL row + next job), kept as an extra
// row. CPU per step (process CPU of this process, where the worker runs) next to wall time.
// With --profile: the same runs under V8's sampling profiler, summarised for RESULTS.md.

const args = figureArgs({ runs: 5, quickRuns: 3 });
const STEPS = args.quick ? 50 : 100;
const started = performance.now();

const mock = forkChild('lib/mock-child.ts');
const { url: mockUrl } = (await mock.ready) as { url: string };
const svc = await startService({ label: 'step', mockUrl });
const tenant = await benchTenant(svc.db, { maxSteps: STEPS });
await createChainTable(svc.db);
const chainDb = createDb(svc.database.url, { max: 20, applicationName: CEILING_CONNECTION_NAME });
const durable = await durableSessions(chainDb, (args.runs + 1) * 2);
svc.startWorkers();

interface LoopRun {
  periods: number[];
  model: number[];
  overhead: number[];
  steps: number;
  queries: number;
  commands: number;
  sql: Map<string, number>;
  redis: Map<string, number>;
  /** Process CPU (user + system) per step, ms. */
  cpu: number;
}

async function loopRun(): Promise<LoopRun> {
  const [sessionId] = await benchSessions(svc.db, tenant, 1);
  await mock.request({ type: 'reset' });
  installCounters(WORKER_CONNECTION_NAME);
  resetCounts();
  const cpu0 = process.cpuUsage();
  await send(svc.url, tenant, sessionId!, 'Run the bench chain.');
  const final = await waitIdle(svc.db, tenant.tenantId, sessionId!);
  const cpu = process.cpuUsage(cpu0);
  const c = counts();
  if (final.status !== 'idle') throw new Error(`session ended ${final.status}: ${final.statusDetail}`);
  const { rows } = await sql<{ ms: number }>`
    select (extract(epoch from started_at) * 1000)::float8 as ms from steps
    where session_id = ${sessionId!} and kind = 'step' order by step`.execute(svc.db);
  const starts = rows.map((r) => r.ms);
  const model = (await mock.request<number[]>({ type: 'replay' })) ?? [];
  const p: number[] = [];
  const overhead: number[] = [];
  for (let i = 1; i < starts.length; i++) {
    const period = starts[i]! - starts[i - 1]!;
    p.push(period);
    overhead.push(period - (model[i - 1] ?? 0));
  }
  return {
    periods: p,
    model,
    overhead,
    steps: starts.length,
    queries: c.queries,
    commands: c.commands,
    sql: c.sql,
    redis: c.redis,
    cpu: (cpu.user + cpu.system) / 1000 / starts.length,
  };
}

interface CeilingRun {
  periods: number[];
  queries: number;
  commands: number;
  /** Process CPU per job, ms. */
  cpu: number;
}

let ceilingRuns = 0;
async function ceilingOnce(kind: 'row' | 'durable' = 'row'): Promise<CeilingRun> {
  // A fresh chain (and queue) per run, so that finished() belongs to this run.
  const n = ceilingRuns++;
  const namespace = `${svc.namespace}-c${n}`;
  const session = durable[n % durable.length]!;
  const own = bareChain({
    db: chainDb,
    namespace,
    concurrency: 16,
    ...(kind === 'durable'
      ? {
          work: (connection) => durableWork(chainDb, connection, svc.keys, [session]),
          lockId: () => session.sessionId,
          releaseFirst: true,
        }
      : {}),
  });
  installCounters(CEILING_CONNECTION_NAME);
  resetCounts();
  const cpu0 = process.cpuUsage();
  await own.start(1, STEPS);
  await own.finished();
  const cpu = process.cpuUsage(cpu0);
  const c = counts();
  await own.close();
  return {
    periods: periods(own.starts),
    queries: c.queries,
    commands: c.commands,
    cpu: (cpu.user + cpu.system) / 1000 / STEPS,
  };
}

log(`step overhead: ${args.runs} runs of ${STEPS} steps (warm-up first)`);
await loopRun(); // warm-up: JIT, pools, prepared connections
await ceilingOnce('durable');
await ceilingOnce();

let stopProfile: (() => Promise<CpuProfile>) | undefined;
if (args.profile) stopProfile = await startProfiler();
const loops: LoopRun[] = [];
const ceilings: CeilingRun[] = [];
const durables: CeilingRun[] = [];
const none: CeilingRun = { periods: [1], queries: 0, commands: 0, cpu: 0 };
for (let r = 0; r < args.runs; r++) {
  const loop = await loopRun();
  loops.push(loop);
  const d = args.profile ? none : await ceilingOnce('durable');
  durables.push(d);
  const ceiling = args.profile ? none : await ceilingOnce();
  ceilings.push(ceiling);
  log(
    `  run ${r + 1}: period p50 ${fmt(percentile(loop.periods, 50))} ms, model ${fmt(median(loop.model))} ms, ` +
      `overhead p50 ${fmt(percentile(loop.overhead, 50))} / p99 ${fmt(percentile(loop.overhead, 99))} ms, ` +
      `CPU ${fmt(loop.cpu)} ms/step` +
      (args.profile
        ? ''
        : `; durable step p50 ${fmt(percentile(d.periods, 50))} / p99 ${fmt(percentile(d.periods, 99))} ms ` +
          `(CPU ${fmt(d.cpu)} ms); bare chain p50 ${fmt(percentile(ceiling.periods, 50))} / p99 ` +
          `${fmt(percentile(ceiling.periods, 99))} ms`),
  );
}
const profile = stopProfile ? await stopProfile() : undefined;

/** Process CPU (user + system, all threads) per call of `fn`, after two warm-up calls. */
async function cpuPer(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  await fn(-2);
  await fn(-1);
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(i);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / n;
}

// Where a step's CPU goes: the whole step, then its parts one by one in this same process.
const budget: Array<[string, number, string]> = [];
if (args.profile) {
  const c0 = process.cpuUsage();
  const whole = await loopRun();
  const c = process.cpuUsage(c0);
  budget.push([
    'one whole step (loop run, process CPU / steps)',
    (c.user + c.system) / 1000 / whole.steps,
    '1',
  ]);
  const [sessionId] = await benchSessions(svc.db, tenant, 1);
  await send(svc.url, tenant, sessionId!, 'Run the bench chain.');
  await waitIdle(svc.db, tenant.tenantId, sessionId!);
  await svc.stopWorkers();
  const { db, redis, keys } = svc.workerDeps;
  const session = (await getSession(db, tenant.tenantId, sessionId!))!;
  const history = await loadHistory(db, tenant.tenantId, sessionId!, { fromSeq: session.boundarySeq });
  const messages = toModelMessages(filterCompacted(history), { steer: true, resendsReasoning: false });
  const model = createModel('compatible/mock', { apiKey: 'bench-key', baseURL: mockUrl });
  const tools = [
    { name: 'read_output', description: 'Read a stored output', inputSchema: { type: 'object' } },
  ];
  budget.push([
    `model call: streamStep to the mock, ${messages.length} messages (AI SDK, HTTP, SSE parsing)`,
    await cpuPer(30, async () => {
      for await (const _ of streamStep({
        model,
        system: ['You are a helpful assistant.'],
        messages,
        tools,
      })) {
        // drain
      }
    }),
    '1',
  ]);
  budget.push([
    `history: getSession + loadHistory + filterCompacted (${history.length} messages)`,
    await cpuPer(50, async () => {
      const s = await getSession(db, tenant.tenantId, sessionId!);
      filterCompacted(await loadHistory(db, tenant.tenantId, sessionId!, { fromSeq: s!.boundarySeq }));
    }),
    '1',
  ]);
  const fence = await acquireFence(db, tenant.tenantId, sessionId!);
  const f = { tenantId: tenant.tenantId, sessionId: sessionId!, fence };
  const last = history.at(-1)!;
  const part: Part = {
    id: newId('prt'),
    sessionId: sessionId!,
    messageId: last.info.id,
    tokens: 1,
    type: 'text',
    text: 'x',
  };
  await withFence(db, f, (trx) => insertPart(trx, f.tenantId, part));
  budget.push([
    'fenced write: BEGIN, fence UPDATE, one part UPDATE, COMMIT',
    await cpuPer(200, (i) =>
      withFence(db, f, (trx) => updatePart(trx, f.tenantId, { ...part, text: `x${i}` })),
    ),
    '3',
  ]);
  budget.push([
    'event publish: one XADD + EXPIRE pipeline',
    await cpuPer(300, () => publishEvents(redis, keys, sessionId!, [{ type: 'part.updated', part }])),
    '4',
  ]);
  const chainCpu0 = process.cpuUsage();
  const chainRun = await ceilingOnce();
  const chainCpu = process.cpuUsage(chainCpu0);
  budget.push([
    'bare chain job (BullMQ fetch/finish, lock, one INSERT, next job)',
    (chainCpu.user + chainCpu.system) / 1000 / (chainRun.periods.length + 1),
    '1',
  ]);
  budget.push([
    'bare durable step job (BullMQ fetch/finish, lock, fence bump, message + 3 parts, XADD, next job)',
    (await ceilingOnce('durable')).cpu,
    '1',
  ]);
}

await chainDb.destroy();
await svc.close();
await mock.stop();

const steps = loops.reduce((s, l) => s + l.steps, 0);
const perStep = (n: number) => n / steps;
const allSql = new Map<string, number>();
const allRedis = new Map<string, number>();
for (const l of loops) {
  for (const [k, v] of l.sql) allSql.set(k, (allSql.get(k) ?? 0) + v);
  for (const [k, v] of l.redis) allRedis.set(k, (allRedis.get(k) ?? 0) + v);
}
const queriesPerStep = perStep(loops.reduce((s, l) => s + l.queries, 0));
const commandsPerStep = perStep(loops.reduce((s, l) => s + l.commands, 0));
const ceilingSteps = ceilings.reduce((s, c) => s + c.periods.length + 1, 0);
const ceilingQueries = ceilings.reduce((s, c) => s + c.queries, 0) / ceilingSteps;
const ceilingCommands = ceilings.reduce((s, c) => s + c.commands, 0) / ceilingSteps;
const durableSteps = durables.reduce((s, c) => s + c.periods.length + 1, 0);
const durableQueries = durables.reduce((s, c) => s + c.queries, 0) / durableSteps;
const durableCommands = durables.reduce((s, c) => s + c.commands, 0) / durableSteps;

const p50 = loops.map((l) => percentile(l.overhead, 50));
const p99 = loops.map((l) => percentile(l.overhead, 99));
const c50 = ceilings.map((c) => percentile(c.periods, 50));
const c99 = ceilings.map((c) => percentile(c.periods, 99));
const d50 = durables.map((c) => percentile(c.periods, 50));
const d99 = durables.map((c) => percentile(c.periods, 99));
const cpuLoop = loops.map((l) => l.cpu);
const cpuDurable = durables.map((c) => c.cpu);
const cpuChain = ceilings.map((c) => c.cpu);

const queryTable = [
  '| per step | statement (normalised) |',
  '| ---: | --- |',
  ...topShapes(allSql, steps, 20).map(([k, v]) => `| ${fmt(v)} | \`${k.replace(/\|/g, '\\|')}\` |`),
];
const redisTable = [
  '| per step | Redis command |',
  '| ---: | --- |',
  ...topShapes(allRedis, steps, 15).map(([k, v]) => `| ${fmt(v)} | \`${k}\` |`),
];

if (process.env.BENCH_SHAPES) {
  log(`per step: ${fmt(queriesPerStep)} statements, ${fmt(commandsPerStep)} Redis commands`);
  log(
    [
      ...topShapes(allSql, steps, 60).map(([k, v]) => `${fmt(v)}  ${k}`),
      ...topShapes(allRedis, steps, 30).map(([k, v]) => `${fmt(v)}  ${k}`),
    ].join('\n'),
  );
}

let result: FigureResult;
if (profile) {
  mkdirSync(OUT_DIR, { recursive: true });
  const file = path.join(OUT_DIR, 'step.cpuprofile');
  saveProfile(profile, file);
  const s = summarizeProfile(profile, 25);
  const active = s.totalMs - s.idleMs;
  const perStepMs = active / steps;
  result = {
    name: 'profile',
    title: 'Profile of the step path',
    rows: [],
    details: [
      `${args.runs} one-session chains of ${STEPS} steps (${steps} steps) under V8's sampling profiler (200 µs), ` +
        `worker in the bench process, mock model in a child process. Wall ${fmt(s.totalMs / 1000)} s, ` +
        `of which on-CPU ${fmt(active / 1000)} s (${fmt((active / s.totalMs) * 100, 0)} %), ` +
        `i.e. ${fmt(perStepMs)} ms of main-thread CPU per step. Raw profile: \`bench/out/step.cpuprofile\`.`,
      '',
      'CPU per step, and what its parts cost when run alone in the same process (process CPU: user + ' +
        'system, all threads):',
      '',
      '| | CPU ms each | times per step |',
      '| --- | ---: | ---: |',
      ...budget.map(([what, ms, times]) => `| ${what} | ${fmt(ms)} | ${times} |`),
      '',
      'Self time by package:',
      '',
      '| package | self ms | % of CPU | ms per step |',
      '| --- | ---: | ---: | ---: |',
      ...s.categories
        .slice(0, 16)
        .map(
          (c) =>
            `| ${c.category} | ${fmt(c.ms)} | ${fmt((c.ms / active) * 100, 1)} | ${fmt(c.ms / steps, 3)} |`,
        ),
      '',
      'Top functions by self time:',
      '',
      '| self ms | % | function | where |',
      '| ---: | ---: | --- | --- |',
      ...s.functions.map(
        (f) =>
          `| ${fmt(f.ms)} | ${fmt((f.ms / active) * 100, 1)} | \`${f.name}\` | ${f.where || f.category} |`,
      ),
      '',
      `Statements per step: **${fmt(queriesPerStep, 1)} PostgreSQL statements** (BEGIN/COMMIT included) and ` +
        `**${fmt(commandsPerStep, 1)} Redis commands** per step (the exit job of each run included).`,
      '',
      ...queryTable,
      '',
      ...redisTable,
    ],
    elapsedMs: performance.now() - started,
  };
} else {
  result = {
    name: 'step',
    title: 'Step overhead, one session',
    rows: [
      {
        figure: 'step overhead p50, 1 session',
        unit: 'ms',
        loopline: summarize(p50),
        ceilingLabel: 'bare durable step period p50',
        ceiling: summarize(d50),
        ratio: ratioOf(p50, d50),
        target: '≤ 2× ceiling',
        met: ratioOf(p50, d50).median <= 2,
      },
      {
        figure: 'step overhead p99, 1 session',
        unit: 'ms',
        loopline: summarize(p99),
        ceilingLabel: 'bare durable step period p99',
        ceiling: summarize(d99),
        ratio: ratioOf(p99, d99),
        target: '≤ 4× ceiling',
        met: ratioOf(p99, d99).median <= 4,
      },
      {
        figure: 'step overhead p50, 1 session (old ceiling)',
        unit: 'ms',
        loopline: summarize(p50),
        ceilingLabel: 'bare chain period p50 (lock + one row)',
        ceiling: summarize(c50),
        ratio: ratioOf(p50, c50),
        target: '—',
        met: null,
      },
      {
        figure: 'step CPU per step, 1 session',
        unit: 'ms',
        loopline: summarize(cpuLoop),
        ceilingLabel: 'bare durable step CPU per step',
        ceiling: summarize(cpuDurable),
        ratio: ratioOf(cpuLoop, cpuDurable),
        target: '—',
        met: null,
        note: 'process CPU (user + system) of the process running the worker, per step',
      },
    ],
    details: [
      `${args.runs} runs; each run is one new session whose loop makes ${STEPS} model calls (agent maxSteps ` +
        `${STEPS}: ${STEPS - 1} steps that answer "Checking." plus one read_output call, then the wrap-up), ` +
        'then one bare durable step chain and one bare chain of the same length (lib/durable-step.ts, ' +
        'lib/bare-chain.ts), in this order every run. Step overhead = period between consecutive steps ' +
        '(steps.started_at) minus the model round trip of that step (the recorded request replayed to the ' +
        `mock from a plain HTTP client). With ${STEPS - 1} periods per run, a run's p99 is its slowest step.`,
      '',
      'CPU per step is the process CPU (user + system, all threads) of this process while the loop or the ' +
        'chain runs, divided by its steps: the worker runs in this process (the gateway too, which serves ' +
        'one POST per run, and the poll of the session row every 100 ms), the mock model in a child process.',
      '',
      '| run | step period p50 / p99 / max | model round trip p50 | overhead p50 / p99 | CPU per step | bare durable step p50 / p99 | its CPU per step | bare chain p50 / p99 | its CPU per step |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...loops.map(
        (l, i) =>
          `| ${i + 1} | ${fmt(percentile(l.periods, 50))} / ${fmt(percentile(l.periods, 99))} / ` +
          `${fmt(Math.max(...l.periods))} ms | ` +
          `${fmt(median(l.model))} ms | ${fmt(p50[i]!)} / ${fmt(p99[i]!)} ms | ${fmt(cpuLoop[i]!)} ms | ` +
          `${fmt(d50[i]!)} / ${fmt(d99[i]!)} ms | ${fmt(cpuDurable[i]!)} ms | ` +
          `${fmt(c50[i]!)} / ${fmt(c99[i]!)} ms | ${fmt(cpuChain[i]!)} ms |`,
      ),
      '',
      `Per step: Loopline's worker sends ${fmt(queriesPerStep, 1)} PostgreSQL statements and ` +
        `${fmt(commandsPerStep, 1)} Redis commands; the bare durable step ${fmt(durableQueries, 1)} and ` +
        `${fmt(durableCommands, 1)}; the bare chain ${fmt(ceilingQueries, 1)} and ${fmt(ceilingCommands, 1)} ` +
        "(BullMQ's own commands included).",
    ],
    elapsedMs: performance.now() - started,
  };
}
emit(result);
process.exit(0);
