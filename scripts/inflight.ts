// Measures how many model calls ONE worker process keeps in flight with its default settings,
// against a mock model that takes a realistic time per call (issue 11). Not a test: it prints
// numbers. Usage (from the repository root, after `. scripts/toolchain.sh`):
//
//   node scripts/inflight.ts [sessions=1000] [callMs=2000]
//   INFLIGHT_WORKER_ENV='WORKER_STEP_CONCURRENCY=16' node scripts/inflight.ts   # compare a setting
//
// What it does: a fresh database and Redis namespace, the gateway and the mock model in this
// process, the real worker (`node --max-semi-space-size=8 apps/worker/src/main.ts`, as deployed)
// in a child process. N sessions each get one message; every turn is two model calls (a
// read_output tool call, then the answer), each streamed over ~callMs. Sampled every 100 ms: the
// mock's in-flight requests and the worker's RSS; at the end the worker's VmHWM (peak RSS), how
// many turns finished, and the wall time. Titles are off (one more model call per session, on its
// own queue of concurrency 2).

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
// The workspace packages by path: scripts/ is not a package of its own.
import { buildApp } from '../apps/gateway/src/index.ts';
import { createTokenizer } from '../packages/llm/src/index.ts';
import { startMockLlm } from '../packages/mock-llm/src/index.ts';
import { createQueues, createRedis, keySpace } from '../packages/queue/src/index.ts';
import { createTestDatabase, makeAgent, makeSession, makeTenant } from '../packages/testkit/src/index.ts';

// The script's own knobs (read once; not service configuration).
const env: Record<string, string | undefined> = process.env;
const SESSIONS = Number(process.argv[2] ?? 1000);
const CALL_MS = Number(process.argv[3] ?? 2000);
const REDIS_URL = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const root = new URL('../', import.meta.url).pathname;
const METRICS_PORT = 20_000 + Math.floor(Math.random() * 20_000);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const out = (line: string) => process.stdout.write(`${line}\n`);

function memOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

// A chat stream of "Checking." is 5 SSE events (role, text, finish, usage, [DONE] trailer): the
// mock sleeps latencyMs between events, so 4 gaps make one call.
const GAPS = 4;
const reply = { text: 'Checking.', toolCalls: [{ name: 'read_output', arguments: { outputId: 'out_x' } }] };
const mock = await startMockLlm({
  scenario: {
    latencyMs: Math.round(CALL_MS / GAPS),
    rules: [{ when: { lastMessageRole: 'user' }, reply }],
    default: { text: 'Done.' },
  },
  tokenMemo: true,
});

const database = await createTestDatabase();
const namespace = `inflight-${randomUUID().slice(0, 8)}`;
const keys = keySpace(namespace);
const redis = createRedis({ url: REDIS_URL }, { maxRetriesPerRequest: null });
const queues = createQueues(redis, keys);
const app = await buildApp({
  db: database.db,
  redis,
  queues,
  keys,
  tokenizer: createTokenizer('o200k_base'),
  operatorToken: randomUUID(),
  logger: false,
});
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

const { tenant, apiKey } = await makeTenant(database.db);
const agent = await makeAgent(database.db, tenant.id, { name: 'inflight', model: 'compatible/mock' });
const ids: string[] = [];
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (ids.length < SESSIONS) {
      const s = await makeSession(database.db, tenant.id, { agent });
      if (ids.length < SESSIONS) ids.push(s.id);
    }
  }),
);

