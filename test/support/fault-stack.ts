import { closeDb, createDb, type Db } from '@loopline/db';
import type { ScenarioInput } from '@loopline/mock-llm';
import { type FaultToolServer, slowTool, startFaultToolServer } from './fault-tools.ts';
import { installFenceAudit } from './fence-audit.ts';
import { type LlmProxy, startLlmProxy } from './llm-proxy.ts';
import { stackWorkerPool, type WorkerPool } from './procs.ts';
import type { PrivateRedis } from './redis-server.ts';
import { type Client, type Stack, startStack, startStackOnPrivateRedis } from './stack.ts';

// The fault tests' stack, set up in one place: a test stack without in-process workers (real
// worker processes run the loop), optionally on a private redis-server the test may kill; an
// admin PostgreSQL connection (with the fence write audit when asked); the fault tool server;
// optionally the LLM proxy between the workers and the mock model (who streams what); a tenant
// with its tools and agents; and worker pools on that stack. close() stops all of it, in order.

export type PoolOptions = Parameters<typeof stackWorkerPool>[1];

export interface FaultStackOptions {
  scenario: ScenarioInput;
  /** A private redis-server the test may kill and restart, instead of the machine's Redis. */
  privateRedis?: boolean;
  /** Install the fence write audit (fence-audit.ts) through the admin connection. */
  fenceAudit?: boolean;
  /** Worker processes reach the mock model through the LLM proxy (`proxy`). */
  llmProxy?: boolean;
  /** The first worker pool (`pool`); none when left out (`newPool` makes them). */
  workers?: PoolOptions;
  /**
   * Tools and agents of the tenant. Default: the fault tool server's `slow` tool and an agent
   * `agent` that uses it.
   */
  setup?: (f: { client: Client; tools: FaultToolServer; stack: Stack }) => Promise<void>;
}

export interface FaultStack {
  stack: Stack;
  client: Client;
  /** PostgreSQL connection of the test itself (application_name `fault-admin`). */
  admin: Db;
  tools: FaultToolServer;
  /** The LLM proxy (llmProxy), else undefined. */
  proxy: LlmProxy | undefined;
  /** The private redis-server (privateRedis), else undefined. */
  redis: PrivateRedis | undefined;
  /** The pool of `workers`; an empty pool on the stack when that was left out. */
  pool: WorkerPool;
  /** Another worker pool on the stack (through the proxy when there is one); closed with it. */
  newPool(opts: PoolOptions): WorkerPool;
  close(): Promise<void>;
}

const defaultSetup: NonNullable<FaultStackOptions['setup']> = async ({ client, tools }) => {
  await client.tool('slow', slowTool(tools));
  await client.agent('agent', { tools: ['slow'] });
};

/** Starts a fault stack; pass its close() to afterAll. */
export async function startFaultStack(opts: FaultStackOptions): Promise<FaultStack> {
  let redis: PrivateRedis | undefined;
  let stack: Stack;
  if (opts.privateRedis) ({ redis, stack } = await startStackOnPrivateRedis({ scenario: opts.scenario }));
  else stack = await startStack({ workers: false, scenario: opts.scenario });
  const admin = createDb(stack.databaseUrl, { applicationName: 'fault-admin', max: 2 });
  if (opts.fenceAudit) await installFenceAudit(admin);
  const tools = await startFaultToolServer();
  const proxy = opts.llmProxy ? await startLlmProxy(stack.mock.url, 'never-a-summary') : undefined;
  const client = await stack.tenant();
  await (opts.setup ?? defaultSetup)({ client, tools, stack });
  const pools: WorkerPool[] = [];
  const newPool = (poolOpts: PoolOptions) => {
    const target = proxy ? { ...stack, mock: { url: proxy.url } } : stack;
    const pool = stackWorkerPool(target, poolOpts);
    pools.push(pool);
    return pool;
  };
  const pool = newPool(opts.workers ?? {});
  return {
    stack,
    client,
    admin,
    tools,
    proxy,
    redis,
    pool,
    newPool,
    async close() {
      for (const p of pools) await p.killAll();
      await proxy?.close();
      await tools.close();
      await closeDb(admin);
      await stack.close();
      await redis?.close();
    },
  };
}
