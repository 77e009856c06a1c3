import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { closeDb, createDb } from '@loopline/db';
import { adminUrl } from '@loopline/testkit';
import { dropStaleBenchDatabases, type Machine, machine } from './lib/infra.ts';
import { BENCH_DIR, OUT_DIR } from './lib/proc.ts';
import type { FigureResult, Row } from './lib/result.ts';
import { fmt, fmtSummary } from './lib/stats.ts';

// The benchmark suite: every figure with its bare-machine ceiling measured in the same
// run, reported as a ratio, median and spread (min–max) of several runs. Each figure runs in a
// process of its own (figures/*.ts); this runner collects their results, writes bench/RESULTS.md
// and prints the table. Benchmarks, not tests: nothing here fails on a timing.
//
//   pnpm bench [--quick] [--only step,gateway,…] [--skip profile] [--render]

const FIGURES = [
  { name: 'tokens', script: 'figures/tokens.ts' },
  { name: 'context', script: 'figures/context-check.ts' },
  { name: 'history', script: 'figures/history.ts' },
  { name: 'compaction', script: 'figures/compaction.ts' },
  { name: 'step', script: 'figures/step-overhead.ts' },
  { name: 'scaling', script: 'figures/history-scaling.ts' },
  { name: 'profile', script: 'figures/step-overhead.ts', args: ['--profile', '--runs', '2'] },
  { name: 'gateway', script: 'figures/gateway.ts' },
  { name: 'throughput', script: 'figures/throughput.ts' },
  { name: 'inflight', script: 'figures/inflight.ts' },
] as const;

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    skip: { type: 'string' },
    /** Write RESULTS.md again from bench/out/results.json (e.g. after editing profile-findings.md). */
    render: { type: 'boolean', default: false },
  },
});
const only = values.only?.split(',');
const skip = values.skip?.split(',') ?? [];
const selected = FIGURES.filter((f) => (!only || only.includes(f.name)) && !skip.includes(f.name));

function runFigure(script: string, args: readonly string[]): Promise<FigureResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(BENCH_DIR, script), ...args], {
      cwd: BENCH_DIR,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (line) resolve(JSON.parse(line.slice(7)) as FigureResult);
      else reject(new Error(`${script} exited with ${code} and no result:\n${out.slice(-2000)}`));
    });
  });
}

const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');

interface RunInfo {
  quick: boolean;
  elapsed: number;
  loadBefore: string;
  loads: Map<string, string>;
}

async function rerender() {
  const saved = JSON.parse(readFileSync(path.join(OUT_DIR, 'results.json'), 'utf8')) as {
    machine: Machine;
    results: FigureResult[];
    failures: string[];
    run: Omit<RunInfo, 'loads'> & { loads: Record<string, string> };
  };
  const run = { ...saved.run, loads: new Map(Object.entries(saved.run.loads)) };
  writeFileSync(
    path.join(BENCH_DIR, 'RESULTS.md'),
    render(saved.machine, saved.results, saved.failures, run),
  );
  console.log(
    `\n${table(saved.results).join('\n')}\n\nbench/RESULTS.md written from bench/out/results.json.`,
  );
}

