import { Writable } from 'node:stream';
import { acquireFence } from '@loopline/db';
import { JOBS } from '@loopline/queue';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  bigTurn,
  CONTINUE,
  defineBig,
  SUMMARY_SYSTEM,
  summaryRule,
  WHOLE_OUTPUTS,
  waitFor,
} from './context-fixtures.ts';

// Operations end to end: a session driven through tool calls, a prune and a summary compaction,
// then both /metrics endpoints — the gateway's (operator token; its own registry plus BullMQ's job
// counts for every queue) and the worker's (WORKER_METRICS_PORT; here an ephemeral port) with the
// loop's latency histograms, tokens by tenant, compactions by rung, prune savings, lock waits
// and fence rejections. The worker's log says the same per compaction: one info line.

let stack: Stack;
let client: Client;
const lines: Record<string, any>[] = [];

beforeAll(async () => {
  stack = await startStack({ workerMetrics: true, metricsTenantLabels: true }); // opt-in tenant series
  // The workers read deps.logger per job: capture the info lines they write from now on.
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  stack.deps.logger = pino({ level: 'info' }, sink);
  client = await stack.tenant('ops');
  await defineBig(client, stack);
});
afterAll(() => stack?.close());

async function scrape(url: string, token?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, text: await res.text() };
}
const gateway = async () => {
  const r = await scrape(`${stack.url}/metrics`, stack.operatorToken);
  expect(r.status, r.text).toBe(200);
  return r.text;
};
const worker = async () => {
  const r = await scrape(stack.workerMetricsUrl!);
  expect(r.status, r.text).toBe(200);
  return r.text;
};

