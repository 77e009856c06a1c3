import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterUnavailable, type PrivateCluster, startRedisCluster } from '../support/redis-cluster.ts';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';
import { until as waitUntil } from '../support/wait.ts';

// Redis Cluster (docs/DEPLOYMENT.md): a local three-master cluster, a gateway process
// (`node apps/gateway/src/server.ts`) and a worker process (`node apps/worker/src/main.ts`) on it
// through REDIS_CLUSTER_NODES, next to the stack's in-process gateway (the same factory, from
// test code). A tool-calling session finishes with its events read over SSE; an abort reaches the
// worker over Cluster pub/sub; the tenant slot and token-budget Lua scripts, the rate limit and a
// batch flow run; and the keys they wrote sit on more than one shard, each with a hash tag.

const root = new URL('../../', import.meta.url).pathname;
const unavailable = clusterUnavailable();

let cluster: PrivateCluster;
let stack: Stack;
let client: Client;
const children: ChildProcess[] = [];
let gatewayUrl = '';
/** Set when a child process exited: timeouts then say why (a crash at start, say). */
const exits: string[] = [];

function clusterEnv(): Record<string, string> {
  return {
    DATABASE_URL: stack.databaseUrl,
    ...stack.redisEnv,
    REDIS_URL: 'redis://127.0.0.1:1', // must be unused: a stray single-node client would fail
    LOOPLINE_NAMESPACE: stack.namespace,
    LOG_LEVEL: 'warn',
  };
}

function startWorkerProcess(): ChildProcess {
  const child = spawn(process.execPath, [`${root}apps/worker/src/main.ts`], {
    env: {
      ...process.env,
      ...clusterEnv(),
      OPENAI_BASE_URL: stack.mock.url,
      OPENAI_API_KEY: 'test-key',
      LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      LOOPLINE_DISABLE_TITLES: '1',
      WORKER_JOB_LOCK_MS: '5000',
      WORKER_STALLED_INTERVAL_MS: '2000',
      LOOPLINE_LOCK_TTL_MS: '5000',
      LOOPLINE_LOCK_RETRY_MS: '100',
      LOOPLINE_SLOT_RETRY_MS: '150',
      DB_POOL_MAX: '8',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  watch('worker', child);
  return child;
}

function watch(name: string, child: ChildProcess) {
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    process.stderr.write(c);
    stderr = (stderr + c.toString('utf8')).slice(-2048);
  });
  child.once('exit', (code, signal) => {
    if (signal !== 'SIGKILL') exits.push(`${name} exited (${code ?? signal}): ${stderr}`);
  });
}

/** The gateway process; resolves with its URL once it listens. */
function startGatewayProcess(): Promise<string> {
  const child = spawn(process.execPath, [`${root}apps/gateway/src/server.ts`], {
    env: {
      ...process.env,
      ...clusterEnv(),
      LOG_LEVEL: 'info',
      LOOPLINE_OPERATOR_TOKEN: stack.operatorToken,
      OPENAI_BASE_URL: stack.mock.url,
      LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      PORT: '0',
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  watch('gateway', child);
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString('utf8')).slice(-4096);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not listen: ${stderr}`)), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited (${code}): ${stderr}`));
    });
    let buf = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        buf = '';
        resolve(m[1]!);
      } else if (buf.length > 65_536) buf = buf.slice(-4096);
    });
  });
}

