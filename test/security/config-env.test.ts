import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, parseDurationMs } from '@loopline/core';
import { describe, expect, it } from 'vitest';
import { demoConfigFromEnv } from '../../apps/cli/src/config.ts';
import { gatewayConfigFromEnv } from '../../apps/gateway/src/config.ts';
import { workerConfigFromEnv } from '../../apps/worker/src/config.ts';
import { README, readmeEnvTable, renderEnvTable } from '../../scripts/env-table.ts';

// Environment variables are parsed once per process by one zod schema: explicit units (`15s` is
// 15,000 ms, never 15 ms), a clear error naming the variable and a non-zero exit on a bad value
// (never NaN), and the README's configuration table is the one rendered from the same schemas.

const root = new URL('../../', import.meta.url).pathname;
const GATEWAY = { LOOPLINE_OPERATOR_TOKEN: 'operator-token-for-tests' };

/** Runs a process entry point with `env` and returns its exit code and stderr. */
function run(entry: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, entry)], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('durations have explicit units', () => {
  it('parses milliseconds and unit suffixes, refuses anything else', () => {
    expect(parseDurationMs('15000')).toBe(15_000);
    expect(parseDurationMs('500ms')).toBe(500);
    expect(parseDurationMs('15s')).toBe(15_000);
    expect(parseDurationMs('1.5s')).toBe(1_500);
    expect(parseDurationMs('2m')).toBe(120_000);
    expect(parseDurationMs('1h')).toBe(3_600_000);
    for (const bad of ['abc', '', '15 sec', '-5', '1e3', '0x10', '15s5'])
      expect(parseDurationMs(bad), bad).toBeUndefined();
  });

  it('LOOPLINE_LOCK_TTL_MS=15s is a 15-second lock; abc and 15 (ms) are refused', () => {
    expect(workerConfigFromEnv({ LOOPLINE_LOCK_TTL_MS: '15s' }).LOOPLINE_LOCK_TTL_MS).toBe(15_000);
    expect(workerConfigFromEnv({ LOOPLINE_LOCK_TTL_MS: '15000' }).LOOPLINE_LOCK_TTL_MS).toBe(15_000);
    expect(workerConfigFromEnv({}).LOOPLINE_LOCK_TTL_MS).toBe(15_000);
    expect(() => workerConfigFromEnv({ LOOPLINE_LOCK_TTL_MS: 'abc' })).toThrow(
      /LOOPLINE_LOCK_TTL_MS must be milliseconds/,
    );
    // A bare "15" is 15 ms: below the floor of a lock TTL, so an error rather than a silent 15 ms lock.
    expect(() => workerConfigFromEnv({ LOOPLINE_LOCK_TTL_MS: '15' })).toThrow(
      /LOOPLINE_LOCK_TTL_MS must be between/,
    );
  });
});

