import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { figureArgs } from '../lib/args.ts';
import { type CpuProfile, saveProfile, startProfiler } from '../lib/cpuprofile.ts';
import { forkChild, OUT_DIR } from '../lib/proc.ts';
import { emit, log, type Row, ratioOf } from '../lib/result.ts';
import { seedHistory } from '../lib/seed.ts';
import { benchSessions, benchTenant, send, startService, waitIdle } from '../lib/service.ts';
import { fmt, median, percentile, summarize } from '../lib/stats.ts';

// History-length scaling of a step: the same one-session loop as step-overhead.ts, in sessions
// whose history holds 100, 1,000 and 10,000 messages since the compaction boundary (seeded with
// lib/seed.ts: a completed boundary, then alternating user / assistant turns with a text part, a
// completed read_output call of ~1 KB and usage). Per size: step period, model round trip
// (replayed), step overhead, and the CPU per step of this process (where the worker runs), next
// to the time JSON.stringify takes on the same request body (measured apart, in the mock's
// process): serialising the request necessarily grows with the history, so the CPU target is
// read without it. Every round runs the three sizes one after the other (order rotating).
// Each measured turn is followed by a second turn of the same session ("cached"): the first turn's
// first step loads the whole history (the worker never saw the seeded session), the second finds
// it in the worker's session cache, as a session's next turn does on the worker that ran the last
// one; reported in rows of their own, and the CPU target is read on that steady state too (the first
// turn adds the one-time load of the log, and the collection of what the previous size left). After
// its two turns a session is dropped from the worker's cache.
// With --profile: each size's runs under V8's sampling profiler, one profile per size
// (bench/out/scaling-<n>.cpuprofile; summarise with lib/prof-summary.ts, units = the steps).

const args = figureArgs({ runs: 3, quickRuns: 2 });
const STEPS = args.quick ? 8 : 20;
const SIZES = [100, 1_000, 10_000] as const;
const started = performance.now();

const mock = forkChild('lib/mock-child.ts');
const { url: mockUrl } = (await mock.ready) as { url: string };
const svc = await startService({ label: 'scaling', mockUrl });
// The seeded history stays as it is: no prune pass between rounds, no compaction (the window is
// far above 10,000 messages' ~2M tokens anyway).
svc.workerDeps.flags = { ...svc.workerDeps.flags, disablePrune: true, disableAutocompact: true };
const tenant = await benchTenant(svc.db, {
  maxSteps: STEPS,
  limits: { context: 10_000_000, output: 4_096 },
});

/** A session with `n` messages since its compaction boundary (and the boundary's two before). */
async function seeded(n: number): Promise<string> {
  const [id] = await benchSessions(svc.db, tenant, 1);
  await seedHistory(svc.db, { tenantId: tenant.tenantId, sessionId: id!, messages: n + 2, recent: n });
  return id!;
}

log(`history scaling: ${args.runs} rounds of ${SIZES.join(' / ')} messages, ${STEPS} steps each; seeding …`);
const seedStart = performance.now();
const sessions = new Map<number, string[]>();
for (const n of SIZES) {
  const ids: string[] = [];
  // One session per round, and a spare one at 100 messages for the warm-up.
  for (let r = 0; r < args.runs + (n === 100 ? 1 : 0); r++) ids.push(await seeded(n));
  sessions.set(n, ids);
}
await sql`analyze messages`.execute(svc.db);
await sql`analyze parts`.execute(svc.db);
const seedMs = performance.now() - seedStart;
svc.startWorkers();

interface SizeRun {
  periods: number[];
  model: number[];
  overhead: number[];
  /** Process CPU per step, ms. */
  cpu: number;
  /** JSON.stringify of the step's request body, median per step, ms. */
  serialise: number;
  steps: number;
}

const profiles = new Map<number, CpuProfile>();

