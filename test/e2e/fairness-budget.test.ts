import { readEvents, tokensUsed } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';
import { sleep } from '../support/wait.ts';

// The per-tenant token budget: before each model call the estimate of its prompt
// must fit what is left of the tenant's current window; the provider-reported usage is counted
// after the call. A call that does not fit waits — status queued, "token budget exhausted, resumes
// at …" — and runs in the next window. The window is shortened to 4 s here (a minute in production).

const WINDOW_MS = 4_000;
let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'weather', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
        },
      ],
    },
    fairness: { tokenWindowMs: WINDOW_MS },
  });
  client = await stack.tenant('budgeted');
  await client.tool('lookup', lookupTool(stack.tools.url));
  await client.agent('helper', { tools: ['lookup'] });
  const res = await fetch(`${stack.url}/v1/admin/tenants/${client.tenantId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
    // Less than one call: the first call of a window runs alone, the next waits for a new window.
    body: JSON.stringify({ limits: { tokensPerMinute: 50 } }),
  });
  expect(res.status).toBe(200);
});
afterAll(() => stack?.close());

describe('tenant token budget', () => {
  it('delays the next model call to the next window, says so, then resumes', async () => {
    const calls: number[] = [];
    stack.deps.racepoint = (name) => {
      if (name === 'model:before-stream') calls.push(Date.now());
    };
    const details: { at: number; detail: string }[] = [];
    let sampling = true;
    try {
      const id = await client.session('helper');
      // Start at the beginning of a window, so the tool round trip fits in it.
      await sleep(WINDOW_MS - (Date.now() % WINDOW_MS) + 20); // on purpose: to the next window's start
      const sampler = (async () => {
        while (sampling) {
          const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
          if (s.statusDetail) details.push({ at: Date.now(), detail: s.statusDetail });
          await sleep(25); // the sampler's pace: it records every detail it sees, it waits for none
        }
      })();
      await client.send(id, 'what is the weather in Paris?');
      // After the first call its reported usage is in the window (well over the budget of 50).
      await expect.poll(() => calls.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
      await expect
        .poll(() => tokensUsed(stack.deps.redis, stack.deps.keys, client.tenantId, WINDOW_MS, calls[0]!), {
          timeout: 2_000,
        })
        .toBeGreaterThan(50);
      const done = await client.waitIdle(id, 15_000);
      sampling = false;
      await sampler;
      expect(done.status).toBe('idle');
      expect(calls).toHaveLength(2);

      const waiting = details.find((d) => d.detail.startsWith('token budget exhausted, resumes at '));
      expect(waiting, JSON.stringify(details)).toBeDefined();
      const resumesAt = Date.parse(waiting!.detail.slice('token budget exhausted, resumes at '.length));
      // It resumes at the start of the next window, and not before.
      expect(resumesAt % WINDOW_MS).toBe(0);
      expect(Math.floor(resumesAt / WINDOW_MS)).toBe(Math.floor(calls[0]! / WINDOW_MS) + 1);
      expect(calls[1]!).toBeGreaterThanOrEqual(resumesAt);
      // The same wait was told as a session.status event.
      const events = (await readEvents(stack.deps.redis, stack.deps.keys, id, '0', undefined, 10_000)).map(
        (e) => e.event,
      );
      expect(events).toContainEqual(
        expect.objectContaining({ type: 'session.status', status: 'queued', detail: waiting!.detail }),
      );
      // The conversation is whole: tool call, its result, the final answer.
      const log = await client.history(id);
      expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant', 'assistant']);
      expect(log.messages[2].info.finish).toBe('stop');
    } finally {
      sampling = false;
      stack.deps.racepoint = undefined;
    }
  }, 30_000);
});
