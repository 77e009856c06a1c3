import { envString, envUrl } from '@loopline/core';
import { z } from 'zod';

// The OpenTelemetry variables as the gateway's and worker's config schemas document them (the
// README table). The SDK reads them itself (sdk.ts), by their standard names; only a few are
// listed here, the rest of the standard set works too (README, Operations → Tracing).

export const tracingEnv = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: envUrl(
    undefined,
    ['http', 'https'],
    'OpenTelemetry collector (OTLP/HTTP) base URL; set: traces are exported, unset: tracing is off (no SDK loaded)',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: envUrl(
    undefined,
    ['http', 'https'],
    'the traces endpoint itself (instead of `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`)',
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: envString(undefined, '`http/protobuf` (the default) or `http/json`'),
  OTEL_TRACES_EXPORTER: envString(undefined, '`otlp`, `console` (spans on stdout) or `none` (off)'),
  OTEL_SERVICE_NAME: envString(
    undefined,
    'service name of the traces',
    '`loopline-gateway` / `loopline-worker`',
  ),
});
