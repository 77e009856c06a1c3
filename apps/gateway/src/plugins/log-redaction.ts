import { redactLogArguments, redactText, redactUrl } from '@loopline/core';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import { type LoggerOptions, stdSerializers } from 'pino';

// Every gateway log line goes through these options (buildApp applies them to any logger options
// it is given): credential headers and fields are replaced by [REDACTED], and every
// logged URL (the request line, `url` fields, URLs inside error messages) loses the values of
// credential query parameters such as `?token=` (core/redact.ts).

type Serialized = Record<string, unknown>;

function serializeRequest(request: FastifyRequest): Serialized {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** pino's error serializer with URLs and secrets redacted from message and stack. */
export function serializeError(err: unknown): Serialized {
  const out = stdSerializers.err(err as Error) as unknown as Serialized;
  if (typeof out.message === 'string') out.message = redactText(out.message);
  if (typeof out.stack === 'string') out.stack = redactText(out.stack);
  if (typeof out.url === 'string') out.url = redactUrl(out.url);
  return out;
}

export const redactingSerializers = {
  req: serializeRequest,
  err: serializeError,
  error: serializeError,
  url: (url: unknown) => (typeof url === 'string' ? redactUrl(url) : url),
};

/** Secret fields of logged objects and URLs in message strings (core/redact.ts). */
export const redactionHooks: NonNullable<LoggerOptions['hooks']> = {
  logMethod(args, method) {
    method.apply(this, redactLogArguments(args) as Parameters<typeof method>);
  },
};

/** pino options at `level` with the redaction (server.ts and the boot logger). */
export function loggerOptions(level: string): LoggerOptions {
  return { level, serializers: redactingSerializers, hooks: redactionHooks };
}

/** Any Fastify logger option with the redaction added (false and instances pass through). */
export function withRedaction(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return false;
  const base: LoggerOptions = logger === true ? {} : (logger as LoggerOptions);
  return {
    ...base,
    hooks: redactionHooks,
    serializers: { ...(base.serializers ?? {}), ...redactingSerializers },
  } as unknown as FastifyServerOptions['logger'];
}
