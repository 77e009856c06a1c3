import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startPrivateRedis } from '../support/redis-server.ts';
import { until } from '../support/wait.ts';

// The operator scripts as a newcomer runs them: the demo refuses a busy port before starting
// anything, `services.sh status|stop` reports and stops only the private instances the scripts
// started (here on private ports and a private state folder — never the machine's shared Redis or
// PostgreSQL), and `test.sh <file>` runs a subset without the coverage gates.

const root = new URL('../../', import.meta.url).pathname;
// The machine's PostgreSQL: it answers, so the scripts never start one; `stop` must leave it alone.
const sharedDatabaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/loopline';

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(script: string, args: string[], env: Record<string, string>): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(root, script), args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** True when something accepts a TCP connection on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(true));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

describe('scripts/demo.sh', () => {
  it('exits non-zero on a busy gateway port and names it, starting nothing', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const address = busy.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const mockPort = await freePort();
    const toolsPort = await freePort();
    try {
      const ran = await run('scripts/demo.sh', [], {
        PORT: String(port),
        MOCK_LLM_PORT: String(mockPort),
        DEMO_TOOLS_PORT: String(toolsPort),
        DATABASE_URL: sharedDatabaseUrl,
      });
      expect(ran.code).not.toBe(0);
      expect(ran.stderr).toContain(`port ${port} (the gateway) is in use`);
      expect(ran.stderr).toContain('set PORT');
      // Nothing was started: the mock model and the tool server never took their ports.
      expect(await listening(mockPort)).toBe(false);
      expect(await listening(toolsPort)).toBe(false);
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });
});

describe('scripts/services.sh', () => {
  const state = mkdtempSync(join(tmpdir(), 'loopline-services-'));
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
    rmSync(state, { recursive: true, force: true });
  });

  it('reports and stops only the Redis it started, never another one nor the shared PostgreSQL', async () => {
    // A Redis these scripts did not start (its data folder is not the state folder).
    const foreign = await startPrivateRedis();
    cleanups.push(() => foreign.close());
    const ownPort = await freePort();
    const own = { LOOPLINE_STATE_DIR: state, DATABASE_URL: sharedDatabaseUrl };
    const ownEnv = { ...own, REDIS_URL: `redis://127.0.0.1:${ownPort}` };
    const foreignEnv = { ...own, REDIS_URL: foreign.url };
    cleanups.push(() => run('scripts/services.sh', ['stop'], ownEnv));

    const before = await run('scripts/services.sh', ['status'], ownEnv);
    expect(before.stdout).toContain(`Redis 127.0.0.1:${ownPort}: not answering`);
    expect(before.code).toBe(3);

    const started = await run('scripts/services.sh', ['start'], ownEnv);
    expect(started.code).toBe(0);
    expect(started.stderr).toContain(`starting Redis on 127.0.0.1:${ownPort}`);
    // The shared PostgreSQL answers, so none was started.
    expect(started.stderr).not.toContain('starting PostgreSQL');

    const status = await run('scripts/services.sh', ['status'], ownEnv);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`Redis 127.0.0.1:${ownPort}: running (private, data in ${state}/redis)`);
    expect(status.stdout).toMatch(/PostgreSQL \S+: answering \(not started by these scripts\)/);

    const other = await run('scripts/services.sh', ['status'], foreignEnv);
    expect(other.stdout).toContain(
      `Redis 127.0.0.1:${foreign.port}: answering (not started by these scripts)`,
    );
    const notOurs = await run('scripts/services.sh', ['stop'], foreignEnv);
    expect(notOurs.code).toBe(0);
    expect(notOurs.stderr).toContain(`no private Redis on 127.0.0.1:${foreign.port} (nothing stopped)`);
    expect(notOurs.stderr).toContain('(nothing stopped)');
    expect(await listening(foreign.port)).toBe(true);

    const stopped = await run('scripts/services.sh', ['stop'], ownEnv);
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toContain(`stopped the private Redis on 127.0.0.1:${ownPort}`);
    expect(stopped.stderr).toMatch(/no private PostgreSQL of this checkout on \S+ \(nothing stopped\)/);
    await until('the private Redis to stop listening', async () => !(await listening(ownPort)), 10_000);
    const after = await run('scripts/services.sh', ['status'], ownEnv);
    expect(after.stdout).toContain(`Redis 127.0.0.1:${ownPort}: not answering`);
    // The other Redis and the shared PostgreSQL still answer.
    expect(await listening(foreign.port)).toBe(true);
    expect(after.stdout).toMatch(/PostgreSQL \S+: answering/);
  });
});

describe('scripts/test.sh', () => {
  it('gates coverage on a full run only', async () => {
    const dry = { LOOPLINE_TEST_DRY_RUN: '1' };
    const subset = await run('scripts/test.sh', ['test/ops/scripts.test.ts'], dry);
    expect(subset.code).toBe(0);
    expect(subset.stdout.trim()).toBe('vitest run test/ops/scripts.test.ts');
    const full = await run('scripts/test.sh', ['--bail=1'], dry);
    expect(full.stdout.trim()).toBe('vitest run --coverage --bail=1');
  });
});
