import { forkChild } from './lib/proc.ts';
import { benchSessions, benchTenant, send, startService, waitIdle } from './lib/service.ts';

const STEPS = 100;
const mock = forkChild('lib/mock-child.ts');
const { url: mockUrl } = (await mock.ready) as { url: string };
const svc = await startService({ label: 'sys', mockUrl });
const tenant = await benchTenant(svc.db, { maxSteps: STEPS });
svc.startWorkers();
async function run() {
  const [sessionId] = await benchSessions(svc.db, tenant, 1);
  await mock.request({ type: 'reset' });
  await send(svc.url, tenant, sessionId!, 'Run the bench chain.');
  await waitIdle(svc.db, tenant.tenantId, sessionId!);
}
await run();
process.stderr.write(`READY ${process.pid}\n`);
await new Promise((r) => setTimeout(r, 3000));
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < 3; i++) await run();
const c = process.cpuUsage(c0);
process.stderr.write(
  `DONE cpu/step ${((c.user + c.system) / 1000 / 300).toFixed(2)} user ${(c.user / 1000 / 300).toFixed(2)} sys ${(c.system / 1000 / 300).toFixed(2)} wall/step ${((performance.now() - t0) / 300).toFixed(2)}\n`,
);
await new Promise((r) => setTimeout(r, 500));
process.exit(0);
