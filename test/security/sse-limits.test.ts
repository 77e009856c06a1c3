import { randomUUID } from 'node:crypto';
import type { SessionEvent } from '@loopline/core';
import { createQueues, type KeySpace, keySpace, publishEvents, type Queues } from '@loopline/queue';
import { createTestDatabase, type TestDatabase } from '@loopline/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../apps/gateway/src/app.ts';
import { bearer, createTenant, OPERATOR } from '../../apps/gateway/test/helpers.ts';
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server.ts';
import { until } from '../support/wait.ts';

// Event streams are bounded: a key and a tenant can hold only so many open SSE streams (429 past
// the cap, with a problem body naming it), and the streams of a gateway share a fixed number of
// Redis connections however many are open (a private redis-server, so CLIENT LIST counts only
// this gateway). Every stream still gets every event; the gauge and the HTTP metrics count them.

const PER_KEY = 5;
const PER_TENANT = 8;

let redisServer: PrivateRedis;
let database: TestDatabase;
let redis: Redis;
let keys: KeySpace;
let queues: Queues;
let app: Awaited<ReturnType<typeof buildApp>>;
let base: string;
let sessionId: string;
let key1: string;
let key2: string;
let otherTenant: { key: string; sessionId: string };

async function session(apiKey: string): Promise<string> {
  const put = await fetch(`${base}/v1/agents/a`, {
    method: 'PUT',
    headers: { ...bearer(apiKey), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'compatible/mock' }),
  });
  expect(put.status).toBeLessThan(300);
  const created = await fetch(`${base}/v1/sessions`, {
    method: 'POST',
    headers: { ...bearer(apiKey), 'content-type': 'application/json' },
    body: JSON.stringify({ agent: 'a' }),
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

beforeAll(async () => {
  redisServer = await startPrivateRedis();
  database = await createTestDatabase('sec_sse');
  redis = new Redis(redisServer.url, { maxRetriesPerRequest: 3 });
  keys = keySpace(`test-${randomUUID()}`);
  queues = createQueues(redis, keys);
  app = await buildApp({
    db: database.db,
    redis,
    queues,
    keys,
    operatorToken: OPERATOR,
    logger: false,
    sseHeartbeatMs: 300,
    sse: { maxPerKey: PER_KEY, maxPerTenant: PER_TENANT },
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  const tenant = await createTenant(app, 'streams');
  key1 = tenant.apiKey;
  const second = await app.inject({
    method: 'POST',
    url: `/v1/admin/tenants/${tenant.tenant.id}/keys`,
    headers: bearer(OPERATOR),
  });
  expect(second.statusCode, second.body).toBe(201);
  key2 = (second.json() as { apiKey: string }).apiKey;
  sessionId = await session(key1);
  const other = await createTenant(app, 'neighbour');
  otherTenant = { key: other.apiKey, sessionId: await session(other.apiKey) };
});

afterAll(async () => {
  await app?.close();
  await queues?.close();
  redis?.disconnect();
  await database?.drop();
  await redisServer?.close();
});

interface OpenStream {
  status: number;
  body: any;
  events: SessionEvent[];
  comments: string[];
  close(): void;
}

/** Opens a stream and keeps reading it in the background until close(). */
async function open(apiKey: string, sid = sessionId, query = '?after=$'): Promise<OpenStream> {
  const controller = new AbortController();
  const res = await fetch(`${base}/v1/sessions/${sid}/events${query}`, {
    headers: bearer(apiKey),
    signal: controller.signal,
  });
  const stream: OpenStream = {
    status: res.status,
    body: undefined,
    events: [],
    comments: [],
    close: () => controller.abort(),
  };
  if (res.status !== 200) {
    stream.body = await res.json();
    return stream;
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const first = await reader.read(); // ': connected'
  buffer += decoder.decode(first.value, { stream: true });
  void (async () => {
    try {
      for (;;) {
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').find((l) => l.startsWith('data: '));
          if (data) stream.events.push(JSON.parse(data.slice(6)) as SessionEvent);
          else if (block.startsWith(':')) stream.comments.push(block.slice(1).trim());
          end = buffer.indexOf('\n\n');
        }
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
      }
    } catch {
      // aborted by close()
    }
  })();
  return stream;
}

async function connections(): Promise<{ total: number; sse: number }> {
  const list = ((await redis.client('LIST')) as string).split('\n').filter((l) => l.trim() !== '');
  return { total: list.length, sse: list.filter((l) => / name=loopline-sse-/.test(l)).length };
}

async function metric(name: string, labels = ''): Promise<number | undefined> {
  const res = await fetch(`${base}/metrics`, { headers: bearer(OPERATOR) });
  const line = (await res.text())
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels ? `{` : ' '}`) && (!labels || l.includes(labels)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const status = (detail: string): SessionEvent => ({ type: 'session.status', status: 'running', detail });

describe('open event streams', () => {
  it('are capped per API key and per tenant with 429; other tenants are unaffected; closing frees a place', async () => {
    const streams: OpenStream[] = [];
    for (let i = 0; i < PER_KEY; i++) streams.push(await open(key1));
    expect(streams.map((s) => s.status)).toEqual(Array(PER_KEY).fill(200));

    const overKey = await open(key1);
    expect(overKey.status).toBe(429);
    expect(overKey.body.error.code).toBe('rate_limited');
    expect(overKey.body.error.message).toMatch(/open event streams for this API key/);
    expect(overKey.body.error.details).toEqual({ scope: 'api_key', limit: PER_KEY });

    // The tenant's second key has room until the tenant cap.
    for (let i = PER_KEY; i < PER_TENANT; i++) {
      const s = await open(key2);
      expect(s.status).toBe(200);
      streams.push(s);
    }
    const overTenant = await open(key2);
    expect(overTenant.status).toBe(429);
    expect(overTenant.body.error.details).toEqual({ scope: 'tenant', limit: PER_TENANT });

    // Another tenant is not affected by this one's streams.
    const neighbour = await open(otherTenant.key, otherTenant.sessionId);
    expect(neighbour.status).toBe(200);
    streams.push(neighbour);

    expect(await metric('loopline_sse_streams_open')).toBe(PER_TENANT + 1);
    expect(await metric('loopline_sse_streams_total', 'outcome="refused"')).toBe(2);

    // Closing a stream frees its place (once the gateway sees the socket close).
    streams.shift()!.close();
    const again = await until('a place for key1 again', async () => {
      const s = await open(key1);
      return s.status === 200 ? s : (undefined as OpenStream | undefined);
    });
    streams.push(again);

    for (const s of streams) s.close();
    await until('every stream closed', async () => (await metric('loopline_sse_streams_open')) === 0);
    // Each ended stream is counted in the HTTP metrics (its lifetime) and by outcome.
    const served = await metric(
      'loopline_http_requests_total',
      'route="/v1/sessions/:id/events",status="200"',
    );
    expect(served).toBeGreaterThanOrEqual(PER_TENANT + 2);
    expect(await metric('loopline_sse_streams_total', 'outcome="client_closed"')).toBeGreaterThanOrEqual(
      PER_TENANT + 2,
    );
  });

  it('count AI SDK UI chat streams against the same caps, refused before anything is written', async () => {
    const streams: OpenStream[] = [];
    for (let i = 0; i < PER_KEY; i++) streams.push(await open(key1));
    expect(streams.map((s) => s.status)).toEqual(Array(PER_KEY).fill(200));
    const before = await app.inject({
      method: 'GET',
      url: `/v1/sessions/${sessionId}/messages`,
      headers: bearer(key1),
    });
    const chat = await app.inject({
      method: 'POST',
      url: '/v1/chat',
      headers: bearer(key1),
      payload: {
        id: sessionId,
        trigger: 'submit-message',
        messages: [{ id: 'ui-over-cap', role: 'user', parts: [{ type: 'text', text: 'over the cap' }] }],
      },
    });
    expect(chat.statusCode, chat.body).toBe(429);
    expect(chat.json().error.details).toEqual({ scope: 'api_key', limit: PER_KEY });
    const after = await app.inject({
      method: 'GET',
      url: `/v1/sessions/${sessionId}/messages`,
      headers: bearer(key1),
    });
    expect(after.json()).toEqual(before.json());
    for (const s of streams) s.close();
    await until('every stream closed', async () => (await metric('loopline_sse_streams_open')) === 0);
  });

  it('share two Redis connections per gateway, however many are open, and each gets every event', async () => {
    const one = await open(key1);
    await until('the hub connected', async () => (await connections()).sse === 2);
    const withOne = await connections();

    const many = [one];
    for (let i = 1; i < PER_KEY; i++) many.push(await open(key1));
    for (let i = PER_KEY; i < PER_TENANT; i++) many.push(await open(key2));
    expect(many.every((s) => s.status === 200)).toBe(true);
    const withMany = await connections();
    expect(withMany.sse).toBe(2);
    expect(withMany.total).toBe(withOne.total);

    await publishEvents(redis, keys, sessionId, [status('fan-out-1'), status('fan-out-2')]);
    await until('every stream got both events', () =>
      many.every((s) => s.events.filter((e) => e.type === 'session.status').length >= 2),
    );
    for (const s of many)
      expect(s.events.map((e) => (e as { detail?: string }).detail)).toEqual(['fan-out-1', 'fan-out-2']);
    for (const s of many) s.close();
    await until('streams closed', async () => (await metric('loopline_sse_streams_open')) === 0);
  });

  it('an event written without a wake-up (an older writer) still arrives, at the next heartbeat read', async () => {
    const s = await open(key1);
    expect(s.status).toBe(200);
    await redis.xadd(keys.events(sessionId), '*', 'e', JSON.stringify(status('silent')));
    await until('the silent event', () =>
      s.events.some((e) => (e as { detail?: string }).detail === 'silent'),
    );
    expect(s.comments).toContain('heartbeat');
    s.close();
  });
});
