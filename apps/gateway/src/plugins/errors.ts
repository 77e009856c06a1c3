import { type ErrorCode, LooplineError } from '@loopline/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { HttpError } from '../lib/http-error.ts';
import { decodeUtf8, findJsonProblem } from '../lib/json-guard.ts';
import { logBindings } from './request-log.ts';

// The one place that turns errors into HTTP responses: {"error": {"code", "message", "details"?}}.
// Bad input is always a 4xx; a 5xx means a bug or an unavailable dependency, and is logged.
// Installed on the root instance (not an encapsulated plugin) so it covers every route, the
// content-type parsers and the 404 handler.

export interface Problem {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

/** HTTP status of each core error code (only the gateway maps codes to statuses: core stays free of HTTP). */
export const LOOPLINE_STATUS: Partial<Record<ErrorCode, number>> = {
  ConfigError: 400,
  ToolInputError: 400,
  UnknownToolError: 400,
  WebhookRefusedError: 400,
  AttachmentError: 400,
  StaleFenceError: 409,
  ContextOverflowError: 409,
  MaxCompactionReachedError: 409,
  MaxStepsReachedError: 409,
};

const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_NOT_FOUND: 'not_found',
};

const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  408: 'request_timeout',
  409: 'conflict',
  411: 'length_required',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
};

/** Maps any thrown error to the status, code and message the API answers. */
export function toProblem(err: unknown): Problem {
  if (err instanceof HttpError) {
    return {
      status: err.statusCode,
      code: err.code,
      message: err.message,
      ...(err.details !== undefined ? { details: err.details } : {}),
    };
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = (err as FastifyError).validationContext ?? 'body';
    return {
      status: 400,
      code: 'validation_error',
      message: `Invalid ${where}: ${err.validation.map((v) => `${v.instancePath || '/'} ${v.message}`).join('; ')}`,
      details: {
        in: where,
        issues: err.validation.map((v) => ({
          path: v.instancePath || '/',
          message: v.message,
          code: v.keyword,
        })),
      },
    };
  }
  if (err instanceof LooplineError) {
    const status = LOOPLINE_STATUS[err.code] ?? 500;
    return status >= 500
      ? { status, code: 'internal_error', message: 'Internal server error' }
      : { status, code: err.code, message: err.message, ...(err.data ? { details: err.data } : {}) };
  }
  const e = err as Partial<FastifyError> | undefined;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    const code = (e?.code && FASTIFY_CODES[e.code]) ?? STATUS_CODES[status] ?? 'bad_request';
    return { status, code, message: e?.message || code };
  }
  if (status === 503) return { status, code: 'unavailable', message: 'Service unavailable' };
  return { status: 500, code: 'internal_error', message: 'Internal server error' };
}

/** Sends a problem as the `{ error }` body. */
export function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  const error: Record<string, unknown> = { code: p.code, message: p.message };
  if (p.details !== undefined) error.details = p.details;
  return reply.status(p.status).send({ error });
}

function logContext(request: FastifyRequest): Record<string, unknown> {
  const params = (request.params ?? {}) as Record<string, unknown>;
  // Ids the request logger already carries (request-log.ts, tenantAuth) are not repeated.
  const bound = logBindings(request);
  return {
    ...(bound.tenantId === undefined ? { tenantId: request.tenant?.id } : {}),
    ...(bound.sessionId === undefined
      ? { sessionId: typeof params.id === 'string' ? params.id : undefined }
      : {}),
    method: request.method,
    url: request.url,
  };
}

/** Installs the error and not-found handlers. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const problem = toProblem(err);
    if (problem.status >= 500) request.log.error({ err, ...logContext(request) }, 'request failed');
    else
      request.log.info(
        { code: problem.code, status: problem.status, ...logContext(request) },
        problem.message,
      );
    if (reply.sent || reply.raw.headersSent) return;
    return sendProblem(reply, problem);
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, {
      status: 404,
      code: 'not_found',
      message: `Route ${request.method} ${request.url.split('?')[0]} not found`,
    }),
  );

  // JSON bodies: strict UTF-8 (invalid bytes are a 400, not replacement characters), the default
  // parser (prototype-poisoning safe), then findJsonProblem (strings and depth PostgreSQL cannot
  // store). An empty body is "no body"; text/plain is not accepted (415).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
    if ((raw as Buffer).length === 0) return done(null, undefined);
    const body = decodeUtf8(raw as Buffer);
    if (body === undefined) return done(invalidUtf8(), undefined);
    parseJson(request, body, (err, value) => {
      if (err) return done(err, undefined);
      const problem = findJsonProblem(value);
      if (problem)
        return done(
          new HttpError('validation_error', `Invalid body: ${problem.path} ${problem.message}`, {
            in: 'body',
            issues: [problem],
          }),
          undefined,
        );
      done(null, value);
    });
  });
}

/** A body that is not valid UTF-8: 400 invalid_json. */
export function invalidUtf8(): HttpError {
  return new HttpError('invalid_json', 'Body is not valid UTF-8', { in: 'body' });
}
