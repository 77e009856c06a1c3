// Conformance of the stream and the error classifier with the servers people run, reproduced by
// mock-llm's flavours over real HTTP through the AI SDK: llama.cpp's in-stream refusals (HTTP 200),
// "context shift is disabled" mid-stream, 500 on tools; vLLM's and Ollama's bodies; a server that
// reports no usage; plus the raw shapes the classifier must read (payload objects, finish "error").

import { type MockLlm, type ScenarioInput, startMockLlm } from '@loopline/mock-llm';
import { TypeValidationError } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { classifyError, createModel, type LlmEvent, StepNormaliser, streamStep } from '../src/index.ts';

let mock: MockLlm;
beforeAll(async () => {
  mock = await startMockLlm();
});
afterAll(async () => {
  await mock.close();
});
beforeEach(() => mock.reset());

const lookup = {
  name: 'lookup',
  description: 'Look something up',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
};

async function run(
  scenario: ScenarioInput,
  opts: { tools?: boolean; maxOutputTokens?: number; user?: string } = {},
) {
  mock.setScenario(scenario);
  const out: LlmEvent[] = [];
  for await (const e of streamStep({
    model: createModel('compatible/small-gguf', { baseURL: mock.url }),
    system: ['Be brief.'],
    messages: [{ role: 'user', content: [{ type: 'text', text: opts.user ?? 'hello there' }] }],
    tools: opts.tools ? [lookup] : [],
    ...(opts.maxOutputTokens !== undefined ? { maxOutputTokens: opts.maxOutputTokens } : {}),
  })) {
    out.push(e);
  }
  return out;
}

const errorOf = (events: LlmEvent[]) => {
  const e = events.find((x) => x.type === 'error');
  expect(e, JSON.stringify(events)).toBeDefined();
  return (e as Extract<LlmEvent, { type: 'error' }>).error;
};
const finishOf = (events: LlmEvent[]) =>
  events.find((x) => x.type === 'finish') as Extract<LlmEvent, { type: 'finish' }>;
const long = 'word '.repeat(400);

describe('llama.cpp server flavour', () => {
  it('an over-long prompt refused in the stream (HTTP 200) is an overflow', async () => {
    const events = await run({ flavour: 'llamacpp', nCtx: 100 }, { user: long });
    expect(mock.calls[0]!.status).toBe(200);
    expect(errorOf(events)).toMatchObject({ kind: 'overflow', status: 400 });
  });

  it('"context shift is disabled" after some tokens is an overflow', async () => {
    const events = await run(
      { flavour: 'llamacpp', nCtx: 60, default: { text: long } },
      { user: 'hi', maxOutputTokens: 500 },
    );
    expect(events.some((e) => e.type === 'text-delta')).toBe(true);
    expect(errorOf(events)).toMatchObject({ kind: 'overflow', message: 'context shift is disabled' });
  });

  it('500 "Unsupported param: tools" is terminal at once, with a message naming the cause', async () => {
    const events = await run({ flavour: 'llamacpp', tools: false }, { tools: true });
    const error = errorOf(events);
    expect(error.kind).toBe('terminal');
    expect(error.status).toBe(500);
    expect(error.message).toMatch(/does not support a parameter.*capabilities.*Unsupported param: tools/s);
  });

  it('reports usage on the final chunk, in the server tokens, and says stop when cut by max_tokens', async () => {
    const events = await run(
      { flavour: 'llamacpp', tokenRatio: 1.8, default: { text: long } },
      { maxOutputTokens: 20 },
    );
    const finish = finishOf(events);
    expect(finish.finish).toBe('stop');
    expect(finish.usage.input).toBe(mock.calls[0]!.promptTokens);
    expect(finish.usage.output).toBe(20);
    expect(mock.calls[0]!.promptTokens).toBeGreaterThan(10);
  });
});

describe('vLLM flavour', () => {
  it('a prompt + max_tokens over max_model_len is an overflow (400)', async () => {
    const events = await run({ flavour: 'vllm', nCtx: 200 }, { user: long, maxOutputTokens: 50 });
    expect(errorOf(events)).toMatchObject({ kind: 'overflow', status: 400 });
  });

  it('tools without a tool parser are terminal', async () => {
    const error = errorOf(await run({ flavour: 'vllm', tools: false }, { tools: true }));
    expect(error).toMatchObject({ kind: 'terminal', status: 400 });
    expect(error.message).toContain('--enable-auto-tool-choice');
  });

  it('cuts at max_tokens with finish length and reports usage', async () => {
    const finish = finishOf(await run({ flavour: 'vllm', default: { text: long } }, { maxOutputTokens: 10 }));
    expect(finish).toMatchObject({ finish: 'length', usage: { output: 10 } });
    expect(finish.usage.input).toBeGreaterThan(0);
  });
});

describe('Ollama flavour', () => {
  it('"does not support tools" is terminal', async () => {
    const error = errorOf(await run({ flavour: 'ollama', tools: false }, { tools: true }));
    expect(error).toMatchObject({ kind: 'terminal', status: 400 });
    expect(error.message).toContain('does not support tools');
  });

  it('reports usage, and a too-long prompt silently loses its start (reported prompt ≤ num_ctx)', async () => {
    const finish = finishOf(await run({ flavour: 'ollama', nCtx: 100 }, { user: long }));
    expect(finish.usage.input).toBeLessThanOrEqual(100);
  });
});

describe('a server that reports no usage in the stream', () => {
  it('finishes with zero usage (the worker then estimates unanchored)', async () => {
    const finish = finishOf(await run({ flavour: 'no-usage' }));
    expect(finish.finish).toBe('stop');
    expect(finish.usage.input + finish.usage.output).toBe(0);
  });
});

describe('classifier shapes', () => {
  it('reads in-stream payloads of every shape', () => {
    const llama = new TypeValidationError({
      value: { code: 400, message: 'the request exceeds the available context size, try increasing it' },
      cause: new Error('x'),
    });
    expect(classifyError(llama)).toMatchObject({ kind: 'overflow', status: 400 });
    expect(
      classifyError({ message: 'context shift is disabled', type: 'server_error', code: 500 }).kind,
    ).toBe('overflow');
    // vLLM's flat error object, TGI's string error.
    expect(
      classifyError({
        object: 'error',
        message: 'Input validation error: bad',
        type: 'BadRequestError',
        code: 400,
      }).kind,
    ).toBe('terminal');
    expect(
      classifyError({
        error:
          'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`',
        error_type: 'validation',
      }).kind,
    ).toBe('overflow');
    // LM Studio.
    expect(
      classifyError({
        error: {
          message:
            'Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough.',
        },
      }).kind,
    ).toBe('overflow');
    // An unexplained in-stream error with no status is transient; a 503 too.
    expect(classifyError({ error: { message: 'slot unavailable' } }).kind).toBe('retryable');
    expect(classifyError({ error: { message: 'loading model', code: 503 } }).kind).toBe('retryable');
  });

  it('a stream that ends with finish_reason "error" is a retryable error, not a finish', () => {
    const n = new StepNormaliser();
    const out = n.push({
      type: 'finish',
      finishReason: { unified: 'error', raw: 'error' },
      usage: {
        inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 0, text: 0, reasoning: 0 },
      },
    });
    expect(out).toEqual([{ type: 'error', error: expect.objectContaining({ kind: 'retryable' }) }]);
  });
});