async function kill(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

/** until() that names the processes which exited, when it times out. */
const until = <T>(what: string, fn: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> =>
  waitUntil(what, fn, ms).catch((err: Error) => {
    throw new Error(`${err.message}${exits.length ? `; ${exits.join('; ')}` : ''}`);
  });

/** Calls the gateway process with the tenant's key. */
async function viaProcess(method: string, path: string, body?: unknown) {
  const res = await fetch(`${gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${client.apiKey}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Reads the session's SSE stream from `base` until `stop` matches an event (or the timeout). */
async function sse(base: string, sessionId: string, stop: (e: any) => boolean, ms = 20_000): Promise<any[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  const events: any[] = [];
  try {
    const res = await fetch(`${base}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${client.apiKey}` },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (!data) continue;
        const event = JSON.parse(data.slice(6));
        events.push(event);
        if (stop(event)) return events;
      }
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  throw new Error(`SSE of ${sessionId} ended before the expected event; got ${events.map((e) => e.type)}`);
}

describe.skipIf(unavailable !== undefined)('on a Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    stack = await startStack({
      workers: false,
      redisCluster: cluster.nodes,
      // The rate-limit Lua script runs on every request of the in-process gateway.
      rateLimit: { perMinute: 100_000 },
      scenario: {
        rules: [
          {
            when: { lastUserIncludes: 'weather', lastMessageRole: 'user' },
            reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
          },
          {
            // ~500 ms per answer, so the capped sessions overlap.
            when: { lastUserIncludes: 'capped', lastMessageRole: 'user' },
            reply: { text: 'a deliberately slow answer in many small chunks', chunks: 12 },
            latencyMs: 40,
          },
          {
            when: { lastUserIncludes: 'slow story', lastMessageRole: 'user' },
            reply: { text: 'word '.repeat(60), chunks: 60 },
            latencyMs: 100,
          },
        ],
        default: { text: 'an answer streamed in a few pieces', chunks: 6 },
        latencyMs: 20,
      },
    });
    client = await stack.tenant('cluster');
    await client.tool('lookup', lookupTool(stack.tools.url));
    await client.agent('helper', { tools: ['lookup'] });
    startWorkerProcess();
    gatewayUrl = await startGatewayProcess();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(children.splice(0).map(kill));
    await stack?.close();
    await cluster?.close();
  });

  it('serves readiness, /metrics and Bull Board from the gateway process on the cluster', async () => {
    const res = await fetch(`${gatewayUrl}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ checks: { redis: true, postgres: true } });
    const operator = { authorization: `Bearer ${stack.operatorToken}` };
    const metrics = await fetch(`${gatewayUrl}/metrics`, { headers: operator });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/^loopline_queue_metrics_up 1$/m);
    expect(text).toContain('bullmq_job_count{queue="loopline-step"');
    const board = await fetch(`${gatewayUrl}/admin/queues/api/queues`, { headers: operator });
    expect(board.status).toBe(200);
    const names = ((await board.json()) as { queues: { name: string }[] }).queues.map((q) => q.name);
    expect(names).toContain('loopline-step');
  });

  it('runs a tool-calling session to completion, its events read over SSE', async () => {
    const created = await viaProcess('POST', '/v1/sessions', { agent: 'helper' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // Subscribe first (from the oldest retained event), then post on the other gateway.
    const events = sse(gatewayUrl, id, (e) => e.type === 'session.idle');
    const sent = await client.send(id, 'what is the weather in Paris?');
    expect(sent).toBeTruthy();
    const seen = await events;
    const types = seen.map((e) => e.type);
    expect(types).toContain('session.status');
    expect(types.at(-1)).toBe('session.idle');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    const log = await client.history(id);
    const tool = log.messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');
    expect(tool.state.status).toBe('completed');
    expect(log.messages.at(-1).info.finish).toBe('stop');
    // The same stream is readable from the in-process gateway too (any gateway serves it).
    const again = await sse(stack.url, id, (e) => e.type === 'session.idle');
    expect(again.map((e) => e.type)).toEqual(types);
  }, 40_000);

  it('an abort reaches the worker process over Cluster pub/sub and stops the stream', async () => {
    const id = await client.session('helper');
    await client.send(id, 'tell me a slow story');
    await until('streaming', async () => {
      const log = await client.history(id);
      return log.messages.some(
        (m: any) => m.info.role === 'assistant' && m.parts.some((p: any) => p.type === 'text'),
      );
    });
    const res = await viaProcess('POST', `/v1/sessions/${id}/abort`);
    expect(res.status).toBe(202);
    await until(
      'idle',
      async () => (await client.call('GET', `/v1/sessions/${id}`)).body.status === 'idle',
      20_000,
    );
    // The stream had ~6 s to go: its text was cut short, so the broadcast stopped it.
    const reply = (await client.history(id)).messages.at(-1);
    expect(reply.info.error.name).toBe('AbortedError');
    const text = reply.parts.find((p: any) => p.type === 'text')?.text ?? '';
    expect(text.length).toBeLessThan('word '.repeat(60).length);
  }, 30_000);

  it('runs the tenant slot and token-budget scripts, a batch flow and the rate limit', async () => {
    const limits = async (l: Record<string, number | null>) => {
      const res = await fetch(`${stack.url}/v1/admin/tenants/${client.tenantId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ limits: l }),
      });
      expect(res.status).toBe(200);
    };
    await limits({ maxConcurrentSessions: 1, tokensPerMinute: 1_000_000 });
    const ids = await Promise.all([1, 2, 3].map(() => client.session('helper')));
    const details = new Set<string>();
    let maxRunning = 0;
    await Promise.all(ids.map((id, i) => client.send(id, `capped number ${i}`)));
    await until(
      'three sessions done',
      async () => {
        const rows = await stack.deps.db
          .selectFrom('sessions')
          .select(['status', 'status_detail', 'step_count'])
          .where('id', 'in', ids)
          .execute();
        maxRunning = Math.max(maxRunning, rows.filter((r) => r.status === 'running').length);
        for (const r of rows) if (r.status_detail) details.add(r.status_detail);
        return rows.every((r) => r.status === 'idle' && r.step_count > 0);
      },
      30_000,
    );
    // One slot: the others waited for it (acquireSlot-2.lua refused them; releaseSlot-2.lua woke them).
    expect([...details].some((d) => d.startsWith('waiting for a tenant slot'))).toBe(true);
    expect(maxRunning).toBe(1);

    const batch = await viaProcess('POST', '/v1/batches', {
      agent: 'helper',
      conversations: [{ messages: ['alpha'] }, { messages: ['beta', 'gamma'] }],
    });
    expect(batch.status).toBe(201);
    await until(
      'batch completed',
      async () => (await viaProcess('GET', `/v1/batches/${batch.body.id}`)).body.status === 'completed',
      30_000,
    );
    const done = (await viaProcess('GET', `/v1/batches/${batch.body.id}`)).body;
    expect(done.counts).toMatchObject({ completed: 2 });

    // The rate limit (a Lua script on the shared Cluster client): 3 requests per window, then 429.
    await limits({ maxConcurrentSessions: null, requestsPerMinute: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await client.call('GET', `/v1/sessions/${ids[0]}`)).status);
    expect(statuses).toContain(429);
    await limits({ requestsPerMinute: null });
  }, 60_000);

  it('spread its keys over the shards, every one hash-tagged', async () => {
    const keys: Array<{ port: number; key: string }> = [];
    for (const port of cluster.ports) {
      const node = new Redis(port, '127.0.0.1', { lazyConnect: true });
      await node.connect();
      let cursor = '0';
      do {
        const [next, batch] = await node.scan(cursor, 'MATCH', `*${stack.namespace}*`, 'COUNT', 1000);
        cursor = next;
        for (const key of batch) keys.push({ port, key });
      } while (cursor !== '0');
      node.disconnect();
    }
    expect(keys.length).toBeGreaterThan(0);
    // Session keys ({ses_…}) and tenant keys ({tenant:…}) spread; queue keys share {namespace}.
    expect(new Set(keys.map((k) => k.port)).size).toBeGreaterThanOrEqual(2);
    for (const { key } of keys) expect(key).toMatch(/\{[^}]+\}/);
    expect(keys.some((k) => k.key.startsWith(`{${stack.namespace}}:loopline-step:`))).toBe(true);
    expect(keys.some((k) => k.key.includes(':events'))).toBe(true);
  });
});

if (unavailable) {
  describe('on a Redis Cluster', () => {
    it.skip(`skipped: ${unavailable}`, () => undefined);
  });
}
