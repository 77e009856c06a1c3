import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// A model reply is bounded in characters (LOOPLINE_MODEL_REPLY_MAX_CHARS): an endpoint that
// streams without end (a tenant's own, or a broken one) is cut there, the turn ends with a terminal
// error and the text streamed so far is kept; no retry. Real Redis, PostgreSQL, the mock model over
// HTTP through the AI SDK; the budget lowered to 20,000 characters for the test.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'flood', lastMessageRole: 'user' },
          reply: { text: 'word '.repeat(10_000), chunks: 100 }, // 50,000 characters in 100 deltas
        },
      ],
      default: { text: 'fine' },
    },
  });
  stack.deps.llm.replyMaxChars = 20_000;
  client = await stack.tenant();
  await client.agent('a', {});
});
afterAll(() => stack?.close());

describe("a model reply's character budget", () => {
  it('cuts a reply past it, keeps what was streamed and ends the turn without a retry', async () => {
    const id = await client.session('a');
    await client.send(id, 'flood');
    const s = await client
      .waitIdle(id, 20_000)
      .catch(async () => (await client.call('GET', `/v1/sessions/${id}`)).body);
    expect(s.status).toBe('error');
    expect(s.error.message).toContain("the model's reply passed 20,000 characters and was cut there");
    expect(s.error.retryable).not.toBe(true);
    expect(stack.mock.calls.length).toBe(1);
    const { messages } = await client.history(id);
    const reply = messages.find((m: any) => m.info.role === 'assistant');
    expect(reply.info.error.message).toContain('20,000 characters');
    const text = reply.parts
      .filter((p: any) => p.type === 'text')
      .map((p: any) => p.text)
      .join('');
    // Everything up to the delta that passed the budget (500 characters a delta).
    expect(text.length).toBe(20_000);
    expect(text).toBe('word '.repeat(4_000));
  });

  it('a reply within it is untouched, and the session goes on', async () => {
    const id = await client.session('a');
    await client.send(id, 'hello');
    expect((await client.waitIdle(id, 20_000)).status).toBe('idle');
  });
});
