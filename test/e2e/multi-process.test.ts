import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { startMockLlm } from '@loopline/mock-llm';
import { createTestDatabase, type TestDatabase } from '@loopline/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolServer } from '../../apps/cli/src/demo-tools.ts';
import { WorkerPool } from '../support/procs.ts';
import { sleep, until } from '../support/wait.ts';

// Beyond one machine (docs/DEPLOYMENT.md): two gateway processes and two worker processes against
// one PostgreSQL database and one Redis namespace. Sessions are created on one gateway, their
// messages posted to the other, and their events read from the first; every session finishes,
// every step ran once (one ledger row per step, every tool call executed once) and both workers
// and both gateways did part of the work.

const root = new URL('../../', import.meta.url).pathname;
const logDir = path.join(root, '.local', 'logs', 'multi-process');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const OPERATOR = randomUUID();
const SESSIONS = 10;
const PARSE_YAML = 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))';

interface GatewayProc {
  n: number;
  child: ChildProcess;
  url: string;
  lines: Array<Record<string, unknown>>;
  exited: Promise<void>;
}

let database: TestDatabase;
let namespace: string;
let mock: Awaited<ReturnType<typeof startMockLlm>>;
let tools: Awaited<ReturnType<typeof startToolServer>>;
let pool: WorkerPool;
const gateways: GatewayProc[] = [];
const files: WriteStream[] = [];

/** `node apps/gateway/src/server.ts` on a free port; resolves once it logs its address. */
function startGateway(n: number): Promise<GatewayProc> {
  const child = spawn(process.execPath, [`${root}apps/gateway/src/server.ts`], {
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      REDIS_URL,
      LOOPLINE_NAMESPACE: namespace,
      LOOPLINE_OPERATOR_TOKEN: OPERATOR,
      // The model and tool servers run on loopback: the same provider and webhook settings as the
      // workers (the gateway checks agents and tools against them).
      OPENAI_BASE_URL: mock.url,
      LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      // The test polls sessions every 50 ms with one key: no per-key request limit here.
      LOOPLINE_RATE_LIMIT_PER_MINUTE: '0',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const file = createWriteStream(path.join(logDir, `gateway-${n}.log`));
  files.push(file);
  const lines: Array<Record<string, unknown>> = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    file.write(chunk);
    stderr = (stderr + chunk.toString('utf8')).slice(-4096);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gateway ${n} did not listen within 45 s: ${stderr}`)),
      45_000,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway ${n} exited (${code}) before listening: ${stderr}`));
    });
    let buf = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      file.write(chunk);
      buf += chunk.toString('utf8');
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let line: Record<string, unknown>;
        try {
          line = JSON.parse(text);
        } catch {
          line = { msg: text };
        }
        lines.push(line);
        const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(line.msg ?? ''));
        if (m) {
          clearTimeout(timer);
          resolve({ n, child, url: m[1]!, lines, exited });
        }
      }
    });
  });
}

async function call<T = any>(
  base: string,
  token: string,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function ok<T = any>(p: Promise<{ status: number; body: T }>, what: string): Promise<T> {
  const r = await p;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Reads the session's SSE stream from the start until the loop goes idle after running. */
async function untilIdleOverSse(base: string, key: string, sessionId: string, timeoutMs = 30_000) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const events: Array<{ type: string; [k: string]: unknown }> = [];
  try {
    const res = await fetch(`${base}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let ran = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`SSE of ${sessionId} ended early`);
      buf += value;
      for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (!data) continue;
        const event = JSON.parse(data);
        events.push(event);
        if (event.type === 'session.status' && event.status === 'running') ran = true;
        if (event.type === 'session.status' && ran && (event.status === 'idle' || event.status === 'error')) {
          abort.abort();
          return events;
        }
      }
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

function untilIdle(base: string, key: string, sessionId: string, timeoutMs = 30_000) {
  return until(
    `session ${sessionId} idle`,
    async () => {
      const s = await ok(call(base, key, 'GET', `/v1/sessions/${sessionId}`), 'get session');
      return s.status === 'idle' || s.status === 'error' ? s : undefined;
    },
    timeoutMs,
    50,
  );
}

beforeAll(async () => {
  mkdirSync(logDir, { recursive: true });
  database = await createTestDatabase('multi_process');
  namespace = `test-mp-${randomUUID().slice(0, 8)}`;
  mock = await startMockLlm({
    port: 0,
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'tokyo', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'tokyo' } }] },
        },
        {
          when: { lastUserIncludes: 'weather', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
        },
      ],
    },
  });
  tools = await startToolServer(0);
  pool = new WorkerPool(
    {
      databaseUrl: database.url,
      redisUrl: REDIS_URL,
      namespace,
      llmUrl: mock.url,
      // Debug: each step job logs its decision with its jobId, so the test can tell who ran what.
      logLevel: 'debug',
      // Two steps at a time per process: ten sessions must spread over both workers.
      extra: { WORKER_STEP_CONCURRENCY: '2' },
    },
    logDir,
  );
  const started = Promise.all([startGateway(1), startGateway(2)]);
  pool.start();
  pool.start();
  gateways.push(...(await started));
  // Both workers consume before any work is submitted, so neither can take it all by arriving first.
  await until(
    'both workers started',
    () => {
      if (pool.crashes.length > 0) throw new Error(`a worker crashed: ${JSON.stringify(pool.crashes)}`);
      return pool.procs.every((p) => p.lines.some((l) => l.msg === 'worker started'));
    },
    45_000,
    50,
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${pool.procs.map((p) => p.stderr).join('\n')}`);
  });
}, 90_000);

