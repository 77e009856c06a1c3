import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

// Starts Loopline's processes as children, logs to .local/logs/<name>.log, and waits for
// each HTTP service to answer before going on.

export const root = new URL('../../../', import.meta.url).pathname;

export interface Service {
  name: string;
  child: ChildProcess;
  log: string;
  /** Settles when the child exits (with its code, or the signal that ended it). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns a service as a child process, its output appended to .local/logs/<name>.log. */
export function spawnService(
  name: string,
  script: string,
  env: Record<string, string>,
  args: string[] = [],
): Service {
  const logs = join(root, '.local', 'logs');
  mkdirSync(logs, { recursive: true });
  const log = join(logs, `${name}.log`);
  const out = createWriteStream(log, { flags: 'a' });
  const child = spawn(process.execPath, [join(root, script), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { name, child, log, exited };
}

/** True when nothing listens on the port: a second instance would otherwise talk to the first. */
export function portFree(port: number, host = '0.0.0.0'): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/**
 * Waits until `url` answers 200 and `accept` (when given) approves the body. A service that
 * exits meanwhile fails the wait at once, naming its log.
 */
export async function waitForHttp(
  url: string,
  opts: { service?: Service; accept?: (body: string) => boolean; timeoutMs?: number } = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  let died: string | undefined;
  void opts.service?.exited.then(({ code, signal }) => {
    died = `${opts.service?.name} exited (${signal ?? `code ${code}`}) before answering; see ${opts.service?.log}`;
  });
  while (Date.now() < deadline) {
    if (died) throw new Error(died);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      const body = await res.text();
      if (res.status === 200 && (opts.accept?.(body) ?? true)) return;
      last = `${res.status} ${body.slice(0, 120)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer as expected within ${timeoutMs} ms (last: ${last})`);
}
