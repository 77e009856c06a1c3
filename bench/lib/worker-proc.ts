import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
// The worker's own configuration parser (not exported by @loopline/worker): the bench reads the
// step concurrency exactly as the worker process will, from the same environment.
import { workerConfigFromEnv } from '../../apps/worker/src/config.ts';
import { REDIS_URL } from './infra.ts';
import { OUT_DIR, spawnNode } from './proc.ts';

// The real worker process (apps/worker/src/main.ts) as the figures start it: the service's
// database and namespace, the mock model, titles off, node flags as deployed. Its step
// concurrency is whatever the worker's configuration gives for this environment (its default
// unless BENCH_WORKER_STEP_CONCURRENCY or the caller sets WORKER_STEP_CONCURRENCY), and is
// reported with every figure that depends on it.

// The worker as deployed (infra/compose.yaml, docs/DEPLOYMENT.md): young generation capped at 8 MiB.
// BENCH_WORKER_NODE_ARGS='' measures V8's default (16 MiB semi-spaces) instead.
export const WORKER_NODE_ARGS = (process.env.BENCH_WORKER_NODE_ARGS ?? '--max-semi-space-size=8')
  .split(' ')
  .filter((a) => a !== '');

export interface WorkerProcess {
  child: ChildProcess;
  /** WORKER_STEP_CONCURRENCY as the worker parses it from its environment. */
  stepConcurrency: number;
}

// The worker as deployed keeps Node's compile cache (docs/DEPLOYMENT.md, worker memory): from its
// second start on, its TypeScript is read stripped and compiled from the cache, and the type
// stripper is never loaded. BENCH_WORKER_COMPILE_CACHE='' measures a worker without it.
export const WORKER_COMPILE_CACHE =
  process.env.BENCH_WORKER_COMPILE_CACHE ?? path.join(OUT_DIR, 'node-compile-cache');

// glibc's malloc arenas capped as deployed (infra/compose.yaml, docs/DEPLOYMENT.md worker memory).
// BENCH_WORKER_MALLOC_ARENA_MAX='' measures glibc's default (up to 8 arenas per core).
export const WORKER_MALLOC_ARENA_MAX = process.env.BENCH_WORKER_MALLOC_ARENA_MAX ?? '2';

/** How the bench starts its workers, for the figures' details: node flags and malloc arenas. */
export function workerRuntimeLabel(): string {
  const node = WORKER_NODE_ARGS.join(' ') || '(V8 defaults)';
  return `node ${node}, MALLOC_ARENA_MAX=${WORKER_MALLOC_ARENA_MAX || "(glibc's default)"}`;
}

/** The environment of a bench worker process. */
export function workerEnv(opts: {
  databaseUrl: string;
  namespace: string;
  mockUrl: string;
  env?: NodeJS.ProcessEnv;
}): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL,
    LOOPLINE_NAMESPACE: opts.namespace,
    OPENAI_BASE_URL: opts.mockUrl,
    OPENAI_API_KEY: 'bench-key',
    LOG_LEVEL: 'warn',
    // A title is one extra model call per new session, not part of the loop being measured.
    LOOPLINE_DISABLE_TITLES: '1',
    ...(WORKER_COMPILE_CACHE ? { NODE_COMPILE_CACHE: WORKER_COMPILE_CACHE } : {}),
    ...(WORKER_MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: WORKER_MALLOC_ARENA_MAX } : {}),
    ...(process.env.BENCH_WORKER_STEP_CONCURRENCY
      ? { WORKER_STEP_CONCURRENCY: process.env.BENCH_WORKER_STEP_CONCURRENCY }
      : {}),
    // e.g. BENCH_WORKER_NODE_OPTIONS=--max-semi-space-size=4 to try V8 heap settings.
    ...(process.env.BENCH_WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS } : {}),
    ...opts.env,
  };
}

/** The step concurrency the worker will run with in this environment. */
export function stepConcurrencyOf(env: NodeJS.ProcessEnv): number {
  return workerConfigFromEnv({ ...process.env, ...env }).WORKER_STEP_CONCURRENCY;
}

/** Spawns a worker process (apps/worker/src/main.ts) for a bench run. */
export function spawnWorker(
  opts: { databaseUrl: string; namespace: string; mockUrl: string; env?: NodeJS.ProcessEnv },
  log: string,
): WorkerProcess {
  const env = workerEnv(opts);
  const stepConcurrency = stepConcurrencyOf(env);
  const child = spawnNode('apps/worker/src/main.ts', env, { log, nodeArgs: WORKER_NODE_ARGS });
  return { child, stepConcurrency };
}

/** CPU time (user + system) of a process so far, in ms, from /proc/<pid>/stat (USER_HZ = 100). */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}
