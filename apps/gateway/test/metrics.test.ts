import { Writable } from 'node:stream';
import { JOBS, jobIds } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { createGatewayMetrics } from '../src/metrics.ts';
import { mergeExpositions } from '../src/plugins/metrics.ts';
import { bearer, expectProblem, OPERATOR, type Stack, startStack, tenantWithSession } from './helpers.ts';

// Operations on the gateway: /metrics behind the operator token (the app's own registry plus
// BullMQ's job counts for every queue of the catalog), Bull Board over the same queues, and
// request logs that carry the tenant and session ids.

let stack: Stack;
const QUEUE_NAMES = Object.values(JOBS).map((j) => j.queue);

beforeAll(async () => {
  stack = await startStack('metrics', { metricsTenantLabels: true }); // opt-in per-tenant series
});
afterAll(() => stack?.close());

async function scrape(app = stack.app): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(OPERATOR) });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toContain('text/plain');
  return res.body;
}

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => new RegExp(`[{,]\\s*${k}="${v}"`).test(line))) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('/metrics', () => {
  it('needs the operator token', async () => {
    for (const headers of [{}, bearer('wrong')]) {
      expectProblem(await stack.app.inject({ method: 'GET', url: '/metrics', headers }), 401, 'unauthorized');
    }
    const t = await tenantWithSession(stack.app, 'not-operator');
    expectProblem(await stack.app.inject({ method: 'GET', url: '/metrics', headers: t.auth }), 401);
  });

  it('exposes BullMQ job counts for every queue of the catalog, each family once', async () => {
    await stack.queues.add('title', jobIds.title('ses_metrics'), {
      tenantId: 'ten_x',
      sessionId: 'ses_metrics',
    });
    const text = await scrape();
    for (const queue of QUEUE_NAMES) {
      expect(sample(text, 'bullmq_job_count', { queue, state: 'completed' }), queue).toBe(0);
      expect(sample(text, 'bullmq_job_completed_total', { queue }), queue).toBeDefined();
      expect(sample(text, 'bullmq_job_failed_total', { queue }), queue).toBeDefined();
    }
    const titleQueued =
      (sample(text, 'bullmq_job_count', { queue: 'loopline-title', state: 'waiting' }) ?? 0) +
      (sample(text, 'bullmq_job_count', { queue: 'loopline-title', state: 'prioritized' }) ?? 0);
    expect(titleQueued).toBe(1);
    for (const family of ['bullmq_job_count', 'bullmq_job_completed_total', 'process_cpu_seconds_total']) {
      expect(
        text
          .split('\n')
          .filter((l) => l === `# TYPE ${family} ${family.endsWith('total') ? 'counter' : 'gauge'}`),
      ).toHaveLength(1);
    }
    expect(sample(text, 'loopline_queue_metrics_up')).toBe(1);
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('counts requests by route template, and sessions and messages by tenant', async () => {
    const t = await tenantWithSession(stack.app, 'counted');
    for (let i = 0; i < 2; i++) {
      const res = await stack.app.inject({
        method: 'POST',
        url: `/v1/sessions/${t.sessionId}/messages`,
        headers: t.auth,
        payload: { text: `hello ${i}` },
      });
      expect(res.statusCode, res.body).toBe(202);
    }
    await stack.app.inject({ method: 'GET', url: '/v1/sessions/ses_unknown', headers: t.auth });
    const text = await scrape();
    const tenant = t.tenant.id;
    expect(sample(text, 'loopline_sessions_created_total', { tenant })).toBe(1);
    expect(sample(text, 'loopline_messages_accepted_total', { tenant })).toBe(2);
    // One after the other, each message found a free statement slot: written alone (D39).
    expect(sample(text, 'loopline_append_batch_messages_bucket', { le: '1' })).toBeGreaterThanOrEqual(2);
    const route = '/v1/sessions/:id/messages';
    expect(sample(text, 'loopline_http_requests_total', { method: 'POST', route, status: '202' })).toBe(2);
    expect(
      sample(text, 'loopline_http_request_duration_seconds_count', { method: 'POST', route, status: '202' }),
    ).toBe(2);
    // Route templates, never raw ids.
    expect(sample(text, 'loopline_http_requests_total', { route: '/v1/sessions/:id', status: '404' })).toBe(
      1,
    );
    expect(text).not.toContain(t.sessionId);
  });

  it('keeps one registry per app: two apps in one process count separately', async () => {
    const metrics = createGatewayMetrics({ defaultMetrics: false, tenantLabels: true });
    const other = await buildApp({
      db: stack.db,
      redis: stack.redis,
      queues: stack.queues,
      keys: stack.keys,
      operatorToken: OPERATOR,
      metrics,
    });
    try {
      const t = await tenantWithSession(other, 'second-app');
      const text = await scrape(other);
      expect(sample(text, 'loopline_sessions_created_total', { tenant: t.tenant.id })).toBe(1);
      expect(sample(text, 'process_cpu_seconds_total')).toBeUndefined(); // defaults off for this one
      const first = await scrape();
      expect(sample(first, 'loopline_sessions_created_total', { tenant: t.tenant.id })).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('merges BullMQ expositions so HELP/TYPE appear once per family', () => {
    const q = (name: string) =>
      [
        '# HELP bullmq_job_count Number of jobs',
        '# TYPE bullmq_job_count gauge',
        `bullmq_job_count{queue="${name}", state="waiting"} 1`,
        '# HELP bullmq_job_failed_total Failed',
        '# TYPE bullmq_job_failed_total counter',
        `bullmq_job_failed_total{queue="${name}"} 0`,
      ].join('\n');
    expect(mergeExpositions([q('a'), q('b')]).split('\n')).toEqual([
      '# HELP bullmq_job_count Number of jobs',
      '# TYPE bullmq_job_count gauge',
      'bullmq_job_count{queue="a", state="waiting"} 1',
      'bullmq_job_count{queue="b", state="waiting"} 1',
      '# HELP bullmq_job_failed_total Failed',
      '# TYPE bullmq_job_failed_total counter',
      'bullmq_job_failed_total{queue="a"} 0',
      'bullmq_job_failed_total{queue="b"} 0',
    ]);
  });
});

describe('Bull Board', () => {
  it('lists every queue of the job catalog', async () => {
    const api = await stack.app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: bearer(OPERATOR),
    });
    expect(api.statusCode, api.body).toBe(200);
    const names = (api.json().queues as { name: string }[]).map((q) => q.name).sort();
    expect(names).toEqual([...QUEUE_NAMES].sort());
    expect(names).toContain('loopline-title');
  });
});

describe('request logs', () => {
  it('carry tenantId and sessionId (once each) after auth', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const raw: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          raw.push(line);
          lines.push(JSON.parse(line));
        }
        done();
      },
    });
    const app = await buildApp({
      db: stack.db,
      redis: stack.redis,
      queues: stack.queues,
      keys: stack.keys,
      operatorToken: OPERATOR,
      logger: { level: 'info', stream },
      metrics: createGatewayMetrics({ defaultMetrics: false }),
    });
    try {
      const t = await tenantWithSession(app, 'logged');
      lines.length = 0;
      raw.length = 0;
      const ok = await app.inject({ method: 'GET', url: `/v1/sessions/${t.sessionId}`, headers: t.auth });
      expect(ok.statusCode).toBe(200);
      const missing = await app.inject({
        method: 'GET',
        url: '/v1/sessions/ses_nope/context',
        headers: t.auth,
      });
      expect(missing.statusCode).toBe(404);
      const done = lines.filter((l) => l.msg === 'request completed');
      expect(done).toHaveLength(2);
      expect(done[0]).toMatchObject({ tenantId: t.tenant.id, sessionId: t.sessionId });
      expect(done[1]).toMatchObject({ tenantId: t.tenant.id, sessionId: 'ses_nope' });
      // The 404's own log line too, without repeating the ids.
      const refused = lines.find((l) => l.code === 'not_found');
      expect(refused).toMatchObject({ tenantId: t.tenant.id, sessionId: 'ses_nope' });
      for (const line of raw.filter((l) => l.includes('"sessionId"'))) {
        expect(line.match(/"sessionId"/g)).toHaveLength(1);
        expect(line.match(/"tenantId"/g)).toHaveLength(1);
      }
      // Operator routes name the tenant of the path.
      lines.length = 0;
      await app.inject({
        method: 'POST',
        url: `/v1/admin/tenants/${t.tenant.id}/keys`,
        headers: bearer(OPERATOR),
      });
      expect(lines.find((l) => l.msg === 'request completed')).toMatchObject({ tenantId: t.tenant.id });
    } finally {
      await app.close();
    }
  });
});
