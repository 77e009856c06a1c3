import type { SessionEvent } from '@loopline/core';
import { publishEvents } from '@loopline/queue';
import { until } from '@loopline/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, type Stack, startStack, tenantWithSession } from './helpers.ts';

// SSE over a real socket: events from the session's Redis stream, resumable with Last-Event-ID
// with no loss and no repeat, heartbeats, and a fixed number of Redis connections for any number of streams.

let stack: Stack;
let t: Awaited<ReturnType<typeof tenantWithSession>>;
let base: string;

beforeAll(async () => {
  stack = await startStack('events', { sseHeartbeatMs: 200 });
  t = await tenantWithSession(stack.app, 'acme');
  base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await stack?.close();
});

interface Received {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/**
 * Opens the stream and reads frames until `done` says stop; then closes the connection.
 * `onConnected` runs at the server's `: connected` comment: its cursor is set, so anything
 * published from then on is delivered.
 */
async function readStream(
  headers: Record<string, string>,
  done: (frames: Received[]) => boolean,
  query = '',
  onConnected?: () => void,
): Promise<{ frames: Received[]; status: number; contentType: string | null }> {
  const controller = new AbortController();
  const res = await fetch(`${base}/v1/sessions/${t.sessionId}/events${query}`, {
    headers: { ...t.auth, ...headers },
    signal: controller.signal,
  });
  const frames: Received[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const deadline = setTimeout(() => controller.abort(), 10_000);
  try {
    while (!done(frames)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: Received = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(':');
            const field = line.slice(0, colon) as 'id' | 'event' | 'data';
            frame[field] = line.slice(colon + 1).trim();
          }
        }
        frames.push(frame);
        if (frame.comment === 'connected') onConnected?.();
        end = buffer.indexOf('\n\n');
      }
    }
  } finally {
    clearTimeout(deadline);
    controller.abort();
  }
  return { frames, status: res.status, contentType: res.headers.get('content-type') };
}

const events = (frames: Received[]) => frames.filter((f) => f.id !== undefined);
const statusEvent = (detail: string): SessionEvent => ({ type: 'session.status', status: 'running', detail });

