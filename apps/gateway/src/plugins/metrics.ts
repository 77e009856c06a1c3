import type { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AuthGuard } from '../lib/auth-guard.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { ErrorResponse } from '../schemas/shared.ts';
import { operatorAuth } from './auth.ts';

// The metrics plugin: request counters on every route and GET /metrics (operator token), which
// serves the gateway's registry (metrics.ts, where each metric is listed) followed by BullMQ's
// job counts for every queue of the catalog, merged so each metric family appears once.

/** Request counters for every route, installed on the root instance before any route. */
export function installRequestMetrics(app: FastifyInstance, metrics: GatewayMetrics): void {
  const count = (request: FastifyRequest, reply: FastifyReply) => {
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
  };
  // A callback hook: an async one costs a promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    count(request, reply);
    done();
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
  guard: AuthGuard;
}

/** GET /metrics behind the operator token (Prometheus: `authorization: {credentials: <token>}`). */
export const metricsRoutes: FastifyPluginAsyncZod<MetricsRouteOptions> = async (app, opts) => {
  const { metrics } = opts;
  app.addHook('onRequest', operatorAuth(opts.operatorToken, opts.guard));
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
