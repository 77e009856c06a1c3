import { createTokenizer } from '@loopline/llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Where a step's part counts come from (docs/context.md §2, "Counts from the report"): before the
// session's ratio is learned the model's text is tokenized; once it is, the text takes its share of
// the provider's output count divided by the ratio, on a server that counts 1.3× tiktoken.

let stack: Stack;
let client: Client;
const tiktoken = createTokenizer('o200k_base');

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant('counts');
});
afterAll(() => stack?.close());

const REPLY = `Noted. ${'The plan stays on track and the next item follows. '.repeat(12)}`;

async function lastReply(id: string) {
  const log = (await client.history(id)).messages as Array<{ info: { role: string }; parts: any[] }>;
  const reply = log.filter((m) => m.info.role === 'assistant').at(-1)!;
  return {
    text: reply.parts.find((p) => p.type === 'text'),
    usage: reply.parts.find((p) => p.type === 'step-finish').usage,
  };
}

async function ratioOf(id: string) {
  const row = await stack.deps.db
    .selectFrom('sessions')
    .select(['token_ratio', 'token_ratio_weight'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return { ratio: row.token_ratio, weight: row.token_ratio_weight };
}

describe('step token counts', () => {
  it('tokenizes the first reply, then derives the next from the report and the learned ratio', async () => {
    stack.mock.setScenario({ flavour: 'vllm', tokenRatio: 1.3, rules: [], default: { text: REPLY } });
    await client.agent('counted', {
      model: 'compatible/small-gguf',
      server: 'vllm',
      capabilities: { tools: 'none' },
      limits: { context: 32_000, output: 1_000 },
    });
    const id = await client.session('counted');
    expect((await ratioOf(id)).weight ?? 0).toBe(0);

    await client.send(id, 'first');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const first = await lastReply(id);
    // Nothing learned before this step: the tokenizer's count.
    expect(first.text.tokens).toBe(tiktoken.count(first.text.text));

    const learned = await ratioOf(id);
    expect(learned.weight).toBeGreaterThan(0);
    await client.send(id, 'second');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const second = await lastReply(id);
    // The report's output in tiktoken scale, rounded up (the only part it covers).
    const derived = second.usage.output / learned.ratio!;
    expect(second.text.tokens).toBeGreaterThanOrEqual(Math.ceil(derived) - 1);
    expect(second.text.tokens).toBeLessThanOrEqual(Math.ceil(derived) + 1);
    // Scaled back by the same ratio, as the estimate scales it, never below what the server counted.
    expect(second.text.tokens * learned.ratio!).toBeGreaterThanOrEqual(second.usage.output);
  });
});
