import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { batchCancelledIdleEvent } from '@loopline/queue';
import { reconcileOnce } from '@loopline/worker';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WEBHOOK_SUBSCRIPTIONS } from '../../apps/gateway/src/routes/webhooks.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';
import { summaryRule } from './context-fixtures.ts';

// Event webhooks end to end: a tenant subscribes (secret shown once), the worker delivers the
// events it produces — session.idle, session.waiting, session.error, compaction.completed,
// batch.completed — as signed Standard Webhooks requests through BullMQ jobs, retries a failing
// endpoint with the same event id, lists the deliveries and delivers one again on request; a
// dead endpoint never holds up the loop. Deliveries are an outbox: a delivery whose job was never
// added (the process died between the commit and the add) is delivered after the reconciler's
// pass; a batch cancel that stops queued sessions in the gateway tells of them as the worker would.

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

let stack: Stack;
let client: Client;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
/** Per path: how many attempts of each event id fail (500) before one succeeds. */
const failFirst = new Map<string, number>();
const attemptsSeen = new Map<string, number>();
const logLines: Record<string, any>[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body, json: JSON.parse(body) });
      const key = `${path} ${req.headers['webhook-id']}`;
      const n = (attemptsSeen.get(key) ?? 0) + 1;
      attemptsSeen.set(key, n);
      res.writeHead(n <= (failFirst.get(path) ?? 0) ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  stack = await startStack();
  // The workers read deps.logger per job: capture the lines they write (a failed attempt warns).
  stack.deps.logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
        done();
      },
    }),
  );
  client = await stack.tenant('hooked');
});
afterAll(async () => {
  await stack?.close();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

/** Standard Webhooks: HMAC-SHA256 of "id.timestamp.body", keyed with the secret's bytes. */
function verify(secret: string, r: Received): boolean {
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${r.body}`).digest('base64');
  return String(r.headers['webhook-signature'])
    .split(' ')
    .some((s) => s === `v1,${expected}`);
}

async function subscribe(name: string, path: string, events: string[], as: Client = client): Promise<string> {
  const res = await as.call('PUT', `/v1/webhooks/${name}`, { url: `${receiverUrl}${path}`, events });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.secret).toMatch(/^whsec_/);
  return res.body.secret;
}

const at = (path: string, type?: string) =>
  received.filter((r) => r.path === path && (!type || r.json.type === type));

describe('subscriptions', () => {
  it('PUT creates (secret once), updates, rotates; GET and list never show it; bad input is a 400', async () => {
    const created = await client.call('PUT', '/v1/webhooks/crud', {
      url: `${receiverUrl}/crud`,
      events: ['session.idle'],
    });
    expect(created.status).toBe(201);
    const secret = created.body.secret;
    expect(secret).toMatch(/^whsec_/);
    const updated = await client.call('PUT', '/v1/webhooks/crud', {
      url: `${receiverUrl}/crud2`,
      events: ['session.idle', 'session.error'],
    });
    expect(updated.status).toBe(200);
    expect(updated.body.secret).toBeUndefined();
    expect(updated.body).toMatchObject({
      url: `${receiverUrl}/crud2`,
      events: ['session.idle', 'session.error'],
    });
    const rotated = await client.call('PUT', '/v1/webhooks/crud', {
      url: `${receiverUrl}/crud2`,
      events: ['session.idle'],
      rotateSecret: true,
    });
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(secret);
    const got = await client.call('GET', '/v1/webhooks/crud');
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    const list = await client.call('GET', '/v1/webhooks');
    expect(list.body.webhooks.map((w: any) => w.name)).toContain('crud');
    expect(JSON.stringify(list.body)).not.toContain('whsec_');

    for (const bad of [
      { url: 'ftp://example.com/x', events: ['session.idle'] },
      { url: `${receiverUrl}/x`, events: [] },
      { url: `${receiverUrl}/x`, events: ['session.exploded'] },
      { url: `${receiverUrl}/x`, events: ['session.idle', 'session.idle'] },
      { url: `${receiverUrl}/x`, events: ['session.idle'], extra: 1 },
      // The egress rules of webhook tools: a private address the operator did not allow.
      { url: 'http://10.1.2.3/hook', events: ['session.idle'] },
    ]) {
      const res = await client.call('PUT', '/v1/webhooks/bad', bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error.code).toBe('validation_error');
    }
    expect((await client.call('GET', '/v1/webhooks/bad')).status).toBe(404);
    // Another tenant sees none of it.
    const other = await stack.tenant('other');
    expect((await other.call('GET', '/v1/webhooks/crud')).status).toBe(404);
    expect((await other.call('GET', '/v1/webhooks/crud/deliveries')).status).toBe(404);
    expect((await client.call('DELETE', '/v1/webhooks/crud')).status).toBe(200);
    expect((await client.call('GET', '/v1/webhooks/crud')).status).toBe(404);
  });

  it('caps the subscriptions of a tenant (each event fans out to all of them): 409, nothing written', async () => {
    const capped = await stack.tenant('capped');
    const hook = (name: string) =>
      capped.call('PUT', `/v1/webhooks/${name}`, { url: `${receiverUrl}/${name}`, events: ['session.idle'] });
    for (let i = 0; i < MAX_WEBHOOK_SUBSCRIPTIONS; i++) expect((await hook(`h${i}`)).status).toBe(201);
    const over = await hook('one-too-many');
    expect(over.status).toBe(409);
    expect(over.body.error.details).toEqual({ limit: MAX_WEBHOOK_SUBSCRIPTIONS });
    expect((await capped.call('GET', '/v1/webhooks')).body.webhooks).toHaveLength(MAX_WEBHOOK_SUBSCRIPTIONS);
    // Updating an existing one is not a new subscription.
    expect((await hook('h0')).status).toBe(200);
  });
});

describe('deliveries', () => {
  it('session.idle, signed, with a stable event id; listed as delivered; re-delivered on request', async () => {
    const secret = await subscribe('idle', '/idle', ['session.idle']);
    stack.mock.setScenario({ rules: [] });
    await client.agent('plain', {});
    const id = await client.session('plain');
    await client.send(id, 'hello');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const [hit] = await until('the idle event', () => at('/idle', 'session.idle').length > 0 && at('/idle'));
    expect(verify(secret, hit!)).toBe(true);
    expect(hit!.headers['content-type']).toBe('application/json');
    expect(hit!.json).toMatchObject({
      type: 'session.idle',
      id: hit!.headers['webhook-id'],
      data: { sessionId: id, tenantId: client.tenantId },
    });
    expect(JSON.stringify(hit!.json)).not.toContain('hello'); // no message content

    const listed = await until('the delivery listed as delivered', async () => {
      const res = await client.call('GET', '/v1/webhooks/idle/deliveries');
      const d = res.body.deliveries.find((x: any) => x.eventId === hit!.headers['webhook-id']);
      return d?.status === 'delivered' && d;
    });
    expect(listed).toMatchObject({
      eventType: 'session.idle',
      attempts: 1,
      lastStatus: 200,
      lastError: null,
    });

    const again = await client.call('POST', `/v1/webhooks/idle/deliveries/${listed.id}/redeliver`);
    expect(again.status).toBe(202);
    expect(again.body.delivery.status).toBe('pending');
    const both = await until('the re-delivery', () => at('/idle', 'session.idle').length >= 2 && at('/idle'));
    expect(both[1]!.headers['webhook-id']).toBe(hit!.headers['webhook-id']);
    expect(both[1]!.body).toBe(hit!.body);
    expect(verify(secret, both[1]!)).toBe(true);
    expect((await client.call('POST', '/v1/webhooks/idle/deliveries/whd_unknown/redeliver')).status).toBe(
      404,
    );
  });

  it('a failing endpoint is retried with the same event id; the loop does not wait for it', async () => {
    failFirst.set('/flaky', 2);
    // A port nothing listens on (taken, then freed).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedAddress = closed.address();
    const closedPort = typeof closedAddress === 'object' && closedAddress ? closedAddress.port : 0;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const secret = await subscribe('flaky', '/flaky', ['session.idle']);
    // A second subscription whose host refuses connections: its retries run on their own.
    const dead = await client.call('PUT', '/v1/webhooks/dead', {
      url: `http://127.0.0.1:${closedPort}/dead`,
      events: ['session.idle'],
    });
    expect(dead.status).toBe(201);
    stack.mock.setScenario({ rules: [] });
    await client.agent('plain', {});
    const id = await client.session('plain');
    await client.send(id, 'first');
    expect((await client.waitIdle(id)).status).toBe('idle');
    await client.send(id, 'second'); // the loop goes on while the dead endpoint is retried
    expect((await client.waitIdle(id)).status).toBe('idle');

    const hits = await until(
      'the third attempt',
      () => {
        const first = at('/flaky')[0]?.headers['webhook-id'];
        const same = at('/flaky').filter((r) => r.headers['webhook-id'] === first);
        return same.length >= 3 && same;
      },
      30_000,
    );
    for (const r of hits) expect(verify(secret, r)).toBe(true);
    const delivered = await until('flaky delivered', async () => {
      const res = await client.call('GET', '/v1/webhooks/flaky/deliveries');
      const d = res.body.deliveries.find((x: any) => x.eventId === hits[0]!.headers['webhook-id']);
      return d?.status === 'delivered' && d;
    });
    expect(delivered.attempts).toBe(3);
    const deadList = await until('a failed attempt recorded', async () => {
      const res = await client.call('GET', '/v1/webhooks/dead/deliveries');
      return res.body.deliveries.some((d: any) => d.attempts >= 1) && res.body.deliveries;
    });
    expect(deadList[0].status).toBe('pending');
    expect(deadList[0].lastError).toMatch(/ECONNREFUSED/);
    // One delivery of an event at a time: no redelivery beside one still being retried.
    const twice = await client.call('POST', `/v1/webhooks/dead/deliveries/${deadList[0].id}/redeliver`);
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('conflict');
    // A failed attempt is a warning with its reason in the log, not only a counter.
    // (The attempt is recorded, then logged: wait for the line.)
    const warned = await until('the warning of a failed attempt', () =>
      logLines.find((l) => l.msg === 'webhook delivery failed; retrying' && l.deliveryId === deadList[0].id),
    );
    expect(warned).toMatchObject({
      level: 40,
      tenantId: client.tenantId,
    });
    expect(warned.reason).toMatch(/ECONNREFUSED/);
    await client.call('DELETE', '/v1/webhooks/dead');
  }, 45_000);

  it('an endpoint that keeps failing is no longer sent to after five failures in a row (its breaker)', async () => {
    failFirst.set('/down', 1_000_000);
    const tenant = await stack.tenant();
    await subscribe('down', '/down', ['session.idle'], tenant);
    stack.mock.setScenario({ rules: [] });
    await tenant.agent('plain', {});
    // Four events, each retried with backoff: eight failed attempts within about a second.
    for (let i = 0; i < 4; i++) {
      const id = await tenant.session('plain');
      await tenant.send(id, `event ${i}`);
      expect((await tenant.waitIdle(id)).status).toBe('idle');
    }
    const deliveries = await until(
      'an attempt refused by the breaker',
      async () => {
        const res = await tenant.call('GET', '/v1/webhooks/down/deliveries');
        const list = res.body.deliveries as any[];
        return (
          list.some((d) => /^not sent: the endpoint failed its last \d+ attempts/.test(d.lastError ?? '')) &&
          list
        );
      },
      30_000,
    );
    // Attempts recorded beyond the requests the endpoint received: those were never sent.
    const attempts = deliveries.reduce((sum: number, d: any) => sum + d.attempts, 0);
    expect(at('/down').length).toBeLessThan(attempts);
    expect(deliveries.every((d: any) => d.status === 'pending')).toBe(true);
  });

  it('session.waiting, compaction.completed and session.error; batch.completed', async () => {
    const secret = await subscribe('all', '/all', [
      'session.waiting',
      'compaction.completed',
      'session.error',
      'batch.completed',
    ]);
    // A client tool: the session waits for the caller.
    await client.tool('pick', {
      kind: 'client',
      description: 'Ask the user',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    });
    stack.mock.setScenario({
      rules: [
        summaryRule,
        {
          when: { lastUserIncludes: 'choose', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'pick', arguments: { q: 'file' } }] },
        },
        { when: { lastUserIncludes: 'explode' }, reply: { fault: 'http', status: 400, body: 'bad request' } },
      ],
    });
    await client.agent('asker', { tools: ['pick'] });
    const waiting = await client.session('asker');
    await client.send(waiting, 'please choose');
    const w = await until('session.waiting', () => at('/all', 'session.waiting')[0]);
    expect(w.json.data).toMatchObject({ sessionId: waiting });
    expect(w.json.data.detail).toContain('client tool');

    await client.agent('plain', {});
    const compacted = await client.session('plain');
    // Enough history before the kept tail that a summary shrinks it (else it is a recorded no-op).
    for (const n of [1, 2, 3, 4]) {
      await client.send(compacted, `note ${n}: ${'lorem ipsum dolor sit amet '.repeat(80)}`);
      await client.waitIdle(compacted);
    }
    expect((await client.call('POST', `/v1/sessions/${compacted}/compact`, {})).status).toBeLessThan(300);
    const c = await until('compaction.completed', () => at('/all', 'compaction.completed')[0]);
    expect(c.json.data).toMatchObject({ sessionId: compacted, auto: false });
    expect(c.json.data.tokensBefore).toBeGreaterThan(0);
    expect(typeof c.json.data.rung).toBe('string');

    const failing = await client.session('plain');
    await client.send(failing, 'explode now');
    const e = await until('session.error', () => at('/all', 'session.error')[0]);
    expect(e.json.data).toMatchObject({ sessionId: failing });
    expect(e.json.data.error.name).toBeTypeOf('string');

    const batch = await client.call('POST', '/v1/batches', {
      agent: 'plain',
      conversations: [{ messages: ['one'] }, { messages: ['two'] }],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    const b = await until('batch.completed', () => at('/all', 'batch.completed')[0], 30_000);
    expect(b.json.data).toMatchObject({ batchId: batch.body.id, tenantId: client.tenantId });
    for (const r of at('/all')) expect(verify(secret, r)).toBe(true);
    // Only the subscribed types: no session.idle here.
    expect(at('/all', 'session.idle')).toEqual([]);
  }, 45_000);
});

