import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';

// Starts Loopline's processes as children, logs to .local/logs/<name>.log, and waits for
// each HTTP service to answer before going on.

export const root = new URL('../../../', import.meta.url).pathname;

export function spawnService(
  name: string,
  script: string,
  env: Record<string, string>,
  args: string[] = [],
): ChildProcess {
  const logs = join(root, '.local', 'logs');
  mkdirSync(logs, { recursive: true });
  const out = createWriteStream(join(logs, `${name}.log`), { flags: 'a' });
  const child = spawn(process.execPath, [join(root, script), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  return child;
}

export async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}
