import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  OPERATOR,
  type Stack,
  startStack,
  tenantWithSession,
} from '../../apps/gateway/test/helpers.ts';
import { workerConfigFromEnv } from '../../apps/worker/src/config.ts';
import { createWorkerMetrics } from '../../apps/worker/src/metrics.ts';
import { startMetricsServer } from '../../apps/worker/src/metrics-server.ts';

// Metrics expose nothing by default: the worker's listener binds loopback unless configured,
// takes a bearer token, and neither process labels series with tenant ids unless the operator
// opts in (LOOPLINE_METRICS_TENANT_LABELS: one series per tenant).

/** A non-loopback IPv4 address of this machine, if it has one. */
const externalAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

const scrape = async (url: string, token?: string) => {
  const res = await fetch(url, { headers: token ? bearer(token) : {} });
  return { status: res.status, text: await res.text() };
};

const usage = { input: 100, output: 20, reasoning: 0, cache: { read: 10, write: 0 }, total: 130 };

describe('worker /metrics', () => {
  it('listens on 127.0.0.1 by default (the environment default too), not on every interface', async () => {
    expect(workerConfigFromEnv({}).WORKER_METRICS_HOST).toBe('127.0.0.1');
    const server = await startMetricsServer(createWorkerMetrics({ defaultMetrics: false }), { port: 0 });
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
      expect((await scrape(`${server.url}/metrics`)).status).toBe(200);
      if (externalAddress) {
        await expect(fetch(`http://${externalAddress}:${server.port}/metrics`)).rejects.toThrow();
      }
    } finally {
      await server.close();
    }
  });

  it('wants the bearer token when one is configured', async () => {
    const server = await startMetricsServer(createWorkerMetrics({ defaultMetrics: false }), {
      port: 0,
      token: 'scrape-secret',
    });
    try {
      expect((await scrape(`${server.url}/metrics`)).status).toBe(401);
      expect((await scrape(`${server.url}/metrics`, 'wrong')).status).toBe(401);
      expect((await scrape(`${server.url}/metrics`, 'scrape-secret')).status).toBe(200);
      expect((await scrape(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('has no tenant label by default; LOOPLINE_METRICS_TENANT_LABELS opts in', async () => {
    expect(workerConfigFromEnv({}).LOOPLINE_METRICS_TENANT_LABELS).toBe(false);
    const call = {
      purpose: 'step' as const,
      model: 'compatible/m',
      tenantId: 'ten_secretive',
      seconds: 0.1,
      outcome: 'finish' as const,
      usage,
    };
    const plain = createWorkerMetrics({ defaultMetrics: false });
    plain.modelCall(call);
    const text = await plain.registry.metrics();
    expect(text).toMatch(/loopline_tokens_in_total\{model="compatible\/m",purpose="step"\} 110/);
    expect(text).not.toContain('ten_secretive');
    expect(text).not.toMatch(/tenant=/);

    const labelled = createWorkerMetrics({
      defaultMetrics: false,
      tenantLabels: workerConfigFromEnv({ LOOPLINE_METRICS_TENANT_LABELS: '1' })
        .LOOPLINE_METRICS_TENANT_LABELS,
    });
    labelled.modelCall(call);
    expect(await labelled.registry.metrics()).toContain('tenant="ten_secretive"');
  });
});

describe('gateway /metrics', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack('worker_metrics_gw');
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('counts sessions and messages without tenant ids by default', async () => {
    const t = await tenantWithSession(stack.app, 'quiet');
    const posted = await stack.app.inject({
      method: 'POST',
      url: `/v1/sessions/${t.sessionId}/messages`,
      headers: t.auth,
      payload: { text: 'hi' },
    });
    expect(posted.statusCode).toBe(202);
    const res = await stack.app.inject({ method: 'GET', url: '/metrics', headers: bearer(OPERATOR) });
    const own = res.body.split('\n').filter((l) => l.startsWith('loopline_'));
    expect(own).toContain('loopline_sessions_created_total 1');
    expect(own).toContain('loopline_messages_accepted_total 1');
    expect(res.body).not.toContain(t.tenant.id);
    expect(own.filter((l) => l.includes('tenant='))).toEqual([]);
  });
});
