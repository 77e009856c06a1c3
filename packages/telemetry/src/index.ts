// @loopline/telemetry: OpenTelemetry tracing, off unless OTEL_* asks for it (sdk.ts); spans and
// the trace context jobs carry (context.ts); the OTEL_* rows of the config schemas (env.ts).

export {
  contextFromTraceparent,
  continueTrace,
  currentTraceparent,
  endClientSpan,
  markTracingActive,
  sessionAttributes,
  startClientSpan,
  tracer,
  tracingActive,
  withSpan,
} from './context.ts';
export { tracingEnv } from './env.ts';
export { startTracing, type Tracing, tracesExporterFromEnv } from './sdk.ts';