async function loopRun(sessionId: string, size?: number): Promise<SizeRun> {
  await mock.request({ type: 'reset' });
  const stopProfile =
    args.profile && size !== undefined && !profiles.has(size) ? await startProfiler() : undefined;
  // This turn's steps only: the session's earlier turns are in the same table.
  const before = await sql<{ step: number | null }>`
    select max(step)::int as step from steps
    where session_id = ${sessionId} and kind = 'step'`.execute(svc.db);
  const after = before.rows[0]?.step ?? -1;
  const cpu0 = process.cpuUsage();
  await send(svc.url, tenant, sessionId, 'Run the bench chain.');
  // Polled every 250 ms: the poll runs in this process and its CPU is counted with the steps'.
  const final = await waitIdle(svc.db, tenant.tenantId, sessionId, 300_000, 250);
  const cpu = process.cpuUsage(cpu0);
  if (stopProfile) profiles.set(size!, await stopProfile());
  if (final.status !== 'idle') throw new Error(`session ended ${final.status}: ${final.statusDetail}`);
  const { rows } = await sql<{ ms: number }>`
    select (extract(epoch from started_at) * 1000)::float8 as ms from steps
    where session_id = ${sessionId} and kind = 'step' and step > ${after} order by step`.execute(svc.db);
  const starts = rows.map((r) => r.ms);
  const bodies = (await mock.request<number[]>({ type: 'serialise' })) ?? [];
  const model = (await mock.request<number[]>({ type: 'replay' })) ?? [];
  const periods: number[] = [];
  const overhead: number[] = [];
  for (let i = 1; i < starts.length; i++) {
    const period = starts[i]! - starts[i - 1]!;
    periods.push(period);
    overhead.push(period - (model[i - 1] ?? 0));
  }
  return {
    periods,
    model,
    overhead,
    cpu: (cpu.user + cpu.system) / 1000 / starts.length,
    serialise: median(bodies),
    steps: starts.length,
  };
}

// Warm-up: JIT, pools, on the spare 100-message session.
await loopRun(sessions.get(100)![args.runs]!);
const runs = new Map<number, SizeRun[]>(SIZES.map((n) => [n, []]));
const cached = new Map<number, SizeRun[]>(SIZES.map((n) => [n, []]));
for (let r = 0; r < args.runs; r++) {
  const order = SIZES.map((_, i) => SIZES[(i + r) % SIZES.length]!);
  for (const n of order) {
    runs.get(n)!.push(await loopRun(sessions.get(n)![r]!, n));
    cached.get(n)!.push(await loopRun(sessions.get(n)![r]!));
    // Done with this session: the worker's cache lets go of its log, so a 10,000-message log held
    // from one size does not weigh on the collections of the next size's turns.
    svc.workerDeps.sessionCache?.delete(sessions.get(n)![r]!);
  }
  log(
    `  round ${r + 1}: ` +
      SIZES.map((n) => {
        const x = runs.get(n)!.at(-1)!;
        return (
          `${n} messages: overhead p50 ${fmt(percentile(x.overhead, 50))} ms, CPU ${fmt(x.cpu)} ms/step ` +
          `(serialise ${fmt(x.serialise)} ms; cached ${fmt(cached.get(n)!.at(-1)!.cpu)} ms/step)`
        );
      }).join('; '),
  );
}
await svc.close();
await mock.stop();
for (const [n, profile] of profiles) {
  // The first run of each size (its CPU figures carry the profiler's overhead).
  const file = path.join(OUT_DIR, `scaling-${n}.cpuprofile`);
  saveProfile(profile, file);
  log(`profile of ${n} messages (${runs.get(n)![0]!.steps} steps): ${file}`);
}

const cpuOf = (n: number) => runs.get(n)!.map((x) => x.cpu);
const cpuEx = (n: number) => runs.get(n)!.map((x) => x.cpu - x.serialise);
const p50Of = (n: number) => runs.get(n)!.map((x) => percentile(x.overhead, 50));
const cachedEx = (n: number) => cached.get(n)!.map((x) => x.cpu - x.serialise);
const cachedCpu = (n: number) => cached.get(n)!.map((x) => x.cpu);
const skippedOverhead: string[] = [];

/** A row of values at one size against the same at 100 messages, round by round. */
function against100(figure: string, values: number[], base: number[], extra: Partial<Row> = {}): Row {
  return {
    figure,
    unit: 'ms',
    loopline: summarize(values),
    ceilingLabel: 'same at 100 messages',
    ceiling: summarize(base),
    ratio: ratioOf(values, base),
    target: '—',
    met: null,
    ...extra,
  };
}

// Overhead = the loop's period minus the model round trip replayed from a plain client. When the
// replayed round trip comes out longer than the period (a large body on a jittery VM: the mock's
// own parse of 10,000 messages dominates both), the difference is noise, not an overhead: such a
// round is left out of the overhead rows (its CPU rows stand), and the row says how many were.
function overheadRow(n: number): Row[] {
  const valid = runs
    .get(n)!
    .map((_, i) => i)
    .filter((i) => p50Of(n)[i]! > 0 && p50Of(100)[i]! > 0);
  const dropped = runs.get(n)!.length - valid.length;
  const figure = `step overhead p50, ${n.toLocaleString('en-US')} vs 100 messages since the boundary`;
  if (valid.length === 0) {
    skippedOverhead.push(
      `${figure}: no round measurable (the replayed model round trip exceeded the step period)`,
    );
    return [];
  }
  const at = (size: number) => valid.map((i) => p50Of(size)[i]!);
  const note = `${dropped} of ${runs.get(n)!.length} rounds left out: replayed model round trip ≥ the step period`;
  return [against100(figure, at(n), at(100), dropped > 0 ? { note } : {})];
}