afterAll(async () => {
  await pool?.stopAll(10_000);
  for (const g of gateways) g.child.kill('SIGTERM');
  // Grace period for a clean exit; what is still alive after it is killed.
  await Promise.race([Promise.all(gateways.map((g) => g.exited)), sleep(10_000)]);
  for (const g of gateways)
    if (g.child.exitCode === null && g.child.signalCode === null) g.child.kill('SIGKILL');
  await Promise.all(files.map((f) => new Promise((r) => f.end(r))));
  await mock?.close();
  await tools?.close();
  if (namespace) {
    const redis = new Redis(REDIS_URL);
    for (const pattern of [`${namespace}:*`, `{${namespace}}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== '0');
    }
    redis.disconnect();
  }
  await database?.drop();
}, 60_000);

describe('two gateways and two workers on one Redis and one PostgreSQL', () => {
  it('drives sessions across both gateways; every step runs once; both workers work', async () => {
    const [g1, g2] = gateways as [GatewayProc, GatewayProc];
    for (const g of gateways) expect((await fetch(`${g.url}/readyz`)).status).toBe(200);

    // Tenant, tool and agent on gateway 1; gateway 2 sees them (PostgreSQL is the only state).
    const tenant = await ok(call(g1.url, OPERATOR, 'POST', '/v1/admin/tenants', { name: 'multi' }), 'tenant');
    const key: string = tenant.apiKey;
    await ok(
      call(g1.url, key, 'PUT', '/v1/tools/lookup', {
        kind: 'webhook',
        description: 'facts about a topic',
        inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
        url: `${tools.url}/lookup`,
      }),
      'tool',
    );
    await ok(
      call(g1.url, key, 'PUT', '/v1/agents/helper', { model: 'compatible/mock', tools: ['lookup'] }),
      'agent',
    );
    expect((await call(g2.url, key, 'GET', '/v1/agents/helper')).status).toBe(200);

    const drive = async (i: number) => {
      const [a, b] = i % 2 === 0 ? [g1, g2] : [g2, g1];
      const { id } = await ok(call(a.url, key, 'POST', '/v1/sessions', { agent: 'helper' }), 'session');
      // Turn 1: posted to the other gateway, followed over SSE on the first.
      await ok(
        call(b.url, key, 'POST', `/v1/sessions/${id}/messages`, { text: `session ${i}: weather in Paris?` }),
        'send 1',
      );
      const events = await untilIdleOverSse(a.url, key, id);
      expect(events.some((e) => e.type === 'part.updated')).toBe(true);
      // Turn 2: the other way round, polled on the other gateway.
      await ok(
        call(a.url, key, 'POST', `/v1/sessions/${id}/messages`, { text: `session ${i}: and tokyo?` }),
        'send 2',
      );
      const session = await untilIdle(b.url, key, id);
      expect(session.status, JSON.stringify(session.error)).toBe('idle');
      return id as string;
    };
    const ids = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => drive(i)));

    // Every session: two turns, each a tool round trip (tool call completed, then a final answer).
    const assistantIds = new Set<string>();
    for (const id of ids) {
      const log = await ok(call(g2.url, key, 'GET', `/v1/sessions/${id}/messages?view=log`), 'history');
      const messages = log.messages as Array<{ info: any; parts: any[] }>;
      expect(messages.map((m) => m.info.role)).toEqual([
        'user',
        'assistant',
        'assistant',
        'user',
        'assistant',
        'assistant',
      ]);
      const toolParts = messages.flatMap((m) => m.parts.filter((p) => p.type === 'tool'));
      expect(toolParts.map((p) => [p.tool, p.state.status])).toEqual([
        ['lookup', 'completed'],
        ['lookup', 'completed'],
      ]);
      expect(toolParts[1].state.output).toContain('Tokyo');
      expect(messages[5]!.info.finish).toBe('stop');
      for (const m of messages) if (m.info.role === 'assistant') assistantIds.add(m.info.id);
    }
    // Each tool call reached the tool server exactly once.
    expect(tools.calls.size).toBe(SESSIONS * 2);
    expect([...tools.calls.values()].every((n) => n === 1)).toBe(true);

    // The step ledger: no job ran its step twice — one row per loop step (steps 1..4 in each
    // session), one row per job attempt, and one idle prune pass per idle period (a pass whose
    // session moved on skips, so none writes a second row for a later turn's step).
    const rows = await database.db
      .selectFrom('steps')
      .select(['session_id', 'step', 'kind', 'job_id', 'attempt', 'outcome', 'message_id'])
      .where('session_id', 'in', ids)
      .execute();
    expect(rows.filter((r) => r.kind !== 'step' && r.kind !== 'prune')).toEqual([]);
    expect(new Set(rows.map((r) => `${r.job_id}/${r.attempt}`)).size).toBe(rows.length);
    const stepRows = rows.filter((r) => r.kind === 'step');
    expect(new Set(stepRows.map((r) => `${r.session_id}/${r.step}`)).size).toBe(stepRows.length);
    // Each model step's row names the assistant message it wrote (the inspector links them).
    expect(stepRows.filter((r) => !assistantIds.has(r.message_id ?? ''))).toEqual([]);
    const pruneRows = rows.filter((r) => r.kind === 'prune');
    expect(new Set(pruneRows.map((r) => r.job_id)).size).toBe(pruneRows.length);
    expect(stepRows).toHaveLength(SESSIONS * 4);
    for (const id of ids) {
      const steps = stepRows.filter((r) => r.session_id === id);
      expect(steps.map((r) => r.step).sort()).toEqual([1, 2, 3, 4]);
      expect(steps.map((r) => r.outcome).sort()).toEqual(['stop', 'stop', 'tool-calls', 'tool-calls']);
    }

    // Both workers ran ledger steps: map each ledger job id to the worker whose logs name it. Every
    // ledger step shows in some worker's log; the lines come through pipes, so the test waits for them.
    const ranBy = await until('every ledger step in a worker log', () => {
      const jobsOf = pool.procs.map(
        (p) => new Set(p.lines.flatMap((l) => (typeof l.jobId === 'string' ? [l.jobId] : []))),
      );
      const owners = stepRows.map((r) => jobsOf.findIndex((jobs) => jobs.has(r.job_id)));
      return owners.every((w) => w >= 0) && owners;
    });
    const perWorker = pool.procs.map((_, w) => ranBy.filter((x) => x === w).length);
    expect(
      perWorker.every((n) => n > 0),
      `ledger steps per worker: ${perWorker.join(', ')}`,
    ).toBe(true);
    expect(pool.crashes).toEqual([]);

    // Both gateways served requests, and either one inspects any session (operator route).
    for (const g of gateways)
      expect(g.lines.filter((l) => l.msg === 'incoming request').length).toBeGreaterThan(10);
    const inspected = await ok(
      call(g2.url, OPERATOR, 'GET', `/v1/admin/sessions/${ids[0]}/inspect`),
      'inspect',
    );
    expect(inspected.steps.filter((s: { kind: string }) => s.kind === 'step')).toHaveLength(4);
  }, 90_000);

  it('every Redis key it wrote carries a hash tag: queues on {namespace}, sessions on {sessionId}', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const keys: string[] = [];
      for (const pattern of [`${namespace}:*`, `{${namespace}}:*`]) {
        let cursor = '0';
        do {
          const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          cursor = next;
          keys.push(...found);
        } while (cursor !== '0');
      }
      const queueKeys = keys.filter((k) => k.startsWith(`{${namespace}}:`));
      const sessionKeys = keys.filter((k) => !k.startsWith(`{${namespace}}:`));
      expect(queueKeys.length).toBeGreaterThan(0);
      expect(sessionKeys.length).toBeGreaterThan(0);
      // BullMQ's keys (and its Lua scripts' multi-key calls) stay in the {namespace} slot; each
      // session's lock, event stream and its byte count live under its own {sessionId} tag, a tenant's fairness keys
      // (slots, slot waiters, token windows) under {tenant:id}, an API key's request counter under its id.
      const tagged = [
        /^[^{]*:\{ses_[^}]+\}:(lock|events|events:bytes)$/,
        /^[^{]*:\{tenant:ten_[^}]+\}:(slots|slot-waiters|tokens:\d+|webhook:[^:]+:(failures|probe))$/,
        /^[^{]*:rl:\{key_[^}]+\}$/,
      ];
      expect(sessionKeys.filter((k) => !tagged.some((re) => re.test(k)))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});

// Variables the compose file sets for the runtime rather than for the service's code: glibc reads
// MALLOC_ARENA_MAX when the process starts (docs/DEPLOYMENT.md, glibc's malloc arenas).
const READ_BY_THE_RUNTIME = ['MALLOC_ARENA_MAX'];

// The compose file cannot run here (no container engine); it must at least parse and agree with
// what the processes read.
describe('infra/compose.yaml', () => {
  const parsed = spawnSync('python3', ['-c', PARSE_YAML, path.join(root, 'infra/compose.yaml')], {
    encoding: 'utf8',
  });
  const why =
    parsed.error !== undefined
      ? 'python3 is not available'
      : parsed.status !== 0 && /No module named .?yaml/.test(parsed.stderr)
        ? 'python3 has no yaml module'
        : undefined;
  if (why) process.stderr.write(`multi-process.test: compose.yaml not checked: ${why}\n`);

  it.skipIf(why !== undefined)('parses: redis, postgres, two gateways, two workers on one image', () => {
    expect(parsed.status, parsed.stderr).toBe(0);
    const compose = JSON.parse(parsed.stdout);
    const { redis, postgres, gateway, worker } = compose.services;
    expect(redis.image).toBe('redis:7');
    expect(postgres.image).toBe('postgres:15');
    expect(gateway.deploy.replicas).toBe(2);
    expect(worker.deploy.replicas).toBe(2);
    expect(gateway.command).toEqual(['node', 'apps/gateway/src/server.ts']);
    // The worker's young generation capped and its malloc arenas (docs/DEPLOYMENT.md, worker memory).
    expect(worker.command).toEqual(['node', '--max-semi-space-size=8', 'apps/worker/src/main.ts']);
    expect(worker.environment.MALLOC_ARENA_MAX).toBe('2');
    for (const svc of [gateway, worker]) {
      expect(svc.build).toEqual({ context: '..', dockerfile: 'infra/Dockerfile' });
      expect(existsSync(path.join(root, 'infra', svc.build.context, svc.build.dockerfile))).toBe(true);
      expect(existsSync(path.join(root, svc.command.at(-1)))).toBe(true);
      expect(Object.keys(svc.depends_on).sort()).toEqual(['postgres', 'redis']);
    }
    // One PostgreSQL, one Redis, one namespace for every process.
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'REDIS_CLUSTER_NODES', 'LOOPLINE_NAMESPACE'])
      expect(gateway.environment[name]).toBe(worker.environment[name]);
    expect(gateway.environment.LOOPLINE_OPERATOR_TOKEN).toMatch(/^\$\{LOOPLINE_OPERATOR_TOKEN:\?/);
    // Every variable the file sets is one the process reads.
    const read = (files: string[]) => files.map((f) => readFileSync(path.join(root, f), 'utf8')).join('\n');
    const sources = {
      // REDIS_URL / REDIS_CLUSTER_NODES: read by the shared Redis factory of both processes.
      gateway: read([
        'apps/gateway/src/server.ts',
        'apps/gateway/src/config.ts',
        'packages/core/src/env.ts',
        'apps/gateway/src/plugins/auth.ts',
        'packages/queue/src/redis.ts',
        'packages/egress/src/policy.ts',
        'packages/egress/src/secrets.ts',
        'packages/llm/src/providers.ts',
      ]),
      worker: read([
        'apps/worker/src/main.ts',
        'apps/worker/src/config.ts',
        'packages/core/src/env.ts',
        'packages/egress/src/policy.ts',
        'packages/egress/src/secrets.ts',
        'packages/llm/src/providers.ts',
        'packages/queue/src/redis.ts',
      ]),
    };
    for (const [name, svc] of [
      ['gateway', gateway],
      ['worker', worker],
    ] as const) {
      const unread = Object.keys(svc.environment).filter(
        (v) => !sources[name].includes(v) && !READ_BY_THE_RUNTIME.includes(v),
      );
      expect(unread, `${name} does not read`).toEqual([]);
    }
  });
});
