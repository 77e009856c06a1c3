import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { compactions, summaryRule } from './context-fixtures.ts';

// The servers people run, as mock-llm's flavours reproduce them (llama.cpp's llama-server, vLLM,
// Ollama's OpenAI endpoint, a server that reports no usage), each with a tokenizer that counts
// more than tiktoken and a hard context size equal to the window the agent declares. A compacting
// multi-turn session runs against each: every turn finishes, no request is refused for length
// (prompt + max_tokens always inside n_ctx), no retry storm. Plus: a model without tools, and a
// server that refuses tools (terminal at once, never retried).

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant('servers');
});
afterAll(() => stack?.close());

const N_CTX = 2_048;
const OUTPUT = 256;
const REPLY = `Noted. ${'The plan stays on track and the next item follows. '.repeat(12)}`;
const paragraph = (i: number) =>
  `Turn ${i}: ${'Here is more background about the migration project, its owners and deadlines. '.repeat(18)}`;

const FLAVOURS = [
  { flavour: 'llamacpp', tokenRatio: 1.8, server: 'llamacpp', model: 'compatible/small-gguf' },
  { flavour: 'vllm', tokenRatio: 1.3, server: 'vllm', model: 'compatible/small-gguf' },
  { flavour: 'ollama', tokenRatio: 1.5, server: 'ollama', model: 'compatible/small-gguf' },
  { flavour: 'no-usage', tokenRatio: 2.0, server: 'generic', model: 'compatible/small-gguf' },
  // A strict-alternation template (Mistral id): never two user or two assistant messages in a row.
  { flavour: 'vllm', tokenRatio: 1.1, server: 'vllm', model: 'compatible/mistral-7b-instruct' },
] as const;

describe.each(FLAVOURS)('a compacting session on $flavour, $model (ratio $tokenRatio, n_ctx 2048)', (f) => {
  it('finishes every turn with every request inside n_ctx and no retries', async () => {
    stack.mock.reset();
    stack.mock.setScenario({
      flavour: f.flavour,
      tokenRatio: f.tokenRatio,
      nCtx: N_CTX,
      rules: [summaryRule],
      default: { text: REPLY },
    });
    const agent = `chat-${f.flavour}-${f.model.replace(/\W/g, '-')}`;
    await client.agent(agent, {
      model: f.model,
      server: f.server,
      capabilities: { tools: 'none', ...(f.flavour === 'no-usage' ? { usageInStream: false } : {}) },
      limits: { context: N_CTX, output: OUTPUT },
    });
    const id = await client.session(agent);
    const turns = 8;
    for (let i = 1; i <= turns; i++) {
      await client.send(id, paragraph(i));
      const s = await client.waitIdle(id, 60_000);
      expect(s.status, `turn ${i}: ${JSON.stringify(s.error)}`).toBe('idle');
    }
    const calls = stack.mock.calls;
    if (process.env.DEBUG_CONFORMANCE)
      for (const c of calls)
        console.info(
          f.flavour,
          c.index,
          c.reply,
          c.promptTokens,
          (c.body as { max_tokens?: number }).max_tokens,
          c.messages.map((m) => `${m.role}:${m.text.length}`).join(' '),
        );
    // No request refused for length or anything else, and none over the window with its output.
    expect(calls.filter((c) => c.refused || c.status !== 200)).toEqual([]);
    for (const c of calls) {
      const max =
        (c.body as { max_tokens?: number; max_completion_tokens?: number }).max_completion_tokens ??
        (c.body as { max_tokens?: number }).max_tokens;
      expect(max, 'every request sets max_tokens').toBeDefined();
      expect(c.promptTokens + max!, `call ${c.index} (${c.reply})`).toBeLessThanOrEqual(N_CTX);
      if (f.model.includes('mistral')) {
        const roles = c.messages.map((m) => m.role);
        const repeats = roles.filter((r, i) => i > 0 && r !== 'tool' && r === roles[i - 1]);
        expect(repeats, `call ${c.index}: ${roles.join(' ')}`).toEqual([]);
      }
      // tools "none": neither tools nor tool_choice on the wire.
      expect(c.tools).toEqual([]);
      expect((c.body as Record<string, unknown>).tool_choice).toBeUndefined();
    }
    // No retry storm: every call is a step or a summary of this session, one per step at most.
    const summaries = calls.filter((c) => c.reply === 'summary').length;
    const rows = await compactions(stack, id);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.status === 'completed')).toBe(true);
    expect(calls.length - summaries).toBeLessThanOrEqual(turns + rows.length);

    // The estimate beside the report, per step (GET …/context): learned ratio, measured error.
    const ctx = (await client.call('GET', `/v1/sessions/${id}/context`)).body;
    const steps = ctx.estimates as Array<{
      anchored: boolean;
      errorPercent: number | null;
      reported: number | null;
    }>;
    expect(steps.length).toBe(calls.length - summaries);
    if (f.flavour === 'no-usage') {
      // Nothing reported: every estimate is unanchored and nothing is learned (the prior's margin stays).
      expect(steps.every((s) => !s.anchored && !s.reported)).toBe(true);
      expect(ctx.ratio.learned).toBe(false);
    } else {
      expect(ctx.ratio.learned).toBe(true);
      expect(ctx.ratio.value).toBeCloseTo(f.tokenRatio, 0);
      const errors = steps.slice(1).map((s) => Math.abs(s.errorPercent ?? 100));
      errors.sort((a, b) => a - b);
      const p90 = errors[Math.floor(errors.length * 0.9)] ?? 0;
      console.info(`${f.flavour}: estimate error after the first step, p90 ${p90} % (${errors.join(', ')})`);
      expect(p90).toBeLessThanOrEqual(3);
    }
  });
});

