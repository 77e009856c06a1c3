import { type ChildProcess, spawn } from 'node:child_process';
import {
  createWriteStream,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  type WriteStream,
} from 'node:fs';
import path from 'node:path';
import { faultLogDir } from './log-dirs.ts';
import { sleep } from './wait.ts';

// Real worker processes for fault tests: `node apps/worker/src/main.ts` children with small lock
// timings, their pino output kept (in memory and in a log file per process), and the signals a
// fault test sends them (SIGKILL, SIGSTOP/SIGCONT). Also maps a TCP client port back to the
// worker process that owns the socket, so a test can kill exactly the worker that is mid-tool or
// mid-stream.

const root = new URL('../../', import.meta.url).pathname;

export interface WorkerEnv {
  databaseUrl: string;
  redisUrl: string;
  namespace: string;
  /** OPENAI_BASE_URL (ends in /v1). */
  llmUrl: string;
  /** Session lock TTL and BullMQ job lock (ms). Takeovers need about lockMs + stalledMs. */
  lockMs?: number;
  stalledMs?: number;
  logLevel?: string;
  extra?: Record<string, string>;
}

export interface WorkerProc {
  /** 1-based, in start order; also its PostgreSQL application_name suffix. */
  n: number;
  pid: number;
  child: ChildProcess;
  /** Parsed pino lines (JSON), in order. */
  lines: Array<Record<string, unknown>>;
  exited: Promise<void>;
  alive: boolean;
  stopped: boolean;
  /** The test killed it (SIGKILL or SIGTERM); false for a crash. */
  killed: boolean;
  startedAt: number;
  /** The last few KB of stderr (a crash's stack trace). */
  stderr: string;
}

export interface Crash {
  worker: number;
  pid: number;
  code: number | null;
  signal: string | null;
  /** The first error line of its stderr. */
  reason: string;
  /** The end of its stderr. */
  stderr: string;
}

/** application_name of worker n's PostgreSQL connections. */
export const workerAppName = (n: number) => `loopline-worker-${n}`;
export const WORKER_APP_PREFIX = 'loopline-worker-';

export class WorkerPool {
  readonly procs: WorkerProc[] = [];
  readonly logDir: string;
  private next = 1;
  private readonly env: WorkerEnv;
  private readonly files: WriteStream[] = [];
  /** Workers that exited on their own; each is replaced when `supervise` is on. */
  readonly crashes: Crash[] = [];
  /** Restart a worker that crashed (as a process supervisor would). */
  supervise = false;

  constructor(env: WorkerEnv, logDir: string) {
    this.env = env;
    this.logDir = logDir;
    mkdirSync(logDir, { recursive: true });
  }

  get alive(): WorkerProc[] {
    return this.procs.filter((p) => p.alive);
  }

  /** Running (alive and not SIGSTOPped) workers. */
  get running(): WorkerProc[] {
    return this.procs.filter((p) => p.alive && !p.stopped);
  }

  start(): WorkerProc {
    const n = this.next++;
    const e = this.env;
    const url = new URL(e.databaseUrl);
    url.searchParams.set('application_name', workerAppName(n));
    const lockMs = String(e.lockMs ?? 2000);
    // The worker's production V8 setting (docs/DEPLOYMENT.md: young generation capped at 8 MiB).
    const child = spawn(process.execPath, ['--max-semi-space-size=8', `${root}apps/worker/src/main.ts`], {
      env: {
        ...process.env,
        DATABASE_URL: url.toString(),
        REDIS_URL: e.redisUrl,
        LOOPLINE_NAMESPACE: e.namespace,
        OPENAI_BASE_URL: e.llmUrl,
        OPENAI_API_KEY: 'test-key',
        // glibc's malloc arenas as in production (docs/DEPLOYMENT.md, worker memory).
        MALLOC_ARENA_MAX: '2',
        LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
        // The key test stacks seal webhook secrets with (stack.ts TEST_SECRETS_KEY).
        LOOPLINE_SECRETS_KEY: Buffer.alloc(32, 7).toString('hex'),
        WORKER_JOB_LOCK_MS: lockMs,
        WORKER_STALLED_INTERVAL_MS: String(e.stalledMs ?? 1000),
        LOOPLINE_LOCK_TTL_MS: lockMs,
        LOOPLINE_LOCK_RETRY_MS: '100',
        DB_POOL_MAX: '8',
        // Several workers on one machine: no fixed Prometheus port.
        WORKER_METRICS_PORT: '0',
        LOG_LEVEL: e.logLevel ?? 'warn',
        ...e.extra,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const file = createWriteStream(path.join(this.logDir, `worker-${n}.log`));
    this.files.push(file);
    const proc: WorkerProc = {
      n,
      pid: child.pid ?? -1,
      child,
      lines: [],
      alive: true,
      stopped: false,
      killed: false,
      startedAt: Date.now(),
      stderr: '',
      exited: new Promise((resolve) =>
        child.once('exit', (code, signal) => {
          proc.alive = false;
          if (!proc.killed) {
            const reason =
              proc.stderr.split('\n').find((l) => /^\s*(\w*Error\b|error:)/.test(l)) ??
              proc.stderr.trim().split('\n')[0] ??
              '';
            this.crashes.push({
              worker: n,
              pid: proc.pid,
              code,
              signal,
              reason: reason.trim(),
              stderr: proc.stderr,
            });
            if (this.supervise) this.start();
          }
          resolve();
        }),
      ),
    };
    let buf = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      file.write(chunk);
      buf += chunk.toString('utf8');
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          proc.lines.push(JSON.parse(line));
        } catch {
          proc.lines.push({ msg: line });
        }
        nl = buf.indexOf('\n');
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      file.write(chunk);
      proc.stderr = (proc.stderr + chunk.toString('utf8')).slice(-8192);
    });
    this.procs.push(proc);
    return proc;
  }

