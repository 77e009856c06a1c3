export {
  contextFromTraceparent,
  continueTrace,
  currentTraceparent,
  markTracingActive,
  sessionAttributes,
  tracer,
  tracingActive,
  withSpan,
} from './context.ts';
export { tracingEnv } from './env.ts';
export { startTracing, type Tracing, tracesExporterFromEnv } from './sdk.ts';
