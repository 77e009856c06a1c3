import { SessionEvent } from '@loopline/core';
import { lastEventId } from '@loopline/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { HttpError } from '../lib/http-error.ts';
import { loadSession } from '../lib/sessions.ts';
import { writeStreamed } from '../lib/stream-write.ts';
import type { SessionStreams } from '../lib/streams.ts';
import { tenantOf } from '../plugins/auth.ts';
import { EventsHeaders, EventsQuery } from '../schemas/events.ts';
import { IdParam, withErrors } from '../schemas/shared.ts';

// Server-Sent Events from the session's Redis stream. Each event: `id:` = stream id, `event:` =
// event type, `data:` = the JSON event.
//
// Where a stream starts: after `Last-Event-ID` (header) or `?after=`; without either, at the
// beginning of the retained stream ('0'), so a client that POSTs a message and then connects
// misses nothing (the stream keeps about the last 10,000 events for 7 days). `?after=$` starts at
// the newest event instead (resolved to a concrete id, so reconnects stay exact).
//
// Streams read through the process's one event hub (packages/queue/src/event-hub.ts), are capped
// per API key and per tenant (GatewayDeps.sse: 429 past it), and counted in the SSE metrics.

const STREAM_ID = /^\d{1,20}(-\d{1,20})?$/;

/** The `data:` of each event (the OpenAPI document shows one). */
const EventData = SessionEvent.describe(
  'Each event is `id: <stream id>`, `event: <type>`, `data: <this JSON>`',
).meta({ example: { type: 'session.status', status: 'running' } });
const DEFAULT_HEARTBEAT_MS = 15_000;

export interface EventRoutesOptions {
  /** Idle time before a `: heartbeat` comment (and the XREAD BLOCK timeout). */
  heartbeatMs?: number;
  /** The process's hub, caps and open streams, shared with the chat stream. */
  streams: SessionStreams;
}

/** Waits for a wake-up or `ms`, whichever comes first; true when woken. */
function waiter() {
  let pending = false;
  let resolveWait: ((woken: boolean) => void) | undefined;
  return {
    wake() {
      pending = true;
      resolveWait?.(true);
    },
    wait(ms: number): Promise<boolean> {
      if (pending) {
        pending = false;
        return Promise.resolve(true);
      }
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          resolveWait = undefined;
          resolve(false);
        }, ms);
        resolveWait = (woken) => {
          clearTimeout(timer);
          resolveWait = undefined;
          pending = false;
          resolve(woken);
        };
      });
    },
  };
}

/** GET /sessions/:id/events: the session's events over SSE. */
export const eventRoutes: FastifyPluginAsyncZod<EventRoutesOptions> = async (app, opts) => {
  const deps = app.deps;
  const heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const { hub, limits, open } = opts.streams;
  const { metrics } = deps;

  app.get(
    '/sessions/:id/events',
    {
      // A HEAD would open a stream with no body to put it in.
      exposeHeadRoute: false,
      schema: {
        tags: ['sessions'],
        summary: 'Server-Sent Events of the session (resumable with Last-Event-ID)',
        description:
          'Without Last-Event-ID or ?after= the stream starts at the oldest retained event; ?after=$ starts ' +
          'after the newest. A `: heartbeat` comment is sent after 15 s without events. Open streams are ' +
          'capped per API key and per tenant: 429 `rate_limited` past the cap.',
        params: IdParam,
        querystring: EventsQuery,
        headers: EventsHeaders,
        response: {
          ...withErrors({}),
          200: {
            description: 'text/event-stream of session events',
            content: { 'text/event-stream': { schema: EventData } },
          },
        },
      },
    },
    async (request, reply) => {
      const tenant = tenantOf(request);
      const session = await loadSession(deps, tenant.id, request.params.id);
      const requested = request.headers['last-event-id'] ?? request.query.after ?? '0';
      let cursor = requested;
      if (requested !== '$' && !STREAM_ID.test(requested))
        throw new HttpError(
          'validation_error',
          'Last-Event-ID / after must be a stream id such as 1700000000000-0',
          {
            issues: [{ path: '/last-event-id', message: 'not a stream id' }],
          },
        );
      const refused = limits.acquire(tenant.id, tenant.keyId);
      if (refused) {
        metrics.sseStreams.inc({ outcome: 'refused' });
        throw new HttpError('rate_limited', refused.message, refused.details);
      }
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        limits.release(tenant.id, tenant.keyId);
        metrics.sseOpen.dec();
      };
      metrics.sseOpen.inc();
      const signal = waiter();
      let unwatch: (() => void) | undefined;
      try {
        if (requested === '$') cursor = await lastEventId(deps.redis, deps.keys, session.id);
        unwatch = await hub.watch(session.id, signal.wake);
      } catch (err) {
        unwatch?.();
        release();
        throw err;
      }

      const raw = reply.raw;
      let closed = false;
      let outcome: 'client_closed' | 'server_closed' | 'error' = 'client_closed';
      const close = () => {
        if (closed) return;
        closed = true;
        open.delete(close);
        unwatch?.();
        release();
        signal.wake();
      };
      const shutdown = () => {
        outcome = 'server_closed';
        close();
      };
      open.add(shutdown);
      // The response's 'close' (connection gone); the request's 'close' only means its body was read.
      raw.on('close', close);
      // The client may have gone while the stream was being set up ('close' already fired).
      if (raw.destroyed || request.raw.socket?.destroyed) close();

      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      raw.write(': connected\n\n');
      const log = request.log; // carries tenantId and sessionId (plugins/request-log.ts)
      log.info({ after: cursor }, 'sse open');
      try {
        while (!closed) {
          const events = await hub.read(session.id, cursor);
          if (closed) break;
          if (events.length > 0) {
            let chunk = '';
            for (const { id, event } of events) {
              chunk += `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
              cursor = id;
            }
            await writeStreamed(raw, chunk);
            continue; // a full page may have more behind it
          }
          // Nothing new: wait for the hub's wake-up; after heartbeatMs of silence, a heartbeat
          // (and the next read catches anything a lost wake-up would have announced).
          const woken = await signal.wait(heartbeatMs);
          if (!woken && !closed) await writeStreamed(raw, ': heartbeat\n\n');
        }
      } catch (err) {
        if (!closed) {
          outcome = 'error';
          log.warn({ err }, 'sse stream failed');
        }
      } finally {
        close();
        raw.end();
        metrics.sseStreams.inc({ outcome });
        // A hijacked reply skips the onResponse hook: count the request here, with its lifetime.
        const labels = { method: 'GET', route: request.routeOptions.url ?? 'unmatched', status: '200' };
        metrics.httpRequests.inc(labels);
        metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
        log.info({ last: cursor, outcome }, 'sse closed');
      }
    },
  );
};