describe('GET /v1/sessions/:id/events', () => {
  it('streams from the beginning, then resumes after Last-Event-ID with exactly the rest', async () => {
    await publishEvents(
      stack.redis,
      stack.keys,
      t.sessionId,
      Array.from({ length: 6 }, (_, i) => statusEvent(`e${i}`)),
    );

    // 1. read the first three events and disconnect
    const first = await readStream({}, (f) => events(f).length >= 3);
    expect(first.status).toBe(200);
    expect(first.contentType).toContain('text/event-stream');
    const got = events(first.frames).slice(0, 3);
    expect(got.map((e) => e.event)).toEqual(['session.status', 'session.status', 'session.status']);
    expect(got.map((e) => JSON.parse(e.data!).detail)).toEqual(['e0', 'e1', 'e2']);
    const lastId = got[2]!.id!;

    // 2. more events arrive while disconnected
    await publishEvents(stack.redis, stack.keys, t.sessionId, [statusEvent('e6'), statusEvent('e7')]);

    // 3. reconnect: exactly e3..e7, no loss, no repeat
    const rest = await readStream({ 'last-event-id': lastId }, (f) => events(f).length >= 5);
    const details = events(rest.frames).map((e) => JSON.parse(e.data!).detail);
    expect(details).toEqual(['e3', 'e4', 'e5', 'e6', 'e7']);

    // ?after= works the same way; the header wins over it.
    const viaQuery = await readStream({}, (f) => events(f).length >= 2, `?after=${lastId}`);
    expect(
      events(viaQuery.frames)
        .map((e) => JSON.parse(e.data!).detail)
        .slice(0, 2),
    ).toEqual(['e3', 'e4']);
  });

  it('delivers live events and heartbeats while idle', async () => {
    let connected = false;
    const pending = readStream(
      {},
      (f) =>
        events(f).some((e) => JSON.parse(e.data!).detail === 'live') &&
        f.some((x) => x.comment === 'heartbeat'),
      '?after=$',
      () => {
        connected = true;
      },
    );
    await until('the stream connected', () => connected);
    await publishEvents(stack.redis, stack.keys, t.sessionId, [statusEvent('live')]);
    const { frames } = await pending;
    const live = events(frames);
    expect(live.map((e) => JSON.parse(e.data!).detail)).toEqual(['live']);
    expect(frames.some((f) => f.comment === 'heartbeat')).toBe(true);
  });

  it('streams events written by the message route', async () => {
    let connected = false;
    const pending = readStream(
      {},
      (f) => events(f).some((e) => e.event === 'message.updated'),
      '?after=$',
      () => {
        connected = true;
      },
    );
    await until('the stream connected', () => connected);
    const posted = await fetch(`${base}/v1/sessions/${t.sessionId}/messages`, {
      method: 'POST',
      headers: { ...t.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello' }),
    });
    expect(posted.status).toBe(202);
    const { frames } = await pending;
    const message = events(frames).find((e) => e.event === 'message.updated')!;
    expect(JSON.parse(message.data!).message.id).toBe(
      ((await posted.json()) as { message: { info: { id: string } } }).message.info.id,
    );
  });

  it('a message too large for the stream (200 KB of text) is an event.clipped there, whole in the log', async () => {
    let connected = false;
    const pending = readStream(
      {},
      (f) => events(f).some((e) => e.event === 'event.clipped'),
      '?after=$',
      () => {
        connected = true;
      },
    );
    await until('the stream connected', () => connected);
    const text = 'z'.repeat(200_000);
    const posted = await fetch(`${base}/v1/sessions/${t.sessionId}/messages`, {
      method: 'POST',
      headers: { ...t.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    expect(posted.status).toBe(202);
    const { info, parts } = (
      (await posted.json()) as { message: { info: { id: string }; parts: { id: string }[] } }
    ).message;
    const clipped = events((await pending).frames).find((e) => e.event === 'event.clipped')!;
    expect(JSON.parse(clipped.data!)).toMatchObject({
      type: 'event.clipped',
      event: 'part.updated',
      messageId: info.id,
      partId: parts[0]!.id,
      partType: 'text',
    });
    expect(await stack.redis.memory('USAGE', stack.keys.events(t.sessionId))).toBeLessThan(100_000);
    const log = await fetch(`${base}/v1/sessions/${t.sessionId}/messages?view=log`, { headers: t.auth });
    const stored = (
      (await log.json()) as { messages: { info: { id: string }; parts: { text?: string }[] }[] }
    ).messages;
    expect(stored.find((m) => m.info.id === info.id)!.parts[0]!.text).toBe(text);
  });

  it('shares two Redis connections among all streams of the process, whatever their number', async () => {
    const sseConnections = async () => {
      const list = (await stack.redis.client('LIST')) as string;
      return list.split('\n').filter((l) => / name=loopline-sse-/.test(l)).length;
    };
    const controllers: AbortController[] = [];
    for (let i = 0; i < 8; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      const res = await fetch(`${base}/v1/sessions/${t.sessionId}/events?after=$`, {
        headers: t.auth,
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
      await res.body!.getReader().read();
    }
    // Other test files share this Redis: count only this app's hub (reader + subscriber) by
    // checking the total does not grow with the streams.
    const withEight = await sseConnections();
    const controller = new AbortController();
    const res = await fetch(`${base}/v1/sessions/${t.sessionId}/events?after=$`, {
      headers: t.auth,
      signal: controller.signal,
    });
    await res.body!.getReader().read();
    expect(await sseConnections()).toBeLessThanOrEqual(withEight);
    for (const c of [...controllers, controller]) c.abort();
  });

  it('refuses a malformed Last-Event-ID with 400 and unknown sessions with 404', async () => {
    const bad = await stack.app.inject({
      method: 'GET',
      url: `/v1/sessions/${t.sessionId}/events`,
      headers: { ...t.auth, 'last-event-id': 'yesterday' },
    });
    expectProblem(bad, 400, 'validation_error');
    const unknown = await stack.app.inject({
      method: 'GET',
      url: '/v1/sessions/ses_nope/events',
      headers: t.auth,
    });
    expectProblem(unknown, 404, 'not_found');
  });
});
