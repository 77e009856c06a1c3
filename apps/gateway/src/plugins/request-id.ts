import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

// Request ids an operator can follow across gateways and proxies: an incoming `x-request-id`
// (a proxy's or a client's) when it is a plain token, else a fresh UUID; never a per-process
// counter (`req-1` would collide between gateways). Every response echoes it, SSE included.

export const REQUEST_ID_HEADER = 'x-request-id';
/** Printable, header- and log-safe, bounded: anything else is replaced by a UUID. */
const ACCEPTED = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request id: a well-formed incoming X-Request-Id, else a new UUID. */
export function genReqId(req: IncomingMessage): string {
  const incoming = req.headers[REQUEST_ID_HEADER];
  const value = Array.isArray(incoming) ? incoming[0] : incoming;
  return value && ACCEPTED.test(value) ? value : randomUUID();
}

/** Echoes the request id on every response, hijacked ones included. */
export function installRequestIdEcho(app: FastifyInstance): void {
  // Set on the raw response so hijacked replies (SSE writes its own head) carry it as well.
  app.addHook('onRequest', (request, reply, done) => {
    reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
    done();
  });
}