async function main() {
  if (values.render) return rerender();
  const t0 = performance.now();
  mkdirSync(OUT_DIR, { recursive: true });
  const dropped = await dropStaleBenchDatabases();
  if (dropped > 0) console.error(`dropped ${dropped} database(s) left by an interrupted bench run`);
  const admin = createDb(adminUrl(), { max: 1 });
  const m = await machine(admin);
  await closeDb(admin);
  const loadBefore = load();
  console.error(
    `bench: ${selected.map((f) => f.name).join(', ')}${values.quick ? ' (quick)' : ''}; ` +
      `${m.cpus} CPUs, load ${loadBefore}`,
  );

  const results: FigureResult[] = [];
  const failures: string[] = [];
  const loads = new Map<string, string>();
  for (const figure of selected) {
    const args = [...('args' in figure ? figure.args : []), ...(values.quick ? ['--quick'] : [])];
    console.error(`\n== ${figure.name}`);
    loads.set(figure.name, load());
    // One retry: a figure that cannot start (a module missing mid-edit, a port taken) gets a second chance.
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        const result = await runFigure(figure.script, args);
        results.push(result);
        console.error(`   done in ${fmt(result.elapsedMs / 1000)} s`);
        break;
      } catch (err) {
        console.error(`   FAILED: ${(err as Error).message}`);
        if (attempt === 2) failures.push(`${figure.name}: ${(err as Error).message.split('\n')[0]}`);
        else await new Promise((r) => setTimeout(r, 20_000));
      }
    }
  }
  const elapsed = (performance.now() - t0) / 1000;
  const run: RunInfo = { quick: values.quick === true, elapsed, loadBefore, loads };
  const partial = only !== undefined || skip.length > 0;
  if (!partial) {
    const saved = { machine: m, results, failures, run: { ...run, loads: Object.fromEntries(loads) } };
    writeFileSync(path.join(OUT_DIR, 'results.json'), JSON.stringify(saved, null, 2));
  }
  const md = render(m, results, failures, run);
  // A partial run (--only/--skip) does not overwrite the full report.
  const target = partial ? path.join(OUT_DIR, 'RESULTS.partial.md') : path.join(BENCH_DIR, 'RESULTS.md');
  writeFileSync(target, md);
  console.log(`\n${table(results).join('\n')}\n`);
  console.log(`${path.relative(process.cwd(), target)} written (${fmt(elapsed)} s).`);
  if (failures.length > 0) console.log(`Failed figures:\n${failures.join('\n')}`);
}

function met(row: Row): string {
  if (row.met === null) return '—';
  return row.met ? 'yes' : '**no**';
}

// Report order: one session's step (against the bare durable step), its cost against history
// length, steps/s, gateway, memory and sessions in flight, history load, tokens, context, compaction.
// The longest matching prefix wins; an old ceiling's row comes after the rows of its figure.
const ORDER = [
  'step overhead p50, 1 session',
  'step overhead p99, 1 session',
  'step overhead p50, 1 session (old ceiling)',
  'step CPU per step, 1 session',
  'step CPU per step,',
  'step overhead p50, 1',
  'steps/s',
  'steps/s, 100 concurrent sessions (old ceiling)',
  'gateway',
  'gateway POST …/messages, 50 connections (old ceiling)',
  'worker RSS, 1,000 concurrent',
  'sessions in flight',
  'worker RSS',
  'step overhead p50 between',
  'history',
  'token',
  'context',
  'compaction',
];
const rank = (row: Row) => {
  let best = -1;
  for (const [i, prefix] of ORDER.entries())
    if (row.figure.startsWith(prefix) && (best < 0 || prefix.length > ORDER[best]!.length)) best = i;
  return best < 0 ? ORDER.length : best;
};

function table(results: FigureResult[]): string[] {
  const rows = results.flatMap((r) => r.rows).sort((a, b) => rank(a) - rank(b));
  return [
    '| Figure | Loopline | Ceiling (same run) | Ratio | Target | Met? |',
    '| --- | ---: | ---: | ---: | --- | :---: |',
    ...rows.map((row) => {
      const loop = fmtSummary(row.loopline, row.unit);
      const ceiling = row.ceiling ? `${fmtSummary(row.ceiling, row.unit)}<br>${row.ceilingLabel}` : '—';
      const ratio = row.ratio ? ratioText(row) : '—';
      const note = row.note ? `<br><sub>${row.note}</sub>` : '';
      return `| ${row.figure}${note} | ${loop} | ${ceiling} | ${ratio} | ${row.target} | ${met(row)} |`;
    }),
  ];
}

function ratioText(row: Row): string {
  const r = row.ratio!;
  // Throughput-like figures read better as a percentage of the ceiling.
  if (row.target.includes('%')) {
    const spread = r.runs.length > 1 ? ` (${fmt(r.min * 100, 1)}–${fmt(r.max * 100, 1)})` : '';
    return `${fmt(r.median * 100, 1)} %${spread}`;
  }
  return fmtSummary(r, '×', 2).replace(' ×', '×');
}