describe('the first request of a known family', () => {
  it.each([
    { model: 'compatible/meta-llama-3.1-8b-instruct', tokenRatio: 1.05 },
    { model: 'compatible/qwen2.5-7b-instruct', tokenRatio: 1.1 },
    { model: 'compatible/unknown-7b', tokenRatio: 1.1, tokenizer: 'qwen' as const },
  ])('$model: estimated within 3 % before any report', async ({ model, tokenRatio, tokenizer }) => {
    stack.mock.reset();
    stack.mock.setScenario({ flavour: 'vllm', tokenRatio, default: { text: 'ok' } });
    const agent = `first-${model.replace(/\W/g, '-')}`;
    await client.agent(agent, {
      model,
      server: 'vllm',
      system: 'You are a careful assistant for a migration project.',
      capabilities: { tools: 'none' },
      ...(tokenizer ? { tokenizer } : {}),
    });
    const id = await client.session(agent);
    await client.send(id, paragraph(1));
    expect((await client.waitIdle(id)).status).toBe('idle');
    const ctx = (await client.call('GET', `/v1/sessions/${id}/context`)).body;
    const first = ctx.estimates[0];
    expect(first.anchored).toBe(false);
    expect(Math.abs(first.errorPercent)).toBeLessThanOrEqual(3);
  });
});

describe('models and servers without tools', () => {
  it('a server that refuses tools ends the turn at once with a clear error (no retries)', async () => {
    stack.mock.reset();
    stack.mock.setScenario({ flavour: 'llamacpp', tools: false, default: { text: 'hi' } });
    await client.tool('lookup', {
      kind: 'webhook',
      description: 'Look up',
      url: 'https://tools.example.com/lookup',
      inputSchema: { type: 'object', properties: {} },
    });
    await client.agent('with-tools', {
      model: 'compatible/small-gguf',
      server: 'llamacpp',
      tools: ['lookup'],
    });
    const id = await client.session('with-tools');
    await client.send(id, 'hello');
    const s = await client.waitIdle(id, 20_000);
    expect(s.status).toBe('error');
    expect(JSON.stringify(s.error)).toMatch(/Unsupported param: tools/);
    expect(JSON.stringify(s.error)).toMatch(/capabilities/);
    expect(stack.mock.calls).toHaveLength(1);
  });

  it('read_output is offered only when the view holds a truncated output', async () => {
    stack.mock.reset();
    stack.mock.setScenario({ default: { text: 'fine' } });
    await client.agent('plain-tools', { tools: ['lookup'] });
    const id = await client.session('plain-tools');
    await client.send(id, 'hello');
    await client.waitIdle(id);
    const names = stack.mock.calls[0]!.tools.map((t) => t.name);
    expect(names).toEqual(['lookup']);
  });
});
