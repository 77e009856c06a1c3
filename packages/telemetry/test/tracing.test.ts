import { createServer, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import {
  contextFromTraceparent,
  currentTraceparent,
  startTracing,
  tracesExporterFromEnv,
  tracingActive,
  withSpan,
} from '../src/index.ts';

// Tracing is off unless the standard OTEL_* variables ask for it; when they do, spans go to the
// OTLP/HTTP endpoint they name (here a small collector on loopback, JSON encoding).

describe('tracesExporterFromEnv', () => {
  it('is off when nothing is set, or when disabled', () => {
    expect(tracesExporterFromEnv({})).toBeUndefined();
    expect(
      tracesExporterFromEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }),
    ).toBeUndefined();
    expect(
      tracesExporterFromEnv({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }),
    ).toBeUndefined();
  });
  it('is OTLP with an endpoint, console when asked', () => {
    expect(tracesExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe('otlp');
    expect(tracesExporterFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(
      'otlp',
    );
    expect(tracesExporterFromEnv({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe('otlp');
    expect(tracesExporterFromEnv({ OTEL_TRACES_EXPORTER: 'console' })).toBe('console');
  });
});

describe('startTracing', () => {
  let collector: Server | undefined;
  afterAll(() => new Promise<void>((resolve) => (collector ? collector.close(() => resolve()) : resolve())));

  it('without OTEL_* starts nothing: no traceparent, spans are plain calls', async () => {
    expect(await startTracing({ serviceName: 'off', env: {} })).toBeUndefined();
    expect(tracingActive()).toBe(false);
    expect(await withSpan('nothing', {}, async () => currentTraceparent())).toBeUndefined();
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT exports spans over OTLP/HTTP, continuing a traceparent', async () => {
    const bodies: any[] = [];
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        if (req.url === '/v1/traces') bodies.push(JSON.parse(body));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector!.listen(0, '127.0.0.1', resolve));
    const address = collector.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    // The exporter reads the process environment itself, as in the services.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    process.env.OTEL_RESOURCE_ATTRIBUTES = 'deployment.environment=test';
    const tracing = await startTracing({ serviceName: 'loopline-unit' });
    expect(tracing).toBeDefined();
    expect(tracingActive()).toBe(true);

    const incoming = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const inner = await withSpan('job', { parent: contextFromTraceparent(incoming) }, async () =>
      withSpan('child', {}, async () => currentTraceparent()),
    );
    expect(inner).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    await expect(
      withSpan('failing', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await tracing!.shutdown(); // flushes the batch
    expect(tracingActive()).toBe(false);

    const resourceSpans = bodies.flatMap((b) => b.resourceSpans);
    const attrs = resourceSpans[0].resource.attributes.map((a: any) => [a.key, a.value.stringValue]);
    expect(attrs).toContainEqual(['service.name', 'loopline-unit']);
    expect(attrs).toContainEqual(['deployment.environment', 'test']);
    const spans = resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
    const byName = Object.fromEntries(spans.map((s: any) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(['child', 'failing', 'job']);
    expect(byName.job.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(byName.job.parentSpanId).toBe('b7ad6b7169203331');
    expect(byName.child.parentSpanId).toBe(byName.job.spanId);
    expect(byName.failing.status.code).toBe(2); // ERROR
  });
});
