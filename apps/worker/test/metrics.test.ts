import { DelayedError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createWorkerMetrics, providerErrorClass } from '../src/metrics.ts';

// The worker's metrics on their own registry: how a job's outcome is read from the way it ended,
// what a model call adds to the token counters (and the tenant label only when asked for), and
// the bounded provider error class.

/** Value of one series, by metric name and labels (exact match on the given labels). */
async function value(
  metrics: ReturnType<typeof createWorkerMetrics>,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const series = (metric?.values ?? []) as Array<{
    labels: Record<string, unknown>;
    value: number;
    metricName?: string;
  }>;
  return series.find(
    (v) =>
      (v.metricName === undefined || v.metricName === name || v.metricName === `${name}_count`) &&
      Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  )?.value;
}

const usage = { input: 100, output: 20, reasoning: 5, cache: { read: 40, write: 10 }, total: 175 };

describe('observeJob', () => {
  it('completed, superseded, delayed (moved on purpose) and failed, by how the job ended', async () => {
    const metrics = createWorkerMetrics();
    const job = (queueName: string) => ({ queueName });
    expect(await metrics.observeJob(job('step'), async () => 'ok')).toBe('ok');
    const superseded = job('step');
    await metrics.observeJob(superseded, async () => metrics.superseded(superseded, 'stale_fence'));
    await expect(
      metrics.observeJob(job('step'), async () => {
        throw new DelayedError();
      }),
    ).rejects.toBeInstanceOf(DelayedError);
    await expect(
      metrics.observeJob(job('compact'), async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const count = (queue: string, outcome: string) =>
      value(metrics, 'loopline_job_duration_seconds', { queue, outcome });
    expect(await count('step', 'completed')).toBe(1);
    expect(await count('step', 'superseded')).toBe(1);
    expect(await count('step', 'delayed')).toBe(1);
    expect(await count('compact', 'failed')).toBe(1);
    expect(
      await value(metrics, 'loopline_fence_rejections_total', { queue: 'step', cause: 'stale_fence' }),
    ).toBe(1);
  });
});

describe('modelCall', () => {
  it('counts prompt tokens with cache reads and writes, output with reasoning; no tenant label by default', async () => {
    const metrics = createWorkerMetrics();
    metrics.modelCall({
      purpose: 'step',
      model: 'm',
      tenantId: 'ten_a',
      seconds: 0.5,
      outcome: 'finish',
      usage,
    });
    const labels = { model: 'm', purpose: 'step' };
    expect(await value(metrics, 'loopline_tokens_in_total', labels)).toBe(150);
    expect(await value(metrics, 'loopline_tokens_cached_total', labels)).toBe(40);
    expect(await value(metrics, 'loopline_tokens_out_total', labels)).toBe(25);
    expect(await metrics.registry.metrics()).not.toContain('ten_a');
  });

  it('with tenantLabels, one series per tenant', async () => {
    const metrics = createWorkerMetrics({ tenantLabels: true });
    for (const tenantId of ['ten_a', 'ten_b'])
      metrics.modelCall({ purpose: 'title', model: 'm', tenantId, seconds: 0.1, outcome: 'finish', usage });
    expect(
      await value(metrics, 'loopline_tokens_in_total', { tenant: 'ten_a', model: 'm', purpose: 'title' }),
    ).toBe(150);
    expect(
      await value(metrics, 'loopline_tokens_in_total', { tenant: 'ten_b', model: 'm', purpose: 'title' }),
    ).toBe(150);
  });

  it('counts provider errors by class, never an abort', async () => {
    const metrics = createWorkerMetrics();
    const call = { purpose: 'step' as const, model: 'm', tenantId: 't', seconds: 1 };
    metrics.modelCall({ ...call, outcome: 'error', error: { kind: 'retryable', status: 429 } });
    metrics.modelCall({ ...call, outcome: 'error', error: { kind: 'retryable', status: 429 } });
    metrics.modelCall({ ...call, outcome: 'aborted', error: { kind: 'aborted' } });
    const errors = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'loopline_provider_errors_total',
    )!.values;
    expect(errors).toEqual([
      expect.objectContaining({ value: 2, labels: { purpose: 'step', kind: 'retryable', class: '429' } }),
    ]);
  });
});

describe('providerErrorClass', () => {
  it('the status, else a short code, else unknown (a label stays bounded)', () => {
    expect(providerErrorClass({ status: 503, code: 'x' })).toBe('503');
    expect(providerErrorClass({ code: 'ECONNREFUSED' })).toBe('ECONNREFUSED');
    expect(providerErrorClass({ code: 'context_length_exceeded' })).toBe('context_length_exceeded');
    expect(providerErrorClass({ code: 'a message with spaces, not a code' })).toBe('unknown');
    expect(providerErrorClass({ code: 'x'.repeat(41) })).toBe('unknown');
    expect(providerErrorClass({})).toBe('unknown');
  });
});

describe('pruned', () => {
  it('a pass that cleared nothing adds nothing', async () => {
    const metrics = createWorkerMetrics();
    metrics.pruned('idle', 0, 0);
    metrics.pruned('compaction', 3, 1200);
    expect(await value(metrics, 'loopline_prune_parts_total', { purpose: 'idle' })).toBeUndefined();
    expect(await value(metrics, 'loopline_prune_parts_total', { purpose: 'compaction' })).toBe(3);
    expect(await value(metrics, 'loopline_prune_saved_tokens_total', { purpose: 'compaction' })).toBe(1200);
  });
});