const cpuRatio = ratioOf(cpuEx(1_000), cpuEx(100)).median;
const rows: Row[] = [
  against100('step CPU per step, 1,000 vs 100 messages since the boundary', cpuEx(1_000), cpuEx(100), {
    target: '≤ 1.5×',
    met: cpuRatio <= 1.5,
    note:
      'process CPU of the worker per step, serialising the request body excepted; with it: ' +
      `${fmt(median(cpuOf(1_000)))} vs ${fmt(median(cpuOf(100)))} ms`,
  }),
  against100('step CPU per step, 10,000 vs 100 messages since the boundary', cpuEx(10_000), cpuEx(100), {
    note:
      'serialising the request body excepted; with it: ' +
      `${fmt(median(cpuOf(10_000)))} vs ${fmt(median(cpuOf(100)))} ms`,
  }),
  ...[1_000, 10_000].map((n) =>
    against100(
      `step CPU per step, ${n.toLocaleString('en-US')} vs 100 messages, session cached (the next turn)`,
      cachedEx(n),
      cachedEx(100),
      {
        // The same target read on the steady state: the first turn carries the one-time load of the
        // log and whatever the previous size left for the collector, and moves far between runs.
        ...(n === 1_000 ? { target: '≤ 1.5×', met: ratioOf(cachedEx(n), cachedEx(100)).median <= 1.5 } : {}),
        note:
          "the turn after the measured one, its history in the worker's session cache; serialising the request " +
          `body excepted; with it: ${fmt(median(cachedCpu(n)))} vs ${fmt(median(cachedCpu(100)))} ms`,
      },
    ),
  ),
  ...[1_000, 10_000].flatMap((n) => overheadRow(n)),
];

emit({
  name: 'scaling',
  title: 'Step cost against history length',
  rows,
  details: [
    `${args.runs} rounds; each round runs one fresh session per size, the sizes one after the other (order ` +
      `rotating by round). A session holds a completed compaction boundary followed by 100, 1,000 or 10,000 ` +
      `messages (lib/seed.ts; ${fmt(seedMs / 1000)} s to seed all of them, then ANALYZE); its loop makes ` +
      `${STEPS} model calls (the same scenario as the step overhead figure). Worker in this process ` +
      '(prune and automatic compaction off so the history stays as seeded; agent window 10M tokens), ' +
      'mock model (zero latency) in a child process. Step overhead = period between steps minus the ' +
      "model round trip (replayed). CPU per step = this process' CPU (user + system) from the POST to idle, " +
      "divided by the steps (so it also carries the turn's fixed work, the POST, the wake-up and the turn's " +
      'end, and a poll of the session row every 250 ms, spread over the steps: this weighs most at 100 ' +
      "messages, so the ratios understate the growth a little; after its two turns a session leaves the worker's cache). " +
      'Serialise = JSON.stringify of the recorded request body (best of 3, in the ' +
      "mock's process), the median over the run's steps: the part of the step that must grow with the " +
      'history, shown apart and taken out of the CPU target. A round whose overhead p50 comes out ≤ 0 (the ' +
      'replayed round trip longer than the period: noise at that size on a jittery machine) is left out of ' +
      'the overhead rows.',
    ...skippedOverhead.map((line) => `Not measured in this run: ${line}.`),
    '',
    '| round | messages | step period p50 | model round trip p50 | overhead p50 / p99 | CPU per step | serialise | CPU without it |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...Array.from({ length: args.runs }, (_, r) =>
      SIZES.map((n) => {
        const x = runs.get(n)![r]!;
        return (
          `| ${r + 1} | ${n.toLocaleString('en-US')} | ${fmt(percentile(x.periods, 50))} ms | ${fmt(median(x.model))} ms | ` +
          `${fmt(percentile(x.overhead, 50))} / ${fmt(percentile(x.overhead, 99))} ms | ${fmt(x.cpu)} ms | ` +
          `${fmt(x.serialise)} ms | ${fmt(x.cpu - x.serialise)} ms |`
        );
      }),
    ).flat(),
    '',
    "The next turn of the same session (its history in the worker's session cache since the turn above):",
    '',
    '| round | messages | CPU per step | serialise | CPU without it |',
    '| ---: | ---: | ---: | ---: | ---: |',
    ...Array.from({ length: args.runs }, (_, r) =>
      SIZES.map((n) => {
        const x = cached.get(n)![r]!;
        return `| ${r + 1} | ${n.toLocaleString('en-US')} | ${fmt(x.cpu)} ms | ${fmt(x.serialise)} ms | ${fmt(x.cpu - x.serialise)} ms |`;
      }),
    ).flat(),
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
