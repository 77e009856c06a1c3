import { randomUUID } from 'node:crypto';
import type { AgentConfigInput, ToolConfigInput } from '@loopline/core';
import { DENY_PRIVATE, type EgressPolicies, secretBoxFromKey } from '@loopline/egress';
import { buildApp, type GatewayDeps } from '@loopline/gateway';
import { builtinProviders, createTokenizer, type Provider } from '@loopline/llm';
import { type ScenarioInput, startMockLlm } from '@loopline/mock-llm';
import { createQueues, createRedis, keySpace, type RedisConfig } from '@loopline/queue';
import { createTestDatabase } from '@loopline/testkit';
import {
  closeEgress,
  createWorkerMetrics,
  defaultWorkerOptions,
  startMetricsServer,
  startWorkers,
  stopWorkers,
  type WorkerDeps,
  type WorkerEgress,
  type WorkerOptions,
  workerEgress,
} from '@loopline/worker';
import type { Worker } from 'bullmq';
import { pino } from 'pino';
import { startToolServer } from '../../apps/cli/src/demo-tools.ts';
import { type PrivateRedis, startPrivateRedis } from './redis-server.ts';
import { until } from './wait.ts';

// The whole service in one test process, on real parts: a fresh PostgreSQL database cloned
// from the migrated template, a unique Redis namespace, the gateway listening on a random port,
// in-process workers, the mock model over HTTP, and the webhook tool server.

/** LOOPLINE_SECRETS_KEY of test stacks (32 bytes; tests only). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7);

/** The operator providers of worker llm settings, by name (what the gateway checks agents against). */
function providerMap(llm: {
  apiKey?: string;
  baseURL?: string;
  providers?: Provider[];
}): Map<string, Provider> {
  return new Map([...builtinProviders(llm), ...(llm.providers ?? [])].map((p) => [p.name, p]));
}

export interface Stack {
  url: string;
  /** Redis key namespace (LOOPLINE_NAMESPACE for child worker processes). */
  namespace: string;
  /** The Redis the stack uses (REDIS_URL for child worker processes; unused on a cluster). */
  redisUrl: string;
  /** REDIS_URL or REDIS_CLUSTER_NODES for child processes: the Redis or Redis Cluster the stack uses. */
  redisEnv: Record<string, string>;
  databaseUrl: string;
  operatorToken: string;
  /** The in-process workers' /metrics (startStack({workerMetrics: true})). */
  workerMetricsUrl: string | undefined;
  deps: WorkerDeps;
  mock: Awaited<ReturnType<typeof startMockLlm>>;
  tools: Awaited<ReturnType<typeof startToolServer>>;
  workers: Worker[];
  /** Creates a tenant and returns an API client for it. */
  tenant(name?: string): Promise<Client>;
  startWorkers(): void;
  stopWorkers(): Promise<void>;
  close(): Promise<void>;
}

/** The demo tool server's `lookup` webhook tool (apps/cli/src/demo-tools.ts), as a tenant defines it. */
export function lookupTool(toolsUrl: string): ToolConfigInput {
  return {
    kind: 'webhook',
    description: 'facts',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
    url: `${toolsUrl}/lookup`,
  };
}

export interface Client {
  apiKey: string;
  tenantId: string;
  call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: T }>;
  agent(name: string, config: Partial<AgentConfigInput> & { apiKey?: string }): Promise<void>;
  tool(name: string, config: ToolConfigInput): Promise<void>;
  session(agent: string, extra?: Record<string, unknown>): Promise<string>;
  send(sessionId: string, text: string, headers?: Record<string, string>): Promise<any>;
  waitIdle(sessionId: string, timeoutMs?: number): Promise<any>;
  history(sessionId: string, view?: 'log' | 'model'): Promise<any>;
}

