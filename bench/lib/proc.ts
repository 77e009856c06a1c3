import { type ChildProcess, fork, spawn } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Child processes of the bench: IPC children (mock model, bare chain, XADD server) that answer
// requests, and plain Node processes (the real worker and gateway) whose output goes to a log
// file under bench/out/logs. Every child is stopped by its own pid, SIGTERM first.

export const BENCH_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const ROOT_DIR = path.dirname(BENCH_DIR);
export const OUT_DIR = path.join(BENCH_DIR, 'out');

// Children still running when a figure exits (normally or not) are killed by pid, so that a
// failed figure leaves no worker or gateway process behind.
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Opens bench/out/logs/<name>.log for a child's output. */
export function logFile(name: string): number {
  const dir = path.join(OUT_DIR, 'logs');
  mkdirSync(dir, { recursive: true });
  return openSync(path.join(dir, `${name}.log`), 'w');
}

export interface IpcChild {
  child: ChildProcess;
  /** The child's first message (`{type: 'ready', …}`). */
  ready: Promise<Record<string, unknown>>;
  request<T = unknown>(msg: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

/** Forks a bench script with an IPC channel; it answers `{id, …}` requests with `{id, reply}`. */
export function forkChild(script: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): IpcChild {
  const out = logFile(path.basename(script, '.ts'));
  const child = track(
    fork(path.join(BENCH_DIR, script), args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', out, out, 'ipc'],
      execArgv: [],
    }),
  );
  let next = 0;
  const pending = new Map<number, (reply: unknown) => void>();
  let onReady: (msg: Record<string, unknown>) => void = () => undefined;
  let onFail: (err: Error) => void = () => undefined;
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  child.on('message', (raw) => {
    const msg = raw as Record<string, unknown>;
    if (msg.type === 'ready') onReady(msg);
    else if (typeof msg.id === 'number') {
      pending.get(msg.id)?.(msg.reply);
      pending.delete(msg.id);
    }
  });
  child.on('exit', (code) => {
    onFail(new Error(`${script} exited with ${code} before it was ready (see bench/out/logs)`));
    for (const resolve of pending.values()) resolve(undefined);
    pending.clear();
  });
  return {
    child,
    ready,
    request<T>(msg: Record<string, unknown>) {
      const id = next++;
      return new Promise<T>((resolve) => {
        pending.set(id, resolve as (reply: unknown) => void);
        child.send({ ...msg, id });
      });
    },
    stop: () => stopProcess(child),
  };
}

/** Starts `node <script>` (a path from the repository root) with extra environment and a log file. */
export function spawnNode(
  script: string,
  env: NodeJS.ProcessEnv,
  opts: { log: string; nodeArgs?: string[] },
): ChildProcess {
  const out = logFile(opts.log);
  return track(
    spawn(process.execPath, [...(opts.nodeArgs ?? []), path.join(ROOT_DIR, script)], {
      cwd: ROOT_DIR,
      env: { ...process.env, ...env },
      stdio: ['ignore', out, out],
    }),
  );
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The handler side of forkChild: reports ready and answers requests. */
export function serveParent(
  ready: Record<string, unknown>,
  handle: (msg: Record<string, unknown>) => Promise<unknown> | unknown,
): void {
  process.on('message', async (raw) => {
    const msg = raw as Record<string, unknown>;
    const reply = await handle(msg);
    process.send?.({ id: msg.id, reply });
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready', ...ready });
}
