import { context, propagation, trace } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { markTracingActive } from './context.ts';

// Starts the OpenTelemetry trace SDK for one process, configured by the standard variables:
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (OTLP over HTTP, JSON or
// protobuf as the exporter defaults), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER (`otlp`, `console` or `none`), OTEL_SDK_DISABLED.
// Unset (the default): nothing is loaded or started, and every span call is the API's no-op.

export interface Tracing {
  /** Exports what is buffered and stops (call on shutdown). */
  shutdown(): Promise<void>;
}

type Env = Record<string, string | undefined>;

/** Which exporter the environment asks for, if any. */
export function tracesExporterFromEnv(env: Env): 'otlp' | 'console' | undefined {
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  const chosen = (env.OTEL_TRACES_EXPORTER ?? '').split(',')[0]?.trim();
  if (chosen === 'none') return undefined;
  if (chosen === 'console') return 'console';
  if (chosen === 'otlp' || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    return 'otlp';
  return undefined;
}

/**
 * Starts tracing when the environment asks for it (or with the given exporter, e.g. an in-memory
 * one in tests). Returns undefined when tracing stays off.
 */
export async function startTracing(opts: {
  serviceName: string;
  env?: Env;
  /** A span exporter to use instead of the environment's (tests). Spans are then sent at once. */
  exporter?: unknown;
}): Promise<Tracing | undefined> {
  const env = opts.env ?? process.env;
  const kind = opts.exporter ? undefined : tracesExporterFromEnv(env);
  if (!opts.exporter && !kind) return undefined;
  // Loaded only here: a process with tracing off never loads the SDK.
  const [sdk, hooks, core, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  let processor: InstanceType<typeof sdk.SimpleSpanProcessor> | InstanceType<typeof sdk.BatchSpanProcessor>;
  if (opts.exporter) processor = new sdk.SimpleSpanProcessor({ exporter: opts.exporter as SpanExporter });
  else if (kind === 'console')
    processor = new sdk.SimpleSpanProcessor({ exporter: new sdk.ConsoleSpanExporter() });
  else {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    processor = new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter() });
  }
  const resource = resources
    .resourceFromAttributes({ 'service.name': opts.serviceName })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.TracerProvider({ resource, spanProcessors: [processor] });
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  trace.setGlobalTracerProvider(provider);
  markTracingActive(true);
  return {
    async shutdown() {
      markTracingActive(false);
      await provider.shutdown();
    },
  };
}