/** Sum of the samples of `name` whose labels include `labels` (0 when none). */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => new RegExp(`[{,]\\s*${k}="${v}"`).test(line))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('metrics after a session with tool calls and a compaction', () => {
  it('gateway /metrics: 401 without the operator token; BullMQ counts of every queue; gateway counters', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continuing: all done' },
        },
        ...bigTurn('first', ['t1'], 100, 'first done'),
        ...bigTurn('second', ['t2'], 100, 'second done'),
        // Two large outputs in the newest steps: prune (which protects the newest three steps)
        // cannot make room for them, so the third turn needs one summary compaction.
        ...bigTurn('third', ['t3a', 't3b'], 300, 'third done'),
      ],
    });
    await client.agent('small', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      compaction: { pruneProtect: 1000, pruneMinimum: 500 },
      ...WHOLE_OUTPUTS,
    });
    const id = await client.session('small');
    for (const text of ['first task', 'second task', 'third task']) {
      await client.send(id, text);
      const s = await client.waitIdle(id, 30_000);
      expect(s.status, JSON.stringify(s.error)).toBe('idle');
    }
    const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
    expect(s.compaction.count).toBe(1);

    expect((await scrape(`${stack.url}/metrics`)).status).toBe(401);
    expect((await scrape(`${stack.url}/metrics`, client.apiKey)).status).toBe(401);
    // The idle prune pass after the last turn may still be finishing.
    const text = await waitFor(async () => {
      const t = await gateway();
      return value(t, 'bullmq_job_count', { queue: 'loopline-prune', state: 'completed' }) >= 3 && t;
    });
    for (const { queue } of Object.values(JOBS))
      expect(text, queue).toMatch(
        new RegExp(`^bullmq_job_count\\{queue="${queue}", state="waiting"\\} \\d+$`, 'm'),
      );
    expect(
      value(text, 'bullmq_job_count', { queue: 'loopline-step', state: 'completed' }),
    ).toBeGreaterThanOrEqual(3);
    expect(value(text, 'bullmq_job_count', { queue: 'loopline-compact', state: 'completed' })).toBe(1);
    expect(value(text, 'bullmq_job_completed_total', { queue: 'loopline-step' })).toBeGreaterThanOrEqual(3);
    expect(value(text, 'bullmq_job_failed_total', { queue: 'loopline-step' })).toBe(0);
    expect(value(text, 'loopline_queue_metrics_up')).toBe(1);
    expect(value(text, 'loopline_messages_accepted_total', { tenant: client.tenantId })).toBe(3);
    expect(value(text, 'loopline_sessions_created_total', { tenant: client.tenantId })).toBe(1);
    expect(
      value(text, 'loopline_http_requests_total', {
        method: 'POST',
        route: '/v1/sessions/:id/messages',
        status: '202',
      }),
    ).toBe(3);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  }, 60_000);

  it('worker /metrics: job and model latency, tokens by tenant, tools, compactions by rung, prune savings', async () => {
    const text = await worker();
    // Step latency (dequeue → end) by outcome; every queue the session used.
    expect(
      value(text, 'loopline_job_duration_seconds_count', { queue: 'loopline-step', outcome: 'completed' }),
    ).toBeGreaterThanOrEqual(10);
    expect(
      value(text, 'loopline_job_duration_seconds_bucket', { queue: 'loopline-step', le: '\\+Inf' }),
    ).toBeGreaterThanOrEqual(10);
    expect(
      value(text, 'loopline_job_duration_seconds_count', { queue: 'loopline-compact', outcome: 'completed' }),
    ).toBe(1);
    expect(
      value(text, 'loopline_job_duration_seconds_count', { queue: 'loopline-prune' }),
    ).toBeGreaterThanOrEqual(3);
    // Model latency by model and purpose: one observation per request the mock model answered.
    const summaries = stack.mock.calls.filter((c) => c.system.includes(SUMMARY_SYSTEM)).length;
    const step = { model: 'compatible/mock', purpose: 'step', outcome: 'finish' };
    expect(summaries).toBe(1);
    expect(value(text, 'loopline_model_duration_seconds_count', step)).toBe(
      stack.mock.calls.length - summaries,
    );
    expect(value(text, 'loopline_model_duration_seconds_sum', step)).toBeGreaterThan(0);
    expect(
      value(text, 'loopline_model_duration_seconds_count', { purpose: 'summary', outcome: 'finish' }),
    ).toBe(1);
    // Tokens by tenant (provider-reported): the mock counts every prompt.
    const tenant = { tenant: client.tenantId };
    expect(value(text, 'loopline_tokens_in_total', { ...tenant, purpose: 'step' })).toBeGreaterThan(10_000);
    expect(value(text, 'loopline_tokens_out_total', { ...tenant, purpose: 'step' })).toBeGreaterThan(0);
    expect(value(text, 'loopline_tokens_in_total', { ...tenant, purpose: 'summary' })).toBeGreaterThan(0);
    const executed = [...stack.tools.calls.values()].reduce((a, b) => a + b, 0);
    expect(executed).toBeGreaterThanOrEqual(3);
    expect(value(text, 'loopline_tool_calls_total', { outcome: 'completed' })).toBe(executed);
    expect(value(text, 'loopline_tool_duration_seconds_count', { outcome: 'completed' })).toBe(executed);
    expect(value(text, 'loopline_compactions_total', { rung: 'summary', reason: 'auto' })).toBe(1);
    // The compaction's duration and the tokens it saved, as histograms.
    const compaction = { rung: 'summary', reason: 'auto' };
    expect(value(text, 'loopline_compaction_duration_seconds_count', compaction)).toBe(1);
    expect(value(text, 'loopline_compaction_duration_seconds_sum', compaction)).toBeGreaterThan(0);
    expect(value(text, 'loopline_compaction_saved_tokens_count', compaction)).toBe(1);
    expect(value(text, 'loopline_compaction_saved_tokens_sum', compaction)).toBeGreaterThan(1000);
    // No provider failed in this run.
    expect(value(text, 'loopline_provider_errors_total')).toBe(0);
    expect(value(text, 'loopline_prune_parts_total')).toBeGreaterThan(0);
    expect(value(text, 'loopline_prune_saved_tokens_total')).toBeGreaterThan(1000);
    // Default process metrics are there too, once each.
    expect(text.split('\n').filter((l) => l === '# TYPE process_cpu_seconds_total counter')).toHaveLength(1);
    expect(value(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('the worker logs one info line per compaction: rung, tokens before and after, duration', async () => {
    const done = lines.filter((l) => l.msg === 'compaction completed');
    expect(done, JSON.stringify(done)).toHaveLength(1);
    expect(done[0]).toMatchObject({ level: 30, tenantId: client.tenantId, rung: 'summary' });
    expect(done[0]!.tokensBefore).toBeGreaterThan(done[0]!.tokensAfter);
    expect(done[0]!.durationMs).toBeGreaterThanOrEqual(0);
    expect(typeof done[0]!.sessionId).toBe('string');
  });
});

describe('metrics of contention', () => {
  it('counts a lock wait when two wake jobs race for one session', async () => {
    // A slow reply holds the session lock while the second job arrives.
    stack.mock.setScenario({
      rules: [
        {
          when: { lastUserIncludes: 'slow' },
          reply: { text: 'one two three four five six' },
          latencyMs: 150,
        },
      ],
    });
    await client.agent('plain', {});
    const id = await client.session('plain');
    const before = value(await worker(), 'loopline_lock_waits_total', { queue: 'loopline-step' });
    await client.send(id, 'a slow question');
    await stack.deps.queues.add('step', `wake-${id}-second`, {
      tenantId: client.tenantId,
      sessionId: id,
      reason: 'message',
    });
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    const text = await worker();
    expect(value(text, 'loopline_lock_waits_total', { queue: 'loopline-step' })).toBeGreaterThan(before);
    expect(
      value(text, 'loopline_job_duration_seconds_count', { queue: 'loopline-step', outcome: 'delayed' }),
    ).toBeGreaterThan(0);
    // The delayed job ran later and found nothing to do: one answer.
    const log = await client.history(id);
    expect(log.messages.filter((m: any) => m.info.role === 'assistant')).toHaveLength(1);
  });

  it('counts a fence rejection when a newer runner takes the session mid-step', async () => {
    stack.mock.setScenario({ rules: [] });
    await client.agent('plain', {});
    const id = await client.session('plain');
    const labels = { queue: 'loopline-step', cause: 'stale_fence' };
    const before = value(await worker(), 'loopline_fence_rejections_total', labels);
    let bumped = false;
    stack.deps.racepoint = async (name) => {
      if (name !== 'model:after-stream' || bumped) return;
      bumped = true;
      // As if this runner froze past its lock TTL and another runner took the session over.
      await acquireFence(stack.deps.db, client.tenantId, id);
    };
    try {
      await client.send(id, 'hello');
      await waitFor(async () => value(await worker(), 'loopline_fence_rejections_total', labels) > before);
    } finally {
      stack.deps.racepoint = undefined;
    }
    const text = await worker();
    expect(value(text, 'loopline_fence_rejections_total', labels)).toBe(before + 1);
    expect(
      value(text, 'loopline_job_duration_seconds_count', { queue: 'loopline-step', outcome: 'superseded' }),
    ).toBeGreaterThanOrEqual(1);
    // The session carries on under a new runner.
    await stack.deps.queues.add('step', `resume-${id}`, {
      tenantId: client.tenantId,
      sessionId: id,
      reason: 'resume',
    });
    expect((await client.waitIdle(id)).status).toBe('idle');
  });

  it('the worker endpoint serves /healthz, 404s elsewhere, and wants its token when one is set', async () => {
    const base = stack.workerMetricsUrl!.replace(/\/metrics$/, '');
    expect((await scrape(`${base}/healthz`)).status).toBe(200);
    expect((await scrape(`${base}/nope`)).status).toBe(404);
    const { startMetricsServer } = await import('@loopline/worker');
    const guarded = await startMetricsServer(stack.deps.metrics!, {
      port: 0,
      host: '127.0.0.1',
      token: 'scrape-me',
    });
    try {
      expect((await scrape(`${guarded.url}/metrics`)).status).toBe(401);
      expect((await scrape(`${guarded.url}/metrics`, 'wrong')).status).toBe(401);
      const ok = await scrape(`${guarded.url}/metrics`, 'scrape-me');
      expect(ok.status).toBe(200);
      expect(ok.text).toContain('loopline_lock_waits_total');
    } finally {
      await guarded.close();
    }
  });
});
