import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowCounts } from '../../apps/gateway/test/helpers.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// A tenant's running batches hold at most LOOPLINE_BATCH_MAX_RUNNING_CONVERSATIONS conversations
// together (5 here): each is a session, a BullMQ job and an event stream, so one batch request
// after another would otherwise fill Redis for every tenant. Past the cap the answer is 409 and
// nothing is written; the cap is per tenant; a cancelled batch gives its room back; two requests at
// once cannot both pass it. No workers: the batches stay running.

let stack: Stack;
let a: Client;
let b: Client;

beforeAll(async () => {
  stack = await startStack({ workers: false, batches: { maxRunningConversations: 5 } });
  a = await stack.tenant('cap-a');
  b = await stack.tenant('cap-b');
  await a.agent('helper', {});
  await b.agent('helper', {});
});
afterAll(() => stack?.close());

const batch = (as: Client, n: number) =>
  as.call('POST', '/v1/batches', {
    agent: 'helper',
    conversations: Array.from({ length: n }, (_, i) => ({ messages: [`q${i}`] })),
  });

describe("a tenant's running batch conversations", () => {
  it('are capped per tenant; past the cap a 409 writes nothing; a cancel gives the room back', async () => {
    const first = await batch(a, 3);
    expect(first.status).toBe(201);
    const before = await rowCounts(stack.deps.db);
    const refused = await batch(a, 3);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('conflict');
    expect(refused.body.error.message).toContain('at most 5 conversations and 3 are running');
    expect(refused.body.error.details).toEqual({ limit: 5, running: 3 });
    expect(await rowCounts(stack.deps.db)).toEqual(before);
    // Another tenant has its own room.
    expect((await batch(b, 5)).status).toBe(201);
    // A cancelled batch is not running any more.
    expect((await a.call('POST', `/v1/batches/${first.body.id}/cancel`)).status).toBe(200);
    expect((await batch(a, 3)).status).toBe(201);
    // Its conversations never posted a message: their result lines need no read of their logs.
    const res = await fetch(`${stack.url}/v1/batches/${first.body.id}/results`, {
      headers: { authorization: `Bearer ${a.apiKey}` },
    });
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.status, l.output, l.modelCalls, l.usage])).toEqual(
      Array.from({ length: 3 }, () => ['cancelled', null, 0, null]),
    );
  });

  it('two requests at once cannot both pass it', async () => {
    const c = await stack.tenant('cap-c');
    await c.agent('helper', {});
    expect((await batch(c, 1)).status).toBe(201);
    const statuses = (await Promise.all([batch(c, 3), batch(c, 3)])).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409]);
  });
});
