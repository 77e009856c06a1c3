// streamStep against the mock-llm server over real HTTP, through the real AI SDK transport,
// for both OpenAI endpoints: chat completions (compatible/) and responses (openai/).

import { type MockLlm, type ScenarioInput, startMockLlm } from '@loopline/mock-llm';
import { get_encoding } from 'tiktoken';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createModel,
  type LlmEvent,
  type PromptMessage,
  type StepRequest,
  streamStep,
  type ToolSpec,
} from '../src/index.ts';

const enc = get_encoding('o200k_base');
const count = (s: string) => enc.encode_ordinary(s).length;

const lookup: ToolSpec = {
  name: 'lookup',
  description: 'Look something up',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

let mock: MockLlm;
beforeAll(async () => {
  mock = await startMockLlm();
});
afterAll(async () => {
  await mock.close();
});
beforeEach(() => mock.reset());

async function collect(iter: AsyncIterable<LlmEvent>): Promise<LlmEvent[]> {
  const out: LlmEvent[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

const textOf = (events: LlmEvent[]) => events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('');

function only<T extends LlmEvent['type']>(
  events: LlmEvent[],
  type: T,
): Array<Extract<LlmEvent, { type: T }>> {
  return events.filter((e): e is Extract<LlmEvent, { type: T }> => e.type === type);
}

describe.each([
  { endpoint: 'chat', ref: 'compatible/mock-model' },
  { endpoint: 'responses', ref: 'openai/gpt-4o-mini' },
])('$endpoint endpoint', ({ endpoint, ref }) => {
  const model = () => createModel(ref, { apiKey: 'test-key', baseURL: mock.url });
  const step = (scenario: ScenarioInput, req: Partial<StepRequest> & { user?: string } = {}) => {
    mock.setScenario(scenario);
    const { user, ...rest } = req;
    return collect(
      streamStep({
        model: model(),
        system: ['You are a terse assistant.'],
        messages: [{ role: 'user', content: user ?? 'hello' }],
        tools: [lookup],
        ...rest,
      }),
    );
  };
  const lastError = (events: LlmEvent[]) => {
    const e = events.at(-1);
    expect(e?.type).toBe('error');
    return (e as Extract<LlmEvent, { type: 'error' }>).error;
  };

  it('streams a plain text reply in order, with finish stop and mapped usage', async () => {
    const text = 'The answer is forty-two, as everyone knows.';
    const events = await step({ rules: [{ reply: { text } }] }, { user: 'What is the answer?' });
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('text-start');
    expect(types.at(-2)).toBe('text-end');
    expect(types.filter((t) => t === 'text-delta').length).toBeGreaterThan(3);
    expect(textOf(events)).toBe(text);
    const finish = only(events, 'finish')[0]!;
    expect(finish.finish).toBe('stop');
    expect(finish.modelId).toBeDefined();
    expect(finish.responseId).toBeDefined();
    const call = mock.calls[0]!;
    expect(call.endpoint).toBe(endpoint);
    // The mock counts the request it actually received: system + user + tool schema + markers.
    const floor = count('You are a terse assistant.') + count('What is the answer?');
    expect(finish.usage.input).toBe(call.promptTokens);
    expect(finish.usage.input).toBeGreaterThan(floor);
    expect(finish.usage.input).toBeLessThan(floor + count(JSON.stringify(lookup)) + 60);
    expect(finish.usage).toMatchObject({ output: count(text), reasoning: 0, cache: { read: 0, write: 0 } });
    expect(finish.usage.total).toBe(call.promptTokens + count(text));
  });

  it('maps cache reads/writes and reasoning out of input and output', async () => {
    const events = await step({
      rules: [
        {
          reply: {
            text: 'short answer',
            reasoning: 'let me think about this',
            cachedTokens: 8,
            cacheWriteTokens: 4,
          },
        },
      ],
    });
    const { usage } = only(events, 'finish')[0]!;
    const prompt = mock.calls[0]!.promptTokens;
    expect(usage.cache).toEqual({ read: 8, write: 4 });
    expect(usage.input).toBe(prompt - 12);
    expect(usage.output).toBe(count('short answer'));
    expect(usage.reasoning).toBe(count('let me think about this'));
    expect(usage.total).toBe(prompt + count('short answer') + count('let me think about this'));
    const reasoning = only(events, 'reasoning-delta')
      .map((e) => e.text)
      .join('');
    // Only the Responses API carries reasoning text; chat reports reasoning tokens alone.
    expect(reasoning).toBe(endpoint === 'responses' ? 'let me think about this' : '');
  });

  it('round-trips a tool call', async () => {
    const scenario: ScenarioInput = {
      rules: [
        {
          when: { lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { city: 'Paris' } }] },
        },
        { when: { lastToolName: 'lookup' }, reply: { text: 'It is {{toolResult}} in Paris.' } },
      ],
    };
    const first = await step(scenario, { user: 'Weather in Paris?' });
    const calls = only(first, 'tool-call');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ toolName: 'lookup', input: { city: 'Paris' } });
    expect(only(first, 'finish')[0]!.finish).toBe('tool-calls');

    const { callId } = calls[0]!;
    const messages: PromptMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: callId, toolName: 'lookup', input: { city: 'Paris' } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: callId,
            toolName: 'lookup',
            output: { type: 'text', value: 'sunny' },
          },
        ],
      },
    ];
    const second = await collect(streamStep({ model: model(), system: [], messages, tools: [lookup] }));
    expect(textOf(second)).toBe('It is sunny in Paris.');
    expect(only(second, 'finish')[0]!.finish).toBe('stop');
    const sent = mock.calls[1]!.messages;
    expect(sent.at(-1)).toEqual({ role: 'tool', callId, toolName: 'lookup', text: 'sunny' });
  });

  it('reports malformed tool arguments as tool-call-invalid, not a crash', async () => {
    const events = await step({ rules: [{ reply: { fault: 'malformed-tool-args', name: 'lookup' } }] });
    const [invalid] = only(events, 'tool-call-invalid');
    expect(invalid).toMatchObject({
      toolName: 'lookup',
      reason: 'invalid-input',
      raw: '{"city": "unterminated',
    });
    expect(only(events, 'tool-call')).toHaveLength(0);
    expect(events.at(-1)?.type).toBe('finish');
  });

  it('passes parsed input through without schema validation (the worker validates)', async () => {
    const events = await step({
      rules: [{ reply: { toolCalls: [{ name: 'lookup', arguments: { town: 'Rome' } }] } }],
    });
    expect(only(events, 'tool-call')[0]).toMatchObject({ toolName: 'lookup', input: { town: 'Rome' } });
  });

  it('reports non-object JSON input as tool-call-invalid', async () => {
    const events = await step({
      rules: [{ reply: { toolCalls: [{ name: 'lookup', arguments: '["Rome"]' }] } }],
    });
    expect(only(events, 'tool-call-invalid')[0]).toMatchObject({ reason: 'invalid-input', raw: '["Rome"]' });
  });

  it('reports an unknown tool as tool-call-invalid', async () => {
    const events = await step({ rules: [{ reply: { fault: 'unknown-tool', name: 'rm_rf' } }] });
    expect(only(events, 'tool-call-invalid')[0]).toMatchObject({
      toolName: 'rm_rf',
      reason: 'unknown-tool',
      raw: '{}',
    });
    expect(events.at(-1)?.type).toBe('finish');
  });

  it('classifies 429 as retryable with retry-after', async () => {
    const error = lastError(
      await step({ rules: [{ reply: { fault: 'rate-limit', retryAfterSeconds: 2 } }] }),
    );
    expect(error).toMatchObject({
      kind: 'retryable',
      status: 429,
      retryAfterMs: 2000,
      code: 'rate_limit_exceeded',
    });
    const precise = lastError(
      await step({ rules: [{ reply: { fault: 'rate-limit', retryAfterSeconds: 2, retryAfterMs: 750 } }] }),
    );
    expect(precise.retryAfterMs).toBe(750);
  });

  it('classifies 500 as retryable', async () => {
    expect(lastError(await step({ rules: [{ reply: { fault: 'server-error' } }] }))).toMatchObject({
      kind: 'retryable',
      status: 500,
    });
  });

  it('classifies context_length_exceeded as overflow', async () => {
    expect(lastError(await step({ rules: [{ reply: { fault: 'context-length' } }] }))).toMatchObject({
      kind: 'overflow',
      status: 400,
      code: 'context_length_exceeded',
    });
  });

  it('classifies a prompt over the context window as overflow', async () => {
    const error = lastError(await step({ contextWindow: 300, rules: [] }, { user: 'blah '.repeat(400) }));
    expect(error.kind).toBe('overflow');
    expect(error.message).toContain('maximum context length is 300 tokens');
    expect(mock.calls[0]!.reply).toBe('context-window');
  });

  it('classifies a bare 413 (and a bare 400) as overflow, a 401 as terminal', async () => {
    expect(lastError(await step({ rules: [{ reply: { fault: 'http', status: 413 } }] }))).toMatchObject({
      kind: 'overflow',
      status: 413,
    });
    expect(lastError(await step({ rules: [{ reply: { fault: 'http', status: 400 } }] })).kind).toBe(
      'overflow',
    );
    const body = JSON.stringify({
      error: {
        message: 'Incorrect API key provided',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      },
    });
    expect(
      lastError(
        await step({
          rules: [
            { reply: { fault: 'http', status: 401, body, headers: { 'content-type': 'application/json' } } },
          ],
        }),
      ),
    ).toMatchObject({ kind: 'terminal', status: 401, code: 'invalid_api_key' });
  });

  it('turns a cut stream into a retryable error after the partial output', async () => {
    const events = await step({
      latencyMs: 5,
      rules: [
        {
          reply: {
            fault: 'cut-stream',
            afterChunks: 6,
            text: 'one two three four five six seven eight nine ten',
          },
        },
      ],
    });
    expect(textOf(events).length).toBeGreaterThan(0);
    expect(textOf(events)).not.toBe('one two three four five six seven eight nine ten');
    expect(lastError(events).kind).toBe('retryable');
    expect(only(events, 'finish')).toHaveLength(0);
  });

  it('ends with an aborted error soon after abort: the stream is cut, not read to its end', async () => {
    mock.setScenario({ latencyMs: 50, rules: [{ reply: { text: 'word '.repeat(200) } }] });
    const ac = new AbortController();
    const events: LlmEvent[] = [];
    let deltasAtAbort = 0;
    for await (const e of streamStep({
      model: model(),
      system: [],
      messages: [{ role: 'user', content: 'go' }],
      tools: [],
      abortSignal: ac.signal,
    })) {
      events.push(e);
      if (only(events, 'text-delta').length === 3 && deltasAtAbort === 0) {
        deltasAtAbort = 3;
        ac.abort(new Error('lease lost'));
      }
    }
    expect(lastError(events)).toEqual({ kind: 'aborted', message: 'lease lost' });
    // At most what was already buffered arrives after the abort, not the other ~190 words.
    expect(only(events, 'text-delta').length - deltasAtAbort).toBeLessThan(20);
    expect(only(events, 'finish')).toHaveLength(0);
  });

  it('ends a call past its time budget with a retryable ETIMEDOUT error, after what it streamed', async () => {
    // A server that keeps sending, slowly: no idle timeout ever trips, the budget does.
    const ac = new AbortController();
    const events = await step(
      { latencyMs: 50, rules: [{ reply: { text: 'word '.repeat(400) } }] },
      { abortSignal: ac.signal, timeoutMs: 400 },
    );
    expect(lastError(events)).toEqual({
      kind: 'retryable',
      code: 'ETIMEDOUT',
      message: 'the model call did not finish within 400 ms',
    });
    expect(only(events, 'text-delta').length).toBeGreaterThan(0);
    expect(only(events, 'finish')).toHaveLength(0);
    expect(ac.signal.aborted).toBe(false);
    // The caller's own abort inside the budget is still an abort.
    const mine = new AbortController();
    setTimeout(() => mine.abort(new Error('user abort')), 200);
    const aborted = await step(
      { latencyMs: 50, rules: [{ reply: { text: 'word '.repeat(400) } }] },
      { abortSignal: mine.signal, timeoutMs: 60_000 },
    );
    expect(lastError(aborted)).toEqual({ kind: 'aborted', message: 'user abort' });
  });

  it('returns aborted at once for an already-aborted signal', async () => {
    const ac = new AbortController();
    ac.abort();
    const events = await step({}, { abortSignal: ac.signal });
    expect(events).toHaveLength(1);
    expect(lastError(events).kind).toBe('aborted');
    expect(mock.calls).toHaveLength(0);
  });

  it('sends system blocks in order, the tool schema, and the tool choice', async () => {
    await step({}, { system: ['stable block', '', 'per-message block'], toolChoice: 'none' });
    const call = mock.calls[0]!;
    expect(call.system).toBe('stable block\n\nper-message block');
    expect(call.tools).toEqual([
      { name: 'lookup', description: 'Look something up', parameters: expect.any(Object) },
    ]);
    const body = call.body as Record<string, unknown>;
    expect(body.tool_choice).toBe('none');
    if (endpoint === 'responses') expect(body.store).toBe(false);
    else expect(body.stream_options).toEqual({ include_usage: true });
  });

  it('refuses an output limit below one token as terminal, without a request', async () => {
    const events = await step({}, { maxOutputTokens: 0 });
    expect(lastError(events)).toMatchObject({ kind: 'terminal', code: 'AI_InvalidArgumentError' });
    expect(mock.calls).toHaveLength(0);
  });

  it('never throws when the server is unreachable', async () => {
    const unreachable = createModel(ref, { apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1' });
    const events = await collect(
      streamStep({ model: unreachable, system: [], messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(events).toHaveLength(1);
    expect(lastError(events).kind).toBe('retryable');
  });
});
