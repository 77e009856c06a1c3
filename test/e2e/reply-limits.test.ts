import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';

// What one model reply may set off is bounded: the reply is the model's, so possibly a tenant's
// own endpoint's. Tool calls past core's MAX_TOOL_CALLS_PER_REPLY (64) are recorded as errors and
// not run; the model sees why and the turn goes on. Real Redis, PostgreSQL and tool server, the
// mock model over HTTP.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  const calls = Array.from({ length: 70 }, (_, i) => ({ name: 'lookup', arguments: { topic: `t${i}` } }));
  stack = await startStack({
    scenario: {
      rules: [
        { when: { lastUserIncludes: 'fan-out', lastMessageRole: 'user' }, reply: { toolCalls: calls } },
      ],
    },
  });
  client = await stack.tenant();
  await client.tool('lookup', lookupTool(stack.tools.url));
  await client.agent('a', { tools: ['lookup'] });
});
afterAll(() => stack?.close());

describe('tool calls of one reply', () => {
  it('past 64, calls are recorded as errors and not run; the turn goes on', async () => {
    const before = [...stack.tools.calls.values()].reduce((a, b) => a + b, 0);
    const id = await client.session('a');
    await client.send(id, 'please fan-out');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    const parts = (await client.history(id)).messages
      .flatMap((m: any) => m.parts)
      .filter((p: any) => p.type === 'tool');
    expect(parts).toHaveLength(70);
    const done = parts.filter((p: any) => p.state.status === 'completed');
    const refused = parts.filter((p: any) => p.state.status === 'error');
    expect(done).toHaveLength(64);
    expect(refused).toHaveLength(6);
    for (const p of refused)
      expect(p.state.error).toMatch(/^Not run: a reply may make at most 64 tool calls/);
    const after = [...stack.tools.calls.values()].reduce((a, b) => a + b, 0);
    expect(after - before).toBe(64);
    // The model's next request carries all 70 results (pairs intact), the 6 errors among them.
    const last = stack.mock.calls.at(-1)!;
    expect(JSON.stringify(last.messages).match(/a reply may make at most 64 tool calls/g)).toHaveLength(6);
  });
});