const extraEnv = Object.fromEntries(
  (env.INFLIGHT_WORKER_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
// INFLIGHT_WORKER_ARGS: more node flags for the worker (e.g. --trace-gc).
const nodeArgs = ['--max-semi-space-size=8', ...(env.INFLIGHT_WORKER_ARGS ?? '').split(' ').filter(Boolean)];
const worker = spawn(process.execPath, [...nodeArgs, `${root}apps/worker/src/main.ts`], {
  env: {
    ...process.env,
    DATABASE_URL: database.url,
    REDIS_URL,
    LOOPLINE_NAMESPACE: namespace,
    OPENAI_BASE_URL: mock.url,
    OPENAI_API_KEY: 'inflight-key',
    LOOPLINE_DISABLE_TITLES: '1',
    LOG_LEVEL: 'warn',
    // Its /metrics, read while the calls are held: V8 heap and external memory beside RSS.
    WORKER_METRICS_PORT: String(METRICS_PORT),
    // glibc's malloc arenas as deployed (docs/DEPLOYMENT.md, worker memory).
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '2',
    ...extraEnv,
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const pid = worker.pid ?? -1;
await sleep(3_000); // started, migrations checked, idle
const idle = memOf(pid);
out(`worker idle: RSS ${idle?.rss.toFixed(0)} MiB (settings: ${JSON.stringify(extraEnv)})`);

const count = async (where: (q: any) => any, table: 'sessions' | 'steps' = 'sessions') => {
  const row = await where(database.db.selectFrom(table))
    .select((eb: any) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
};
const finished = () => count((q) => q.where('status', '=', 'idle').where('step_count', '>=', 2));

// INFLIGHT_SNAPSHOT_AT=n: a heap snapshot of the worker (run with
// INFLIGHT_WORKER_ARGS=--heapsnapshot-signal=SIGUSR2) the first time n calls are in flight.
const snapshotAt = Number(env.INFLIGHT_SNAPSHOT_AT ?? 0);
let snapshotTaken = false;
let maxRss = 0;
const timeline: string[] = [];
let lastMark = 0;
const t0 = performance.now();
const sampler = setInterval(() => {
  const m = memOf(pid);
  if (m) maxRss = Math.max(maxRss, m.rss);
  if (snapshotAt > 0 && !snapshotTaken && mock.inFlight >= snapshotAt) {
    snapshotTaken = true;
    process.kill(pid, 'SIGUSR2');
  }
  const at = performance.now() - t0;
  if (at - lastMark >= 2_000) {
    lastMark = at;
    timeline.push(`${(at / 1000).toFixed(0)}s: in flight ${mock.inFlight}, rss ${m?.rss.toFixed(0)} MiB`);
  }
}, 100);

// INFLIGHT_HOLD=1: the mock answers nothing until every session's first model call is open (or
// a minute passed): how many calls one worker holds at once, and its memory then, whatever the
// speed of this machine.
const hold = env.INFLIGHT_HOLD === '1';
if (hold) mock.holdAll();
// One message per session through the gateway, 32 requests at a time.
let next = 0;
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      const res = await fetch(`${url}/v1/sessions/${id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'Please check.' }),
      });
      if (res.status !== 202) throw new Error(`send: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
  }),
);
const sent = performance.now() - t0;
if (hold) {
  const until = Date.now() + 60_000;
  while (mock.inFlight < SESSIONS && Date.now() < until) await sleep(100);
  const m = memOf(pid);
  out(
    `held: ${mock.inFlight} model calls open at once after ${((performance.now() - t0) / 1000).toFixed(1)} s, ` +
      `worker RSS ${m?.rss.toFixed(0)} MiB (VmHWM ${m?.hwm.toFixed(0)} MiB)`,
  );
  const metrics = await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)
    .then((r) => r.text())
    .catch(() => '');
  const mib = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(metrics);
    return m ? `${(Number(m[1]) / 1048576).toFixed(0)} MiB` : '?';
  };
  out(
    `  then: V8 heap used ${mib('nodejs_heap_size_used_bytes')} of ${mib('nodejs_heap_size_total_bytes')}, ` +
      `external ${mib('nodejs_external_memory_bytes')}`,
  );
  mock.releaseAll();
}

const deadline = Date.now() + Math.max(120_000, SESSIONS * CALL_MS * 2);
let done = 0;
while (Date.now() < deadline) {
  done = await finished();
  if (done >= SESSIONS) break;
  await sleep(250);
}
const wall = performance.now() - t0;
clearInterval(sampler);
const end = memOf(pid);
const errored = await count((q) => q.where('status', '=', 'error'));
const steps = await count((q) => q.where('kind', '=', 'step'), 'steps');
const interrupted = await count(
  (q) => q.where('kind', '=', 'step').where('outcome', '=', 'interrupted'),
  'steps',
);

for (const line of timeline) out(`  ${line}`);
out(`sessions ${SESSIONS}, model call ≈ ${CALL_MS} ms (${mock.calls.length} calls)`);
out(
  `messages sent in ${(sent / 1000).toFixed(1)} s; turns finished ${done}/${SESSIONS} in ${(wall / 1000).toFixed(1)} s`,
);
out(`max in flight at the mock: ${mock.maxInFlight}`);
out(
  `worker RSS: idle ${idle?.rss.toFixed(0)} MiB, max sampled ${maxRss.toFixed(0)} MiB, VmHWM ${end?.hwm.toFixed(0)} MiB`,
);
out(`errored sessions ${errored}; step rows ${steps} (interrupted ${interrupted})`);

worker.kill('SIGTERM');
await new Promise<void>((r) => {
  const t = setTimeout(() => {
    worker.kill('SIGKILL');
    r();
  }, 10_000);
  worker.once('exit', () => {
    clearTimeout(t);
    r();
  });
});
await app.close();
await queues.close();
await mock.close();
// The namespace's keys go with it (the measurement leaves nothing behind).
let cursor = '0';
do {
  const [c, found] = await redis.scan(cursor, 'MATCH', `*${namespace}*`, 'COUNT', 1000);
  cursor = c;
  if (found.length > 0) await redis.del(...found);
} while (cursor !== '0');
redis.disconnect();
await database.drop();
process.exit(done >= SESSIONS ? 0 : 1);