/** A whole Loopline in the test process: own database and Redis prefix, gateway, mock model, workers. */
export async function startStack(
  opts: {
    scenario?: ScenarioInput;
    workers?: boolean;
    lockTtlMs?: number;
    /** Redis to use (default REDIS_URL, else 127.0.0.1:6379), e.g. a private redis-server a test restarts. */
    redisUrl?: string;
    /** A Redis Cluster instead (seed nodes, as REDIS_CLUSTER_NODES): overrides redisUrl. */
    redisCluster?: string[];
    /** Session titles after the first turn (default off: scripted scenarios see only their own calls). */
    titles?: boolean;
    /** Serve the workers' metrics on an ephemeral port (`workerMetricsUrl`). */
    workerMetrics?: boolean;
    /** `tenant` labels on the per-tenant counters of gateway and workers (LOOPLINE_METRICS_TENANT_LABELS). */
    metricsTenantLabels?: boolean;
    /** Worker fairness defaults and timings (tests shorten the token window, poll intervals). */
    fairness?: WorkerDeps['fairness'];
    /** Gateway rate limit default and window. */
    rateLimit?: GatewayDeps['rateLimit'];
    /** Browser origins allowed by CORS (LOOPLINE_CORS_ORIGINS). */
    corsOrigins?: GatewayDeps['corsOrigins'];
    /** Gateway batch limits. */
    batches?: GatewayDeps['batches'];
    /** Jobs per queue of the in-process workers (default: defaultWorkerOptions). */
    concurrency?: WorkerOptions['concurrency'];
    /**
     * Egress policies of gateway and workers (default: webhooks may reach 127.0.0.1, where the
     * tool server runs; attachments and tenant model endpoints may reach no private address).
     */
    egress?: Partial<EgressPolicies>;
    /** The workers' gates (e.g. with a DNS stub); default: workerEgress(egress). */
    workerEgress?: WorkerEgress;
    /** Extra operator model providers (as LOOPLINE_PROVIDERS would add). */
    providers?: Provider[];
  } = {},
): Promise<Stack> {
  const database = await createTestDatabase('e2e');
  const namespace = `test-${randomUUID().slice(0, 8)}`;
  const keys = keySpace(namespace);
  const redisUrl = opts.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redisConfig: RedisConfig = opts.redisCluster
    ? { clusterNodes: opts.redisCluster }
    : { url: redisUrl };
  const redisEnv: Record<string, string> = opts.redisCluster
    ? { REDIS_CLUSTER_NODES: opts.redisCluster.join(',') }
    : { REDIS_URL: redisUrl };
  const redis = createRedis(redisConfig, { maxRetriesPerRequest: null });
  const queues = createQueues(redis, keys);
  const mock = await startMockLlm({ port: 0, scenario: opts.scenario });
  const tools = await startToolServer(0);
  const operatorToken = randomUUID();
  const tokenizer = createTokenizer('o200k_base');
  const policies: EgressPolicies = {
    webhook: { allowPrivate: false, allowHosts: ['127.0.0.1'] },
    attachment: DENY_PRIVATE,
    model: DENY_PRIVATE,
    ...opts.egress,
  };
  const secrets = secretBoxFromKey(TEST_SECRETS_KEY);
  const llm = {
    apiKey: 'test-key',
    baseURL: mock.url,
    ...(opts.providers ? { providers: opts.providers } : {}),
  };
  const app = await buildApp({
    egress: { policies, secrets, providers: providerMap(llm) },
    db: database.db,
    redis,
    queues,
    keys,
    tokenizer,
    operatorToken,
    logger: false,
    ...(opts.rateLimit ? { rateLimit: opts.rateLimit } : {}),
    ...(opts.batches ? { batches: opts.batches } : {}),
    ...(opts.corsOrigins ? { corsOrigins: opts.corsOrigins } : {}),
    metricsTenantLabels: opts.metricsTenantLabels === true,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const workerMetrics = createWorkerMetrics({
    defaultMetrics: opts.workerMetrics === true,
    tenantLabels: opts.metricsTenantLabels === true,
  });
  const deps: WorkerDeps = {
    db: database.db,
    redis,
    keys,
    queues,
    tokenizer,
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    llm,
    egress: opts.workerEgress ?? workerEgress(policies),
    secrets,
    flags: { disableAutocompact: false, disablePrune: false },
    lockTtlMs: opts.lockTtlMs ?? 5_000,
    lockRetryMs: 50,
    maxProviderRetries: 4,
    metrics: workerMetrics,
    titles: opts.titles ?? false,
    ...(opts.fairness ? { fairness: opts.fairness } : {}),
  };
  const metricsServer = opts.workerMetrics
    ? await startMetricsServer(workerMetrics, { port: 0, host: '127.0.0.1' })
    : undefined;
  let workers: Worker[] = [];
  const start = () => {
    workers = startWorkers(deps, {
      ...defaultWorkerOptions,
      concurrency: { ...defaultWorkerOptions.concurrency, ...opts.concurrency },
      jobLockMs: 5_000,
      stalledIntervalMs: 2_000,
    });
    stack.workers = workers;
  };

  const stack: Stack = {
    url,
    namespace,
    redisUrl,
    redisEnv,
    databaseUrl: database.url,
    operatorToken,
    workerMetricsUrl: metricsServer ? `${metricsServer.url}/metrics` : undefined,
    deps,
    mock,
    tools,
    workers,
    startWorkers: start,
    async stopWorkers() {
      await stopWorkers(workers);
    },
    async tenant(name = 'test') {
      const created = await request(url, operatorToken, 'POST', '/v1/admin/tenants', { name });
      if (created.status !== 201)
        throw new Error(`tenant: ${created.status} ${JSON.stringify(created.body)}`);
      return makeClient(url, created.body.apiKey, created.body.tenant.id);
    },
    async close() {
      await stopWorkers(workers);
      await metricsServer?.close();
      await app.close();
      await queues.close();
      await mock.close();
      await tools.close();
      await closeEgress(deps.egress!);
      redis.disconnect();
      await database.drop();
    },
  };
  if (opts.workers !== false) start();
  return stack;
}

async function request(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

function makeClient(url: string, apiKey: string, tenantId: string): Client {
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    request(url, apiKey, method, path, body, headers);
  const ok = async (p: Promise<{ status: number; body: any }>, what: string) => {
    const r = await p;
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  return {
    apiKey,
    tenantId,
    call,
    agent: async (name, config) => {
      await ok(call('PUT', `/v1/agents/${name}`, { model: 'compatible/mock', ...config }), 'agent');
    },
    tool: async (name, config) => {
      await ok(call('PUT', `/v1/tools/${name}`, config), 'tool');
    },
    session: async (agent, extra) =>
      (await ok(call('POST', '/v1/sessions', { agent, ...extra }), 'session')).id,
    send: (sessionId, text, headers) =>
      ok(call('POST', `/v1/sessions/${sessionId}/messages`, { text }, headers), 'send'),
    waitIdle: (sessionId, timeoutMs = 20_000) =>
      until(
        `session ${sessionId} idle`,
        async () => {
          const s = await ok(call('GET', `/v1/sessions/${sessionId}`), 'get session');
          return s.status === 'idle' || s.status === 'error' ? s : undefined;
        },
        timeoutMs,
        50,
      ),
    history: async (sessionId, view = 'log') =>
      ok(call('GET', `/v1/sessions/${sessionId}/messages?view=${view}`), 'history'),
  };
}

/**
 * The text of the session's newest assistant reply, once some of it is stored (the first partial
 * text flush of a stream): what a test waits for before it kills or aborts a streaming step.
 */
export function untilStreamed(client: Client, sessionId: string, timeoutMs = 20_000): Promise<string> {
  return until(
    'some streamed text stored',
    async () => {
      const log = await client.history(sessionId);
      const reply = log.messages.findLast((m: any) => m.info.role === 'assistant');
      const text = reply?.parts.find((p: any) => p.type === 'text')?.text as string | undefined;
      return text && text.length > 0 ? text : undefined;
    },
    timeoutMs,
  );
}

/**
 * A stack on a private redis-server that the test may kill and restart, without in-process
 * workers (worker processes run the loop); connection errors while Redis is down are expected
 * and kept out of the test output.
 */
export async function startStackOnPrivateRedis(
  opts: Omit<Parameters<typeof startStack>[0] & object, 'redisUrl' | 'workers'> = {},
): Promise<{ redis: PrivateRedis; stack: Stack }> {
  const redis = await startPrivateRedis();
  const stack = await startStack({ ...opts, workers: false, redisUrl: redis.url });
  stack.deps.redis.on('error', () => undefined);
  for (const q of stack.deps.queues.all()) q.on('error', () => undefined);
  return { redis, stack };
}
