import { performance } from 'node:perf_hooks';
import type { Tokenizer } from '@loopline/core';
import { forkChild } from './lib/proc.ts';
import { benchSessions, benchTenant, send, startService, waitIdle } from './lib/service.ts';

// The tokenizer's share of the worker's CPU per step: one session runs the bench chain (text + one
// read_output call per step, STEPS steps, `read_output` listed so each call runs and its result is
// counted) on in-process workers; the worker's tokenizer is wrapped to time every count.
// CPU is this process's (worker and gateway; the mock model runs in a child), per step, after a
// warm-up run, over ROUNDS runs (median and spread).
//   node bench/step-tokens.ts [steps=40] [rounds=5]

const STEPS = Number(process.argv[2] ?? 40);
const ROUNDS = Number(process.argv[3] ?? 5);
const mock = forkChild('lib/mock-child.ts');
const { url: mockUrl } = (await mock.ready) as { url: string };
const svc = await startService({ label: 'tokens', mockUrl });
const tenant = await benchTenant(svc.db, { maxSteps: STEPS, tools: ['read_output'] });

let calls = 0;
let ms = 0;
let chars = 0;
const inner: Tokenizer = svc.workerDeps.tokenizer;
svc.workerDeps.tokenizer = {
  name: inner.name,
  count(text: string) {
    const t0 = performance.now();
    const n = inner.count(text);
    ms += performance.now() - t0;
    calls++;
    chars += text.length;
    return n;
  },
};
svc.startWorkers();

async function run() {
  const [sessionId] = await benchSessions(svc.db, tenant, 1);
  calls = 0;
  ms = 0;
  chars = 0;
  const cpu0 = process.cpuUsage();
  await send(svc.url, tenant, sessionId!, 'Run the bench chain.');
  const final = await waitIdle(svc.db, tenant.tenantId, sessionId!);
  if (final.status !== 'idle') throw new Error(`session ended ${final.status}: ${final.statusDetail}`);
  const cpu = process.cpuUsage(cpu0);
  return {
    cpuMs: (cpu.user + cpu.system) / 1000 / STEPS,
    tokMs: ms / STEPS,
    calls: calls / STEPS,
    chars: chars / STEPS,
  };
}

await run(); // warm-up
const rows: Array<Awaited<ReturnType<typeof run>>> = [];
for (let i = 0; i < ROUNDS; i++) rows.push(await run());
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (k: 'cpuMs' | 'tokMs' | 'calls' | 'chars', d: number) => {
  const xs = rows.map((r) => r[k]);
  return `${median(xs).toFixed(d)} [${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}]`;
};
const shares = rows.map((r) => (100 * r.tokMs) / r.cpuMs);
process.stdout.write(
  `${STEPS} steps × ${ROUNDS} rounds, per step (median [min–max]):\n` +
    `  process CPU   ${fmt('cpuMs', 2)} ms\n` +
    `  tokenizer     ${fmt('tokMs', 3)} ms, ${fmt('calls', 1)} counts, ${fmt('chars', 0)} chars\n` +
    `  share         ${median(shares).toFixed(1)} % [${Math.min(...shares).toFixed(1)}–${Math.max(...shares).toFixed(1)}]\n`,
);
await svc.close();
await mock.stop();
process.exit(0);
