import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { closeDb, createDb, type Db } from '@loopline/db';
import { adminUrl, createTestDatabase, type TestDatabase } from '@loopline/testkit';
import { Redis } from 'ioredis';
import { sql } from 'kysely';

// The machinery every figure shares: a fresh database cloned from the migrated template, Redis
// connections under a unique namespace (and its cleanup), and the machine's description.
// Everything stays on 127.0.0.1.

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A database of its own for one figure (dropped by `drop()`; the runner sweeps leftovers). */
export function freshDatabase(label: string): Promise<TestDatabase> {
  return createTestDatabase(`bench_${label}`);
}

/** Drops databases left by an interrupted bench run (`loopline_t_bench_*`). */
export async function dropStaleBenchDatabases(): Promise<number> {
  const admin = createDb(adminUrl(), { max: 1 });
  try {
    const { rows } = await sql<{ datname: string }>`
      select datname from pg_database where datname like 'loopline\_t\_bench\_%'`.execute(admin);
    for (const { datname } of rows)
      await sql`drop database if exists ${sql.id(datname)} with (force)`.execute(admin);
    return rows.length;
  } finally {
    await closeDb(admin);
  }
}

/** A unique Redis namespace for a bench run. */
export function namespace(label: string): string {
  return `bench-${label}-${randomBytes(3).toString('hex')}`;
}

/** A Redis client of the bench Redis (retries for ever, as a worker's). */
export function redis(connectionName?: string): Redis {
  return new Redis(REDIS_URL, {
    maxRetriesPerRequest: null,
    ...(connectionName ? { connectionName } : {}),
  });
}

/** Deletes every key of a namespace (and of namespaces it prefixes): queues `{ns…}` and keys `ns…`. */
export async function purgeNamespace(ns: string): Promise<void> {
  const r = redis();
  try {
    for (const pattern of [`{${ns}*`, `${ns}*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await r.unlink(...keys);
      } while (cursor !== '0');
    }
  } finally {
    r.disconnect();
  }
}

export interface Machine {
  date: string;
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  kernel: string;
  node: string;
  redis: string;
  postgres: string;
}

/** The machine a figure ran on: CPUs, memory, kernel, Node, Redis and PostgreSQL versions. */
export async function machine(db: Db): Promise<Machine> {
  const r = redis();
  try {
    const info = await r.info('server');
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const { rows } = await sql<{ server_version: string }>`show server_version`.execute(db);
    return {
      date: new Date().toISOString(),
      cpus: os.availableParallelism(),
      cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      kernel: `${os.type()} ${os.release()}`,
      node: process.version,
      redis: redisVersion,
      postgres: rows[0]?.server_version ?? 'unknown',
    };
  } finally {
    r.disconnect();
  }
}

/** Resident set size of a process (VmRSS) and its peak (VmHWM), in MiB, from /proc. */
export function rssOf(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
