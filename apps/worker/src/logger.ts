import { redactLogArguments, redactText, redactUrl } from '@loopline/core';
import { type Logger, type LoggerOptions, pino, stdSerializers } from 'pino';

// The worker's pino logger: credential headers and fields (a webhook tool's headers, an API key
// in an options object) are replaced by [REDACTED], and URLs in `url` fields and error messages
// lose the values of credential query parameters (core/redact.ts), as on the gateway.

function serializeError(err: unknown): Record<string, unknown> {
  const out = stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (typeof out.message === 'string') out.message = redactText(out.message);
  if (typeof out.stack === 'string') out.stack = redactText(out.stack);
  if (typeof out.url === 'string') out.url = redactUrl(out.url);
  return out;
}

/** The worker's pino options: level, name and redacted log arguments. */
export function workerLoggerOptions(level: string): LoggerOptions {
  return {
    level,
    name: 'worker',
    hooks: {
      logMethod(args, method) {
        method.apply(this, redactLogArguments(args) as Parameters<typeof method>);
      },
    },
    serializers: {
      err: serializeError,
      error: serializeError,
      url: (url: unknown) => (typeof url === 'string' ? redactUrl(url) : url),
    },
  };
}

/** Creates the worker's pino logger (to stdout unless a destination is given). */
export function createWorkerLogger(level = 'info', destination?: pino.DestinationStream): Logger {
  return destination ? pino(workerLoggerOptions(level), destination) : pino(workerLoggerOptions(level));
}