describe('outbox', () => {
  it('a delivery whose job was never added is delivered once the reconciler passes, with its event id', async () => {
    const own = await stack.tenant('outbox');
    const secret = await subscribe('crash', '/crash', ['session.idle'], own);
    stack.mock.setScenario({ rules: [] });
    await own.agent('plain', {});
    const id = await own.session('plain');
    // The process "dies" between the commit of the idle write and the add of its delivery job.
    let crashed = false;
    stack.deps.racepoint = (name) => {
      if (name !== 'webhook:before-queue' || crashed) return;
      crashed = true;
      throw new Error('racepoint: the worker dies before adding the job');
    };
    try {
      await own.send(id, 'hello');
      expect((await own.waitIdle(id)).status).toBe('idle');
      await until('the job add skipped', () => crashed);
    } finally {
      stack.deps.racepoint = undefined;
    }
    const pending = (await own.call('GET', '/v1/webhooks/crash/deliveries')).body.deliveries;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ status: 'pending', attempts: 0, eventType: 'session.idle' });
    expect(await stack.deps.queues.webhook.getJobState(pending[0].id)).toBe('unknown');

    // The reconciler's pass (sessions: none stalled this long; deliveries: no grace) re-adds it.
    const pass = await reconcileOnce(stack.deps, { afterMs: 3_600_000, deliveryGraceMs: 0 });
    expect(pass.deliveries.map((d) => d.id)).toEqual([pending[0].id]);
    const hit = await until('the healed delivery', () => at('/crash')[0]);
    expect(hit.headers['webhook-id']).toBe(pending[0].eventId);
    expect(hit.json).toMatchObject({ type: 'session.idle', data: { sessionId: id } });
    expect(verify(secret, hit)).toBe(true);
    await until('delivered', async () => {
      const res = await own.call('GET', '/v1/webhooks/crash/deliveries');
      return res.body.deliveries[0]?.status === 'delivered';
    });
    // Nothing left to heal: a later pass adds no second job.
    expect((await reconcileOnce(stack.deps, { afterMs: 3_600_000, deliveryGraceMs: 0 })).deliveries).toEqual(
      [],
    );
    expect(at('/crash')).toHaveLength(1);
  });

  it('a pending delivery whose job already ended gets a job of its own (a kept job id would be a no-op)', async () => {
    const own = await stack.tenant('outbox-ended');
    await subscribe('ended', '/ended', ['session.idle'], own);
    stack.mock.setScenario({ rules: [] });
    await own.agent('plain', {});
    const id = await own.session('plain');
    await own.send(id, 'hello');
    expect((await own.waitIdle(id)).status).toBe('idle');
    const delivered = await until('delivered', async () => {
      const d = (await own.call('GET', '/v1/webhooks/ended/deliveries')).body.deliveries[0];
      return d?.status === 'delivered' && d;
    });
    // As if its worker died on the last attempt before recording it: the job is over, the row pending.
    await stack.deps.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending' })
      .where('id', '=', delivered.id)
      .execute();
    expect(await stack.deps.queues.webhook.getJobState(delivered.id)).toBe('completed');
    const pass = await reconcileOnce(stack.deps, { afterMs: 3_600_000, deliveryGraceMs: 0 });
    const healed = pass.deliveries.find((d) => d.id === delivered.id);
    expect(healed?.jobId).toMatch(new RegExp(`^${delivered.id}-h\\d+$`));
    await until('sent again, same event id', () => at('/ended').length >= 2);
    expect(at('/ended').map((r) => r.headers['webhook-id'])).toEqual([delivered.eventId, delivered.eventId]);
    await until('delivered again', async () => {
      const d = (await own.call('GET', '/v1/webhooks/ended/deliveries')).body.deliveries[0];
      return d?.status === 'delivered';
    });
  });

  it('a batch cancel that stops queued sessions in the gateway sends their session.idle', async () => {
    const own = await stack.tenant('outbox-batch');
    await subscribe('cancel', '/cancel', ['session.idle', 'batch.completed'], own);
    const operator = { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' };
    // One running session at a time: the other conversations wait, queued, for the slot.
    const patched = await fetch(`${stack.url}/v1/admin/tenants/${own.tenantId}`, {
      method: 'PATCH',
      headers: operator,
      body: JSON.stringify({ limits: { maxConcurrentSessions: 1 } }),
    });
    expect(patched.status).toBe(200);
    stack.mock.setScenario({
      rules: [{ when: { lastUserIncludes: 'slowly' }, reply: { text: 'slow', chunks: 20 }, latencyMs: 40 }],
    });
    await own.agent('plain', {});
    const created = await own.call('POST', '/v1/batches', {
      agent: 'plain',
      conversations: Array.from({ length: 4 }, (_, i) => ({ messages: [`answer slowly ${i}`] })),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const batchId = created.body.id;
    await until('one conversation running', async () => {
      const b = (await own.call('GET', `/v1/batches/${batchId}`)).body;
      return b.counts.running === 1;
    });
    expect((await own.call('POST', `/v1/batches/${batchId}/cancel`)).status).toBe(200);
    const sessions = (
      await stack.deps.db
        .selectFrom('batch_items')
        .select('session_id')
        .where('batch_id', '=', batchId)
        .execute()
    ).map((r) => r.session_id);
    // Every conversation's session tells it went idle, whoever stopped it, and the batch completes.
    const idle = await until(
      'session.idle of every conversation',
      () => {
        const seen = at('/cancel', 'session.idle').filter((r) => sessions.includes(r.json.data.sessionId));
        return new Set(seen.map((r) => r.json.data.sessionId)).size === sessions.length && seen;
      },
      30_000,
    );
    await until('batch.completed', () =>
      at('/cancel', 'batch.completed').some((r) => r.json.data.batchId === batchId),
    );
    // At least one was stopped by the gateway itself (queued), under the cancel's own event id.
    const byGateway = sessions.map((s) => batchCancelledIdleEvent(own.tenantId, s, batchId).id);
    expect(idle.some((r) => byGateway.includes(String(r.headers['webhook-id'])))).toBe(true);
    // Told once each: the worker's step that later finds a gateway-stopped session idle adds none.
    const told = at('/cancel', 'session.idle').filter((r) => sessions.includes(r.json.data.sessionId));
    expect(new Set(told.map((r) => r.headers['webhook-id'])).size).toBe(sessions.length);
  }, 45_000);
});
