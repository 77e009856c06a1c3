import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';

// Tracing through the OpenTelemetry API only: without a registered SDK (tracing off, the
// default) every call here is the API's no-op, and `tracingActive()` lets hot paths skip even
// that. The SDK itself is started by sdk.ts, in the gateway and worker processes, only when the
// standard OTEL_* variables ask for it.

let active = false;

/** Set by startTracing (sdk.ts) once a tracer provider is registered. */
export function markTracingActive(on: boolean): void {
  active = on;
}

/** Whether tracing was started in this process. */
export function tracingActive(): boolean {
  return active;
}

/** Loopline's tracer. */
export function tracer(): Tracer {
  return trace.getTracer('loopline');
}

/** The W3C `traceparent` of the active span (for job data), or undefined when nothing is traced. */
export function currentTraceparent(ctx: Context = context.active()): string | undefined {
  if (!active || !trace.getSpan(ctx)) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

/** The context a `traceparent` (from job data or a request header) continues. */
export function contextFromTraceparent(traceparent: string | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/** Session and tenant as span attributes, under the same names everywhere. */
export function sessionAttributes(ids: { tenantId?: string; sessionId?: string }): Attributes {
  return {
    ...(ids.tenantId ? { 'loopline.tenant.id': ids.tenantId } : {}),
    ...(ids.sessionId ? { 'session.id': ids.sessionId } : {}),
  };
}

/**
 * Runs `fn` in a span that continues the trace of `traceparent` (stored with a row when it was
 * written: what the reconciler re-adds after a loss), linked to the active span (the reconciler's
 * pass); without one, a child of the active span. Tracing off: just `fn()`.
 */
export function continueTrace<T>(
  name: string,
  traceparent: string | undefined,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  if (!active) return fn();
  const here = trace.getSpan(context.active())?.spanContext();
  return withSpan(
    name,
    {
      attributes,
      ...(traceparent ? { parent: contextFromTraceparent(traceparent) } : {}),
      ...(traceparent && here ? { links: [{ context: here }] } : {}),
    },
    () => fn(),
  );
}

/**
 * Runs `fn` in a new active span (a child of the active one, or of `parent`), ending it however
 * `fn` ends; a throw marks the span as an error unless `expected(err)` says it is control flow
 * (e.g. BullMQ's DelayedError). Tracing off: just `fn()`.
 */
export async function withSpan<T>(
  name: string,
  opts: {
    kind?: SpanKind;
    attributes?: Attributes;
    parent?: Context;
    /** Spans this one relates to without being their child (e.g. the reconciler pass that woke it). */
    links?: Link[];
    expected?: (err: unknown) => boolean;
  },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!active) return fn(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { kind: opts.kind, attributes: opts.attributes, ...(opts.links ? { links: opts.links } : {}) },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    if (!opts.expected?.(err)) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: err instanceof Error ? err.message : String(err),
      });
    }
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A span (a child of the active one, or of `parent`) that the caller ends with `endClientSpan`,
 * for work that outlives one callback, such as a streamed model call consumed event by event.
 * Undefined when tracing is off, so a hot path pays one boolean check.
 */
export function startClientSpan(
  name: string,
  attributes: Attributes,
  opts: { parent?: Span | undefined; kind?: 'client' | 'internal' } = {},
): Span | undefined {
  if (!active) return undefined;
  const parent = opts.parent ? trace.setSpan(context.active(), opts.parent) : context.active();
  const kind = opts.kind === 'internal' ? SpanKind.INTERNAL : SpanKind.CLIENT;
  return tracer().startSpan(name, { kind, attributes }, parent);
}

/** Ends a span of `startClientSpan`: its final attributes, and its error when it failed. */
export function endClientSpan(span: Span | undefined, attributes: Attributes, error?: string): void {
  if (!span) return;
  span.setAttributes(attributes);
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