describe('every variable is checked', () => {
  it('gateway: integers, flags, URLs and the required token, all errors at once', () => {
    const env = gatewayConfigFromEnv({
      ...GATEWAY,
      LOOPLINE_AUTH_CACHE_MS: '2s',
      LOOPLINE_DISABLE_PRUNE: 'yes',
    });
    expect(env.LOOPLINE_AUTH_CACHE_MS).toBe(2_000);
    expect(env.LOOPLINE_DISABLE_PRUNE).toBe(true);
    expect(env.PORT).toBe(3000);
    expect(env.LOOPLINE_TRUST_PROXY).toBe(false);
    expect(gatewayConfigFromEnv({ ...GATEWAY, LOOPLINE_TRUST_PROXY: 'true' }).LOOPLINE_TRUST_PROXY).toBe(
      true,
    );
    expect(gatewayConfigFromEnv({ ...GATEWAY, LOOPLINE_TRUST_PROXY: '2' }).LOOPLINE_TRUST_PROXY).toBe(2);
    expect(
      gatewayConfigFromEnv({ ...GATEWAY, LOOPLINE_TRUST_PROXY: '10.0.0.0/8, ::1' }).LOOPLINE_TRUST_PROXY,
    ).toEqual(['10.0.0.0/8', '::1']);
    expect(() => gatewayConfigFromEnv({ ...GATEWAY, LOOPLINE_TRUST_PROXY: 'everyone' })).toThrow(
      /LOOPLINE_TRUST_PROXY/,
    );
    // A guessable operator token stops the gateway (the throttles slow guessing, they cannot make
    // `change-me` safe); 16 characters is the least.
    expect(() => gatewayConfigFromEnv({ LOOPLINE_OPERATOR_TOKEN: 'change-me' })).toThrow(
      /LOOPLINE_OPERATOR_TOKEN must be at least 16 characters/,
    );
    expect(gatewayConfigFromEnv({ LOOPLINE_OPERATOR_TOKEN: 'x'.repeat(16) }).LOOPLINE_OPERATOR_TOKEN).toBe(
      'x'.repeat(16),
    );
    let error: unknown;
    try {
      gatewayConfigFromEnv({
        PORT: 'eighty',
        LOOPLINE_RATE_LIMIT_PER_MINUTE: '12.5',
        LOOPLINE_DISABLE_AUTOCOMPACT: 'maybe',
        REDIS_URL: 'http://x',
        LOG_LEVEL: 'loud',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues.join('\n');
    for (const name of [
      'LOOPLINE_OPERATOR_TOKEN is required',
      'PORT must be an integer',
      'LOOPLINE_RATE_LIMIT_PER_MINUTE must be an integer',
      'LOOPLINE_DISABLE_AUTOCOMPACT must be 1/true',
      'REDIS_URL must be a redis or rediss URL',
      'LOG_LEVEL',
    ])
      expect(issues).toContain(name);
  });

  it('worker: counts and concurrency have sane bounds; an empty value counts as unset', () => {
    expect(() => workerConfigFromEnv({ WORKER_STEP_CONCURRENCY: '0' })).toThrow(/WORKER_STEP_CONCURRENCY/);
    expect(() => workerConfigFromEnv({ DB_POOL_MAX: 'NaN' })).toThrow(/DB_POOL_MAX must be an integer/);
    expect(() => workerConfigFromEnv({ DB_PREPARED_STATEMENTS: '-1' })).toThrow(/DB_PREPARED_STATEMENTS/);
    expect(workerConfigFromEnv({ DB_PREPARED_STATEMENTS: '0' }).DB_PREPARED_STATEMENTS).toBe(0); // off
    expect(workerConfigFromEnv({}).DB_PREPARED_STATEMENTS).toBe(100);
    expect(() => workerConfigFromEnv({ WORKER_METRICS_PORT: '70000' })).toThrow(/WORKER_METRICS_PORT/);
    // The group commits' sizes: 1 (off) to 1,000 items per statement, at least one statement at a time.
    expect(() => workerConfigFromEnv({ WORKER_FINISH_BATCH_MAX: '0' })).toThrow(/WORKER_FINISH_BATCH_MAX/);
    expect(() => workerConfigFromEnv({ WORKER_FINISH_BATCH_MAX: '1001' })).toThrow(/WORKER_FINISH_BATCH_MAX/);
    expect(() => workerConfigFromEnv({ WORKER_FINISH_CONCURRENCY: '0' })).toThrow(
      /WORKER_FINISH_CONCURRENCY/,
    );
    expect(workerConfigFromEnv({ WORKER_FINISH_BATCH_MAX: '1' }).WORKER_FINISH_BATCH_MAX).toBe(1);
    expect(workerConfigFromEnv({})).toMatchObject({
      WORKER_FINISH_BATCH_MAX: 64,
      WORKER_FINISH_CONCURRENCY: 1,
    });
    const env = workerConfigFromEnv({ WORKER_METRICS_TOKEN: '', LOOPLINE_WEBHOOK_ALLOW_HOSTS: 'a, b,,' });
    expect(env.WORKER_METRICS_TOKEN).toBeUndefined();
    expect(env.LOOPLINE_WEBHOOK_ALLOW_HOSTS).toEqual(['a', 'b']);
    expect(env.WORKER_METRICS_HOST).toBe('127.0.0.1');
    expect(() => demoConfigFromEnv({ MOCK_LLM_PORT: '40x' })).toThrow(/MOCK_LLM_PORT/);
  });

  it('gateway and worker refuse to start on a bad value: the variable named, exit code non-zero', async () => {
    const gateway = await run('apps/gateway/src/server.ts', {
      ...GATEWAY,
      LOOPLINE_AUTH_CACHE_MS: 'abc',
      DATABASE_URL: 'postgres://127.0.0.1:1/never',
    });
    expect(gateway.code).not.toBe(0);
    expect(gateway.stderr).toContain('LOOPLINE_AUTH_CACHE_MS must be milliseconds or a duration');
    expect(gateway.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    const worker = await run('apps/worker/src/main.ts', {
      LOOPLINE_LOCK_TTL_MS: 'abc',
      DATABASE_URL: 'postgres://127.0.0.1:1/never',
    });
    expect(worker.code).not.toBe(0);
    expect(worker.stderr).toContain('LOOPLINE_LOCK_TTL_MS must be milliseconds or a duration');
  });

  it('services read process.env only in their entry points (through the schema)', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts') && /process\.env\b/.test(readFileSync(path, 'utf8')))
          offenders.push(path);
      }
    };
    for (const app of ['apps/gateway/src', 'apps/worker/src']) walk(join(root, app));
    const allowed = [
      'apps/gateway/src/server.ts',
      'apps/gateway/src/config.ts',
      'apps/worker/src/main.ts',
      'apps/worker/src/config.ts',
    ];
    expect(offenders.map((p) => p.slice(root.length)).filter((p) => !allowed.includes(p))).toEqual([]);
  });
});

describe('README configuration table', () => {
  it('is exactly the table rendered from the schemas (node scripts/env-table.ts --write)', () => {
    const table = readmeEnvTable(readFileSync(README, 'utf8'));
    expect(table, 'README.md has no env-table markers').toBeDefined();
    expect(table).toBe(renderEnvTable());
  });
});
