import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// The next step of a run keeps its tenant slot without a Redis call (fairness/held-slots.ts,
// docs/decisions.md D36). Observed in Redis itself: taking a slot writes its expiry (Redis time +
// TTL) as the session's score in the tenant's sorted set, and with a 10-minute TTL no renewal
// runs during the test. So the score each model call starts under is the same for every step of
// one run (taken once), and moves forward for the next run (released at its end, taken again).

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          // A call to a tool the agent does not have: its error result makes a second step.
          when: { lastUserIncludes: 'two steps', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'not_a_tool', arguments: {} }] },
        },
      ],
      default: { text: 'done' },
    },
    fairness: { slotTtlMs: 600_000 },
  });
  client = await stack.tenant('slot-kept');
  await client.agent('helper', {});
});
afterAll(() => stack?.close());

describe('the tenant slot between the steps of a run', () => {
  it('is taken once per run, not at every step', async () => {
    const sessionId = await client.session('helper');
    const slots = stack.deps.keys.tenantSlots(client.tenantId);
    const scores: number[] = [];
    stack.deps.racepoint = async (name) => {
      if (name === 'model:before-stream')
        scores.push(Number(await stack.deps.redis.zscore(slots, sessionId)));
    };
    const idle = async () =>
      (await client.call('GET', `/v1/sessions/${sessionId}`)).body.status === 'idle' && scores.length > 0;

    await client.send(sessionId, 'two steps, please');
    await until('the first run idle', idle);
    expect(scores).toHaveLength(2);
    expect(scores[1]).toBe(scores[0]);
    expect(scores[0]).toBeGreaterThan(0);

    await client.send(sessionId, 'two steps, again');
    await until('the second run idle', async () => scores.length === 4 && (await idle()));
    expect(scores[3]).toBe(scores[2]);
    expect(scores[2]).toBeGreaterThan(scores[0]!);
  });
});
