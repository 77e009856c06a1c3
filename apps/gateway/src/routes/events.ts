import type { ServerResponse } from 'node:http';
import { SessionEvent } from '@loopline/core';
import { duplicateRedis, lastEventId, readEvents } from '@loopline/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { HttpError } from '../lib/http-error.ts';
import { loadSession } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import { EventsHeaders, EventsQuery, IdParam, withErrors } from '../schemas.ts';

// Server-Sent Events from the session's Redis stream. Each event: `id:` = stream id, `event:` =
// event type, `data:` = the JSON event.
//
// Where a stream starts: after `Last-Event-ID` (header) or `?after=`; without either, at the
// beginning of the retained stream ('0'), so a client that POSTs a message and then connects
// misses nothing (the stream keeps about the last 10,000 events for 7 days). `?after=$` starts at
// the newest event instead (resolved to a concrete id, so reconnects stay exact).
//
// Every client gets its own Redis connection (redis.duplicate()): XREAD BLOCK holds the
// connection for the whole wait. It is closed when the client goes away or the app closes.

const STREAM_ID = /^\d{1,20}(-\d{1,20})?$/;

/** The `data:` of each event (the OpenAPI document shows one). */
const EventData = SessionEvent.describe(
  'Each event is `id: <stream id>`, `event: <type>`, `data: <this JSON>`',
).meta({ example: { type: 'session.status', status: 'running' } });
const DEFAULT_HEARTBEAT_MS = 15_000;

export interface EventRoutesOptions {
  /** Idle time before a `: heartbeat` comment (and the XREAD BLOCK timeout). */
  heartbeatMs?: number;
}

function write(raw: ServerResponse, chunk: string): Promise<void> {
  if (raw.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

export const eventRoutes: FastifyPluginAsyncZod<EventRoutesOptions> = async (app, opts) => {
  const deps = app.deps;
  const heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const open = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const close of open) close();
  });

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
          'after the newest. A `: heartbeat` comment is sent after 15 s without events.',
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
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      const requested = request.headers['last-event-id'] ?? request.query.after ?? '0';
      let cursor = requested;
      if (requested === '$') cursor = await lastEventId(deps.redis, deps.keys, session.id);
      else if (!STREAM_ID.test(requested))
        throw new HttpError(
          'validation_error',
          'Last-Event-ID / after must be a stream id such as 1700000000000-0',
          {
            issues: [{ path: '/last-event-id', message: 'not a stream id' }],
          },
        );

      // Named so an operator (CLIENT LIST) can tell SSE readers apart.
      const conn = duplicateRedis(deps.redis, { connectionName: `loopline-sse-${session.id}` });
      const raw = reply.raw;
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        open.delete(close);
        conn.disconnect();
      };
      open.add(close);
      // The response's 'close' (connection gone); the request's 'close' only means its body was read.
      raw.on('close', close);

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
          const events = await readEvents(conn, deps.keys, session.id, cursor, heartbeatMs);
          if (closed) break;
          if (events.length === 0) {
            await write(raw, ': heartbeat\n\n');
            continue;
          }
          let chunk = '';
          for (const { id, event } of events) {
            chunk += `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
            cursor = id;
          }
          await write(raw, chunk);
        }
      } catch (err) {
        if (!closed) log.warn({ err }, 'sse stream failed');
      } finally {
        close();
        raw.end();
        log.info({ last: cursor }, 'sse closed');
      }
    },
  );
};
