import { slotHolders } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Every way a run ends gives the tenant slot back at once (fairness/loop-stopped.ts runStopped,
// called where the run ends, not by the write layer): an error, a wait for a client tool, an
// abort and a plain end. The cap is 1 and a slot's lease lasts 10 minutes, so a slot not given
// back would hold the next session queued far past the test's waits: each step proves the last.

let stack: Stack;
let client: Client;

const holders = () => slotHolders(stack.deps.redis, stack.deps.keys, client.tenantId);

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        { when: { lastUserIncludes: 'explode' }, reply: { fault: 'http', status: 400, body: 'bad request' } },
        {
          when: { lastUserIncludes: 'choose', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'pick', arguments: { q: 'file' } }] },
        },
        {
          when: { lastUserIncludes: 'slowly' },
          reply: { text: 'a slow answer', chunks: 200 },
          latencyMs: 50,
        },
      ],
      default: { text: 'done' },
    },
    fairness: { slotRetryMs: 100, slotTtlMs: 600_000 },
  });
  client = await stack.tenant('run-end');
  const res = await fetch(`${stack.url}/v1/admin/tenants/${client.tenantId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ limits: { maxConcurrentSessions: 1 } }),
  });
  expect(res.status).toBe(200);
  await client.tool('pick', {
    kind: 'client',
    description: 'Ask the user',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  });
  await client.agent('helper', { tools: ['pick'] });
});
afterAll(() => stack?.close());

const statusOf = async (id: string) => (await client.call('GET', `/v1/sessions/${id}`)).body.status;

describe('the tenant slot at the end of a run', () => {
  it('is given back on error, on a wait for a client tool, on abort and on idle', async () => {
    const failed = await client.session('helper');
    await client.send(failed, 'explode now');
    await until('error', async () => (await statusOf(failed)) === 'error');
    await until('the slot back after the error', async () => (await holders()).length === 0);

    const waiting = await client.session('helper');
    await client.send(waiting, 'please choose');
    await until('waiting', async () => (await statusOf(waiting)) === 'waiting');
    await until('the slot back during the wait', async () => (await holders()).length === 0);

    const aborted = await client.session('helper');
    await client.send(aborted, 'answer slowly');
    await until('the slot taken by the running session', async () => (await holders()).includes(aborted));
    expect((await client.call('POST', `/v1/sessions/${aborted}/abort`)).status).toBe(202);
    expect((await client.waitIdle(aborted)).status).toBe('idle');
    await until('the slot back after the abort', async () => (await holders()).length === 0);

    const plain = await client.session('helper');
    await client.send(plain, 'hello');
    expect((await client.waitIdle(plain)).status).toBe('idle');
    await until('the slot back after idle', async () => (await holders()).length === 0);
  }, 60_000);
});
