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
