import { sessionAttributes, tracer, tracingActive } from '@loopline/telemetry';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';

// A server span per request when tracing is on (nothing is installed otherwise): it continues an
// incoming `traceparent`, is named by the route template, carries the request id, tenant and
// session, and is the active span while the route handler runs, so the jobs the handler adds
// carry its trace context (packages/queue producer) and the worker's spans join the same trace.

const spans = new WeakMap<FastifyRequest, Span>();

export function installTracing(app: FastifyInstance): void {
  if (!tracingActive()) return;
  app.addHook('onRequest', async (request, reply) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const route = request.routeOptions.url ?? 'unmatched';
    const span = tracer().startSpan(
      `${request.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'http.route': route,
          'loopline.request.id': request.id,
        },
      },
      parent,
    );
    spans.set(request, span);
    // SSE replies are hijacked and never reach onResponse: the connection's end closes the span.
    reply.raw.once('close', () => finish(request, reply.raw.statusCode));
  });
  app.addHook('onResponse', async (request, reply) => finish(request, reply.statusCode));
  // The handler runs inside the span: jobs it adds continue the trace.
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function traced(this: unknown, request, reply) {
      const span = spans.get(request);
      if (!span) return handler.call(this as never, request, reply);
      const params = (request.params ?? {}) as Record<string, unknown>;
      span.setAttributes(
        sessionAttributes({
          tenantId: request.tenant?.id,
          sessionId:
            typeof params.id === 'string' && /\/sessions\/:id/.test(route.url) ? params.id : undefined,
        }),
      );
      return context.with(trace.setSpan(context.active(), span), () =>
        handler.call(this as never, request, reply),
      );
    };
  });
}

function finish(request: FastifyRequest, status: number): void {
  const span = spans.get(request);
  if (!span) return;
  spans.delete(request);
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
