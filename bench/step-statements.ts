import { counts, installCounters, resetCounts } from './lib/counters.ts';
import { forkChild } from './lib/proc.ts';
import {
  benchSessions,
  benchTenant,
  send,
  startService,
  WORKER_CONNECTION_NAME,
  waitIdle,
} from './lib/service.ts';

// PostgreSQL statements and Redis commands of the worker per step, by shape: one session runs the
// bench chain (text + one read_output call per step, STEPS steps) on in-process workers with the
// production settings, and the worker's named connections are counted (lib/counters.ts).
//   node bench/step-statements.ts [steps=40]
// READ_OUTPUT=1: the agent lists read_output, so each step's call is a valid one that runs.

const STEPS = Number(process.argv[2] ?? 40);
const mock = forkChild('lib/mock-child.ts');
const { url: mockUrl } = (await mock.ready) as { url: string };
const svc = await startService({ label: 'stmts', mockUrl });
const tenant = await benchTenant(svc.db, {
  maxSteps: STEPS,
  ...(process.env.READ_OUTPUT === '1' ? { tools: ['read_output'] } : {}),
});
svc.startWorkers();

async function run() {
  const [sessionId] = await benchSessions(svc.db, tenant, 1);
  installCounters(WORKER_CONNECTION_NAME);
  resetCounts();
  await send(svc.url, tenant, sessionId!, 'Run the bench chain.');
  const final = await waitIdle(svc.db, tenant.tenantId, sessionId!);
  if (final.status !== 'idle') throw new Error(`session ended ${final.status}: ${final.statusDetail}`);
  return counts();
}

await run(); // warm-up
const c = await run();
const per = (n: number) => (n / STEPS).toFixed(2);
process.stdout.write(
  `${STEPS} steps: ${per(c.queries)} statements/step, ${per(c.commands)} redis commands/step\n`,
);
process.stdout.write('\nPostgreSQL (per step):\n');
for (const [k, v] of [...c.sql.entries()].sort((a, b) => b[1] - a[1]))
  process.stdout.write(`  ${per(v)}  ${k}\n`);
process.stdout.write('\nRedis (per step):\n');
for (const [k, v] of [...c.redis.entries()].sort((a, b) => b[1] - a[1]))
  process.stdout.write(`  ${per(v)}  ${k}\n`);
await svc.close();
await mock.stop();
process.exit(0);
