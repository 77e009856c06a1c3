import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

// The gateway's Prometheus metrics: every metric object of the gateway, on a Registry made per app
// (no module singletons). GET /metrics (plugins/metrics.ts) serves it merged with BullMQ's job
// counts per queue. The series and their labels: README.md, "Operations" (the metrics table).

export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly sessionsCreated: Counter<'tenant'>;
  readonly messagesAccepted: Counter<'tenant'>;
  readonly queueMetricsUp: Gauge;
  readonly sseOpen: Gauge;
  readonly sseStreams: Counter<'outcome'>;
  /** Messages per append statement (group commit, lib/append-batch.ts). */
  readonly appendBatch: Histogram;
  /** Whether per-tenant counters carry a `tenant` label. */
  readonly tenantLabels: boolean;
}

export interface GatewayMetricsOptions {
  /** prom-client's process and Node.js metrics (default true). */
  defaultMetrics?: boolean;
  /**
   * `tenant` label on sessions created / messages accepted (default false): one series per tenant,
   * so only for deployments with a bounded number of tenants.
   */
  tenantLabels?: boolean;
}

/** Creates the gateway's registry and metric objects (and the default process metrics). */
export function createGatewayMetrics(opts: GatewayMetricsOptions = {}): GatewayMetrics {
  const registry = new Registry();
  const registers = [registry];
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const http = ['method', 'route', 'status'] as const;
  const tenantLabels = opts.tenantLabels === true;
  const tenant = tenantLabels ? (['tenant'] as const) : [];
  return {
    tenantLabels,
    registry,
    httpRequests: new Counter({
      name: 'loopline_http_requests_total',
      help: 'HTTP requests by method, route template and status',
      labelNames: http,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'loopline_http_request_duration_seconds',
      help: 'HTTP request latency by method, route template and status (SSE: the stream lifetime)',
      labelNames: http,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    sessionsCreated: new Counter({
      name: 'loopline_sessions_created_total',
      help: 'Sessions created (POST /v1/sessions → 201)',
      labelNames: tenant as unknown as ['tenant'],
      registers,
    }),
    messagesAccepted: new Counter({
      name: 'loopline_messages_accepted_total',
      help: 'User messages accepted (POST /v1/sessions/:id/messages → 202, idempotent replays included)',
      labelNames: tenant as unknown as ['tenant'],
      registers,
    }),
    queueMetricsUp: new Gauge({
      name: 'loopline_queue_metrics_up',
      help: '1 when the last scrape read the BullMQ job counts of every queue, else 0',
      registers,
    }),
    sseOpen: new Gauge({
      name: 'loopline_sse_streams_open',
      help: 'Server-Sent Event streams open on this gateway',
      registers,
    }),
    sseStreams: new Counter({
      name: 'loopline_sse_streams_total',
      help: 'SSE streams ended (client_closed, server_closed, error) or refused over a cap (refused)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    appendBatch: new Histogram({
      name: 'loopline_append_batch_messages',
      help: 'User messages written per append statement (1: alone; more: group-committed while the statements were busy)',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers,
    }),
  };
}