  async kill(proc: WorkerProc): Promise<void> {
    if (!proc.alive) return;
    proc.killed = true;
    proc.child.kill('SIGKILL');
    await proc.exited;
  }

  stop(proc: WorkerProc): void {
    if (!proc.alive || proc.stopped) return;
    process.kill(proc.pid, 'SIGSTOP');
    proc.stopped = true;
  }

  cont(proc: WorkerProc): void {
    if (!proc.alive || !proc.stopped) return;
    process.kill(proc.pid, 'SIGCONT');
    proc.stopped = false;
  }

  /** SIGTERM: the worker stops taking jobs and exits once its current jobs are done. */
  terminate(proc: WorkerProc): void {
    if (!proc.alive) return;
    proc.killed = true;
    this.cont(proc);
    proc.child.kill('SIGTERM');
  }

  /** Stops every worker: SIGTERM, then SIGKILL what is still alive after `graceMs`. */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.supervise = false;
    for (const p of this.alive) this.terminate(p);
    // A grace period, not a wait for a state: whatever has not exited by then is killed.
    await Promise.race([Promise.all(this.procs.map((p) => p.exited)), sleep(graceMs)]);
    await this.killAll();
  }

  /** Kills every worker still alive (SIGCONT first, so SIGKILL is not queued behind a stop). */
  async killAll(): Promise<void> {
    this.supervise = false;
    for (const p of this.alive) this.cont(p);
    await Promise.all(this.alive.map((p) => this.kill(p)));
    await Promise.all(this.files.splice(0).map((f) => new Promise((r) => f.end(r))));
  }

  /** Lines of every worker whose `msg` is `msg`. */
  logged(msg: string): Array<Record<string, unknown> & { worker: number }> {
    return this.procs.flatMap((p) =>
      p.lines.filter((l) => l.msg === msg).map((l) => ({ ...l, worker: p.n })),
    );
  }

  /** The live worker process whose TCP socket has local port `port` (the client end of a connection). */
  ownerOfPort(port: number): WorkerProc | undefined {
    const inodes = socketInodesOfLocalPort(port);
    if (inodes.size === 0) return undefined;
    for (const p of this.alive) {
      for (const inode of socketInodesOf(p.pid)) if (inodes.has(inode)) return p;
    }
    return undefined;
  }
}

/** Socket inodes of a process (from /proc/<pid>/fd). */
function socketInodesOf(pid: number): string[] {
  const out: string[] = [];
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m) out.push(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** Inodes of the TCP sockets whose local port is `port` (IPv4 and IPv6 tables). */
function socketInodesOfLocalPort(port: number): Set<string> {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = cols[1]!;
      if (local.slice(local.lastIndexOf(':') + 1) === hex) inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/**
 * A WorkerPool on a test stack (its database, Redis, namespace and mock model), logging under the
 * OS temp directory. `start` processes are started (none by default), supervised with `supervise`.
 */
export function stackWorkerPool(
  stack: { databaseUrl: string; redisUrl: string; namespace: string; mock: { url: string } },
  opts: Omit<WorkerEnv, 'databaseUrl' | 'redisUrl' | 'namespace' | 'llmUrl'> & {
    name?: string;
    start?: number;
    supervise?: boolean;
  },
): WorkerPool {
  const { name, start = 0, supervise = false, ...env } = opts;
  const pool = new WorkerPool(
    {
      databaseUrl: stack.databaseUrl,
      redisUrl: stack.redisUrl,
      namespace: stack.namespace,
      llmUrl: stack.mock.url,
      ...env,
    },
    faultLogDir(`${stack.namespace}${name ? `-${name}` : ''}`),
  );
  pool.supervise = supervise;
  for (let i = 0; i < start; i++) pool.start();
  return pool;
}
