import { createEventHub, type EventHub } from '@loopline/queue';
import type { FastifyInstance } from 'fastify';
import { type StreamLimiter, streamLimiter } from './stream-limits.ts';

// What every long-lived stream of a gateway process shares (SSE events and the AI SDK UI chat
// stream alike): one event hub (two Redis connections, whatever the number of clients), one
// limiter (the per-key and per-tenant caps count every open stream, of either kind), and the set
// of open streams that a closing server ends first.

export interface SessionStreams {
  hub: EventHub;
  limits: StreamLimiter;
  /** Closers of the open streams; a route adds its own and removes it when the stream ends. */
  open: Set<() => void>;
}

/** Creates the process's stream resources and ties their shutdown to the app's close. */
export function sessionStreams(app: FastifyInstance): SessionStreams {
  const deps = app.deps;
  const streams: SessionStreams = {
    hub: createEventHub(deps.redis, deps.keys),
    limits: streamLimiter({
      maxPerKey: deps.sse?.maxPerKey ?? 20,
      maxPerTenant: deps.sse?.maxPerTenant ?? 100,
    }),
    open: new Set(),
  };
  app.addHook('preClose', async () => {
    for (const close of streams.open) close();
  });
  app.addHook('onClose', async () => {
    streams.hub.close();
  });
  return streams;
}