/** The section bench/trajectories.ts writes (its own command): carried over when the rest is rewritten. */
function trajectoriesSection(): string[] {
  const file = path.join(BENCH_DIR, 'RESULTS.md');
  if (!existsSync(file)) return [];
  const current = readFileSync(file, 'utf8');
  const start = current.indexOf('<!-- trajectories:start -->');
  const endMarker = '<!-- trajectories:end -->';
  const end = current.indexOf(endMarker);
  return start >= 0 && end > start ? [current.slice(start, end + endMarker.length), ''] : [];
}

function render(m: Machine, results: FigureResult[], failures: string[], run: RunInfo): string {
  const profile = results.find((r) => r.name === 'profile');
  const figures = results.filter((r) => r.name !== 'profile');
  const findings = path.join(BENCH_DIR, 'profile-findings.md');
  return [
    '# Loopline benchmarks',
    '',
    `Generated by \`pnpm bench\`${run.quick ? ' --quick' : ''} on ${m.date.slice(0, 16).replace('T', ' ')} UTC ` +
      `in ${fmt(run.elapsed / 60, 1)} min. Every ceiling is measured on the same machine in the same run; ` +
      'values are the median of the runs with the spread (min–max) in brackets; ratios are computed per run ' +
      'and summarised the same way. Mock model with zero latency, except in the sessions-in-flight figure ' +
      '(2 s per call). The step ceiling is the bare durable step (BullMQ job hop, Redis lock, fence bump, ' +
      'one transaction writing a message and three parts, one XADD), the gateway ceiling the bare durable ' +
      'POST (the same one-statement insert and BullMQ job add); the older, lighter ceilings (bare chain: ' +
      'lock + one row; Fastify route + one XADD) are kept as extra rows marked "old ceiling". These are ' +
      'benchmarks, not tests: CI never runs them and nothing fails on a timing.',
    '',
    '## Machine',
    '',
    '| | |',
    '| --- | --- |',
    `| CPUs (nproc) | ${m.cpus} × ${m.cpuModel} |`,
    `| memory | ${m.memoryGiB} GiB |`,
    `| kernel | ${m.kernel} |`,
    `| Node | ${m.node} |`,
    `| Redis | ${m.redis} |`,
    `| PostgreSQL | ${m.postgres} |`,
    `| load average at start (1 / 5 / 15 min) | ${run.loadBefore} |`,
    '',
    'All traffic goes to 127.0.0.1: Loopline, PostgreSQL, Redis, the mock model and the load generator ' +
      'share these CPUs, as do the ceilings.' +
      (Number.parseFloat(run.loadBefore) > m.cpus
        ? ` **The machine was busy with other work** (load ${run.loadBefore.split(' / ')[0]} on ${m.cpus} ` +
          'CPUs when the run started; each figure shows the load at its start): absolute times are ' +
          'inflated and spread wide; the ratios, measured side by side, hold better.'
        : ''),
    '',
    '## Results',
    '',
    ...table(figures),
    '',
    ...(failures.length > 0
      ? ['**Figures that failed to run:**', '', ...failures.map((f) => `- ${f}`), '']
      : []),
    '## How each figure is measured',
    '',
    ...figures.flatMap((r) => [
      `### ${r.title}`,
      '',
      `<sub>load average when it started: ${run.loads.get(r.name) ?? 'n/a'}; took ${fmt(r.elapsedMs / 1000)} s</sub>`,
      '',
      ...r.details,
      '',
    ]),
    '## Profile',
    '',
    ...(profile ? [...profile.details, ''] : ['(not run)', '']),
    ...(existsSync(findings) ? [readFileSync(findings, 'utf8').trim(), ''] : []),
    ...trajectoriesSection(),
  ].join('\n');
}

await main();
process.exit(0);
