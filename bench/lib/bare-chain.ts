import { performance } from 'node:perf_hooks';
import { createDb, type Db } from '@loopline/db';
import { acquireLease, JOBS, keySpace, PRIORITY } from '@loopline/queue';
import { DelayedError, type JobsOptions, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import { durableSessions, durableWork } from './durable-step.ts';
import { redis as newRedis } from './infra.ts';
import { serveParent } from './proc.ts';

// The bare-machine ceilings of a step: a BullMQ job chain in which each job takes the session
// lock (the same Redis lease as Loopline: SET NX PX, renewal timer, compare-and-delete release),
// does its work, and enqueues the next job of its chain with Loopline's step job options
// (priority, retries, retention). Same Worker settings as Loopline's step worker.
// Two kinds of work: `row` (the old ceiling: one PostgreSQL row per job) and `durable` (the bare
// durable step of lib/durable-step.ts: fence bump, one transaction writing a message and three
// parts, one XADD). Runs in the bench process (one chain) or as a forked child (many chains).

export const CEILING_CONNECTION_NAME = 'bench-chain';

export type ChainKind = 'row' | 'durable';

/** What a job does while it holds the lock (chain index, step index within the chain). */
export type ChainWork = (chain: number, step: number) => Promise<void>;

/** Creates the bench_chain table of the `row` work. */
export async function createChainTable(db: Db): Promise<void> {
  await sql`create table if not exists bench_chain (
    id bigserial primary key, chain int not null, step int not null, at timestamptz not null default now())`.execute(
    db,
  );
}

/** Rows the `row` work has written. */
export async function chainRows(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from bench_chain`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The old ceiling's work: one INSERT of one small row. */
export function rowWork(db: Db): ChainWork {
  return async (chain, step) => {
    await sql`insert into bench_chain (chain, step) values (${chain}, ${step})`.execute(db);
  };
}

export interface BareChain {
  /** Enqueues the first job of `chains` chains; each stops after `steps` jobs (undefined: never). */
  start(chains: number, steps?: number): Promise<void>;
  /** Resolves when every chain has run its `steps` jobs. */
  finished(): Promise<void>;
  /** performance.now() at the start of each job, per chain. */
  starts: number[][];
  completed(): number;
  close(): Promise<void>;
}

export interface ChainOptions {
  namespace: string;
  concurrency: number;
  /** Default: the row ceiling on `db`. */
  work?: (connection: Redis) => ChainWork;
  db?: Db;
  /** The lock key's session part for a chain (default `chain-<n>`). */
  lockId?: (chain: number) => string;
  queue?: string;
  /**
   * Release the lock before adding the next job (the durable chain): the next job then never
   * finds the lock still held and put itself back for the retry delay. The row chain keeps the
   * old order (add, then release), as it always had.
   */
  releaseFirst?: boolean;
}

/** A bare job chain (the file header) in this process. */
export function bareChain(opts: ChainOptions): BareChain {
  const { concurrency } = opts;
  const keys = keySpace(opts.namespace);
  const connection = newRedis(CEILING_CONNECTION_NAME);
  const work = opts.work ? opts.work(connection) : rowWork(opts.db!);
  const lockId = opts.lockId ?? ((chain: number) => `chain-${chain}`);
  const QUEUE = opts.queue ?? 'bench-chain';
  const queue = new Queue(QUEUE, {
    connection,
    prefix: keys.queuePrefix,
    defaultJobOptions: JOBS.step.options as JobsOptions,
  });
  const starts: number[][] = [];
  let limit: number | undefined;
  let completed = 0;
  let chainsLeft = 0;
  let onFinished: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    onFinished = resolve;
  });
  const add = (chain: number, step: number) =>
    queue.add('step', { chain, step }, { jobId: `c-${chain}-${step}`, priority: PRIORITY.interactive });

  const worker = new Worker(
    QUEUE,
    async (job, token) => {
      const { chain, step } = job.data as { chain: number; step: number };
      starts[chain]!.push(performance.now());
      const lease = await acquireLease(connection, keys.lock(lockId(chain)), { ttlMs: 15_000 });
      if (!lease) {
        await job.moveToDelayed(Date.now() + 250, token);
        throw new DelayedError();
      }
      let released = false;
      try {
        await work(chain, step);
        completed++;
        if (opts.releaseFirst) {
          released = true;
          await lease.release();
        }
        if (limit === undefined || step + 1 < limit) await add(chain, step + 1);
        else if (--chainsLeft === 0) onFinished();
      } finally {
        if (!released) await lease.release();
      }
    },
    {
      connection: connection.duplicate({ maxRetriesPerRequest: null }),
      prefix: keys.queuePrefix,
      concurrency,
      lockDuration: 30_000,
      stalledInterval: 15_000,
      maxStalledCount: 1_000,
    },
  );
  worker.on('error', (err) => process.stderr.write(`bare chain worker: ${err.message}\n`));

  return {
    starts,
    async start(chains, steps) {
      limit = steps;
      chainsLeft = chains;
      const first = starts.length;
      for (let c = first; c < first + chains; c++) starts.push([]);
      await Promise.all(Array.from({ length: chains }, (_, i) => add(first + i, 0)));
    },
    finished: () => finished,
    completed: () => completed,
    async close() {
      await worker.close();
      await queue.close();
      connection.disconnect();
    },
  };
}

/** Period between consecutive job starts of each chain, in ms. */
export function periods(starts: number[][]): number[] {
  const out: number[] = [];
  for (const s of starts) for (let i = 1; i < s.length; i++) out.push(s[i]! - s[i - 1]!);
  return out;
}

// Child mode: `BENCH_DB_URL`, `BENCH_NS`, `BENCH_CHAINS`, `BENCH_CONCURRENCY`, `BENCH_KIND`
// (row | durable); runs until SIGTERM. Answers `completed` (jobs done so far) and `cpu`
// (process.cpuUsage, µs).
async function child() {
  const env = process.env;
  const kind = (env.BENCH_KIND ?? 'row') as ChainKind;
  const chains = Number(env.BENCH_CHAINS ?? 100);
  const db = createDb(env.BENCH_DB_URL!, { max: 20, applicationName: CEILING_CONNECTION_NAME });
  const keys = keySpace(env.BENCH_NS!);
  const sessions = kind === 'durable' ? await durableSessions(db, chains) : [];
  const chain = bareChain({
    namespace: env.BENCH_NS!,
    concurrency: Number(env.BENCH_CONCURRENCY ?? 16),
    db,
    ...(kind === 'durable'
      ? {
          work: (connection: Redis) => durableWork(db, connection, keys, sessions),
          lockId: (c: number) => sessions[c]!.sessionId,
          releaseFirst: true,
        }
      : {}),
  });
  const stop = async () => {
    await chain.close();
    await db.destroy();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  await chain.start(chains);
  serveParent({ pid: process.pid }, (msg) => {
    if (msg.type === 'completed') return chain.completed();
    if (msg.type === 'cpu') return process.cpuUsage();
    return undefined;
  });
}

if (import.meta.main) await child();
