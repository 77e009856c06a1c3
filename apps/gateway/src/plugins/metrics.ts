import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { z } from 'zod';
import { ErrorResponse } from '../schemas.ts';
import { operatorAuth } from './auth.ts';

// The gateway's Prometheus metrics: every metric object of the gateway lives here, on a Registry
// made per app (GatewayDeps.metrics, else one per buildApp: no module singletons). GET /metrics
// (operator token) serves it followed by BullMQ's own job counts for every queue of the catalog
// (`queue.exportPrometheusMetrics()`, merged so each metric family appears once).
//
//   loopline_http_requests_total{method,route,status}
//   loopline_http_request_duration_seconds{method,route,status}
//   loopline_sessions_created_total{tenant}, loopline_messages_accepted_total{tenant}
//                                                   (`tenant` only with metricsTenantLabels)
//   loopline_sse_streams_open                       SSE streams open now
//   loopline_sse_streams_total{outcome}             SSE streams ended or refused: client_closed,
//                                                   server_closed, error, refused (over a cap)
//   loopline_queue_metrics_up                       1 when the BullMQ counts below were read
//   bullmq_job_count{queue,state}, bullmq_job_completed_total{queue}, bullmq_job_failed_total{queue}
//   + prom-client's default process metrics (process_*, nodejs_*)

export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly sessionsCreated: Counter<'tenant'>;
  readonly messagesAccepted: Counter<'tenant'>;
  readonly queueMetricsUp: Gauge;
  readonly sseOpen: Gauge;
  readonly sseStreams: Counter<'outcome'>;
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
  };
}

/** Request counters for every route, installed on the root instance before any route. */
export function installRequestMetrics(app: FastifyInstance, metrics: GatewayMetrics): void {
  app.addHook('onResponse', async (request, reply) => {
    // The route template, never the raw URL (bounded label values); unknown routes are one series.
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    const tenant = request.tenant?.id;
    if (!tenant || request.method !== 'POST') return;
    const by = metrics.tenantLabels ? { tenant } : {};
    if (route === '/v1/sessions' && reply.statusCode === 201) metrics.sessionsCreated.inc(by);
    else if (route === '/v1/sessions/:id/messages' && reply.statusCode === 202)
      metrics.messagesAccepted.inc(by);
  });
}

interface Family {
  meta: string[];
  samples: string[];
}

/**
 * BullMQ's Prometheus text of several queues as one exposition: each queue repeats the
 * `# HELP`/`# TYPE` lines of its families, which Prometheus refuses; keep them once per family
 * and group the samples under them.
 */
export function mergeExpositions(texts: string[]): string {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { meta: [], samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const text of texts) {
    for (const line of text.split('\n')) {
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        const f = family(meta[2]!);
        if (!f.meta.some((m) => m.startsWith(`# ${meta[1]} `))) f.meta.push(line);
      } else if (line.trim() !== '' && !line.startsWith('#')) {
        family(/^[^{\s]+/.exec(line)![0]).samples.push(line);
      }
    }
  }
  return [...families.values()].flatMap((f) => [...f.meta, ...f.samples]).join('\n');
}

const QUEUE_METRICS_TIMEOUT_MS = 2_000;

async function queueExposition(queues: Queue[]): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), QUEUE_METRICS_TIMEOUT_MS);
  });
  try {
    const texts = Promise.all(queues.map((q) => q.exportPrometheusMetrics()));
    const got = await Promise.race([texts, timeout]);
    return got ? mergeExpositions(got) : undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

export const MetricsText = z
  .string()
  .describe('Prometheus text exposition format 0.0.4')
  .meta({
    example:
      '# HELP loopline_http_requests_total HTTP requests by method, route template and status\n' +
      '# TYPE loopline_http_requests_total counter\n' +
      'loopline_http_requests_total{method="POST",route="/v1/sessions/:id/messages",status="202"} 12\n' +
      '# HELP bullmq_job_count Number of jobs in the queue by state\n' +
      '# TYPE bullmq_job_count gauge\n' +
      'bullmq_job_count{queue="loopline-step", state="completed"} 48\n',
  });

export interface MetricsRouteOptions {
  metrics: GatewayMetrics;
  queues: () => Queue[];
  operatorToken: string;
}

/** GET /metrics behind the operator token (Prometheus: `authorization: {credentials: <token>}`). */
export const metricsRoutes: FastifyPluginAsyncZod<MetricsRouteOptions> = async (app, opts) => {
  const { metrics } = opts;
  app.addHook('onRequest', operatorAuth(opts.operatorToken));
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        security: [{ operator: [] }],
        summary: 'Prometheus metrics of this gateway and the job counts of every queue',
        description:
          'The gateway registry (HTTP requests and latency by route, sessions created and messages accepted ' +
          'by tenant, process metrics) followed by BullMQ `exportPrometheusMetrics()` of every queue in the ' +
          'job catalog (`bullmq_job_count{queue,state}`, `bullmq_job_completed_total`, ' +
          '`bullmq_job_failed_total`). Requires the operator token as a bearer token. The loop metrics ' +
          '(step and model latency, tokens, compactions, lock waits, fence rejections) are on each worker ' +
          '(WORKER_METRICS_PORT).',
        response: {
          200: { description: 'Prometheus text', content: { 'text/plain': { schema: MetricsText } } },
          401: ErrorResponse,
        },
      },
    },
    async (request, reply) => {
      const queues = await queueExposition(opts.queues());
      metrics.queueMetricsUp.set(queues === undefined ? 0 : 1);
      if (queues === undefined) request.log.warn('queue metrics unavailable (Redis)');
      const own = await metrics.registry.metrics();
      return reply
        .header('cache-control', 'no-store')
        .type(metrics.registry.contentType)
        .send(queues ? `${own}\n${queues}\n` : own);
    },
  );
};
