import { get_encoding } from 'tiktoken';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockLlm, type ScenarioInput, serialisePrompt, startMockLlm } from '../src/index.ts';

let mock: MockLlm;
const enc = get_encoding('o200k_base');
const count = (s: string) => enc.encode_ordinary(s).length;

beforeAll(async () => {
  mock = await startMockLlm();
});
afterAll(async () => {
  await mock.close();
});
beforeEach(() => mock.reset());

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${mock.url}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const chat = (content: string, extra: Record<string, unknown> = {}) =>
  post('chat/completions', { model: 'mock-model', messages: [{ role: 'user', content }], ...extra });

async function sseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((b) =>
      b
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    );
}

function use(scenario: ScenarioInput) {
  mock.setScenario(scenario);
}

describe('non-streaming', () => {
  it('answers chat completions with usage counted by tiktoken', async () => {
    use({});
    const res = await chat('hello there');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0].message.content).toBe('OK: hello there');
    expect(body.choices[0].finish_reason).toBe('stop');
    const call = mock.calls[0]!;
    expect(body.usage.prompt_tokens).toBe(call.promptTokens);
    expect(call.promptTokens).toBe(
      count(serialisePrompt({ ...call, includeUsage: false, messages: call.messages, tools: [] })),
    );
    expect(body.usage.completion_tokens).toBe(count('OK: hello there'));
  });

  it('answers the responses API with output items and usage details', async () => {
    use({ rules: [{ reply: { text: 'fine', reasoning: 'ponder' } }] });
    const res = await post('responses', { model: 'gpt-x', input: 'hi', instructions: 'Be brief.' });
    const body = await res.json();
    expect(body.object).toBe('response');
    expect(body.output.map((o: { type: string }) => o.type)).toEqual(['reasoning', 'message']);
    expect(body.output[1].content[0].text).toBe('fine');
    expect(body.usage.output_tokens_details.reasoning_tokens).toBe(count('ponder'));
    expect(body.usage.output_tokens).toBe(count('fine') + count('ponder'));
    expect(mock.calls[0]!.system).toBe('Be brief.');
  });

  it('lists models', async () => {
    const res = await fetch(`${mock.url}/models`);
    const body = await res.json();
    expect(body.data.map((m: { id: string }) => m.id)).toContain('mock-model');
  });

  it('rejects a body without model', async () => {
    const res = await post('chat/completions', { messages: [] });
    expect(res.status).toBe(400);
  });
});

describe('streaming wire format', () => {
  it('streams chat chunks, a usage chunk when asked, then [DONE]', async () => {
    use({ rules: [{ reply: { text: 'one two three' } }] });
    const data = await sseData(await chat('x', { stream: true, stream_options: { include_usage: true } }));
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe('one two three');
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1).choices).toEqual([]);
    expect(chunks.at(-1).usage.prompt_tokens).toBe(mock.calls[0]!.promptTokens);
  });

  it('omits the usage chunk without include_usage', async () => {
    use({});
    const data = await sseData(await chat('x', { stream: true }));
    expect(data.some((d) => d.includes('"usage"'))).toBe(false);
  });

  it('streams tool call deltas that reassemble to the arguments', async () => {
    use({
      rules: [{ reply: { toolCalls: [{ name: 'lookup', arguments: { city: 'Paris' }, id: 'call_1' }] } }],
    });
    const data = await sseData(await chat('x', { stream: true }));
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({
      index: 0,
      id: 'call_1',
      type: 'function',
      function: { name: 'lookup' },
    });
    expect(deltas.map((d) => d.function.arguments).join('')).toBe('{"city":"Paris"}');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });

  it('streams responses events in order, ending with response.completed', async () => {
    use({ rules: [{ reply: { text: 'a b', toolCalls: [{ name: 'f', arguments: '{}' }] } }] });
    const res = await post('responses', { model: 'm', input: 'x', stream: true });
    const events = (await sseData(res)).map((d) => JSON.parse(d));
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_text.delta');
    expect(types).toContain('response.function_call_arguments.delta');
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events.at(-1).response;
    expect(completed.usage.input_tokens).toBe(mock.calls[0]!.promptTokens);
    expect(completed.usage.input_tokens_details.cached_tokens).toBe(0);
  });

  it('spaces chunks by latencyMs', async () => {
    use({ latencyMs: 40, rules: [{ reply: { text: 'a b c d', chunks: 4 } }] });
    const t0 = Date.now();
    await sseData(await chat('x', { stream: true }));
    // The feature is a delay, so this is the one timing check kept: a lower bound, which a loaded
    // machine can only make easier to meet (it never flakes the way an upper bound does).
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4 * 40 - 10);
  });
});

describe('rules', () => {
  it('matches on the last user text, role, tool name, system, tool result, call index and model', async () => {
    use({
      rules: [
        { when: { callIndex: 0 }, reply: { text: 'first call' } },
        { when: { model: 'special' }, reply: { text: 'special model' } },
        { when: { system: 'pirate' }, reply: { text: 'arr' } },
        {
          when: { lastMessageRole: 'tool', lastToolName: 'lookup', toolResultIncludes: 'sunny' },
          reply: { text: 'nice' },
        },
        { when: { lastUserMatches: '^wh(at|o)\\b' }, reply: { text: 'question' } },
        { when: { lastUserIncludes: 'hello' }, reply: { echo: true } },
      ],
    });
    const texts: string[] = [];
    const ask = async (body: Record<string, unknown>) => {
      const res = await post('chat/completions', { model: 'mock-model', ...body });
      texts.push((await res.json()).choices[0].message.content);
    };
    await ask({ messages: [{ role: 'user', content: 'anything' }] });
    await ask({ model: 'special', messages: [{ role: 'user', content: 'anything' }] });
    await ask({
      messages: [
        { role: 'system', content: 'talk like a pirate' },
        { role: 'user', content: 'x' },
      ],
    });
    await ask({
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny and warm' },
      ],
    });
    await ask({ messages: [{ role: 'user', content: 'what is this' }] });
    await ask({ messages: [{ role: 'user', content: 'hello echo' }] });
    await ask({ messages: [{ role: 'user', content: 'unmatched' }] });
    expect(texts).toEqual([
      'first call',
      'special model',
      'arr',
      'nice',
      'question',
      'hello echo',
      'OK: unmatched',
    ]);
    expect(mock.calls.map((c) => c.ruleIndex)).toEqual([0, 1, 2, 3, 4, 5, undefined]);
    expect(mock.calls[3]!.messages.at(-1)).toEqual({
      role: 'tool',
      callId: 'c1',
      toolName: 'lookup',
      text: 'sunny and warm',
    });
  });

  it('honours times, and reset() clears counters and calls', async () => {
    use({ rules: [{ when: {}, reply: { text: 'limited' }, times: 2 }], default: { text: 'fallback' } });
    const answer = async () => (await (await chat('x')).json()).choices[0].message.content;
    expect([await answer(), await answer(), await answer()]).toEqual(['limited', 'limited', 'fallback']);
    expect(mock.ruleCounts()).toEqual({ 0: 2 });
    mock.reset();
    expect(mock.calls).toHaveLength(0);
    expect(await answer()).toBe('limited');
  });

  it('defaults to "Done: <tool result>" after a tool result', async () => {
    use({});
    const res = await post('responses', {
      model: 'm',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'go' }] },
        { type: 'function_call', call_id: 'c9', name: 'lookup', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c9', output: 'result text' },
      ],
    });
    const body = await res.json();
    expect(body.output[0].content[0].text).toBe('Done: result text');
    expect(mock.calls[0]!.messages[1]).toEqual({
      role: 'assistant',
      text: '',
      toolCalls: [{ id: 'c9', name: 'lookup', arguments: '{}' }],
    });
  });

  it('interpolates {{lastUser}} and {{toolResult}}', async () => {
    use({ rules: [{ reply: { text: 'You said: {{lastUser}}' } }] });
    const body = await (await chat('ping')).json();
    expect(body.choices[0].message.content).toBe('You said: ping');
  });
});

describe('faults', () => {
  it('answers 429 with retry-after', async () => {
    use({ rules: [{ reply: { fault: 'rate-limit', retryAfterSeconds: 7 } }] });
    const res = await chat('x');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect((await res.json()).error.code).toBe('rate_limit_exceeded');
  });

  it('answers 400 context_length_exceeded when the prompt exceeds contextWindow', async () => {
    use({ contextWindow: 50, rules: [{ reply: { text: 'never' } }] });
    const res = await chat('word '.repeat(100));
    expect(res.status).toBe(400);
    const { error } = await res.json();
    const m = mock.calls[0]!.promptTokens;
    expect(error).toEqual({
      message: `This model's maximum context length is 50 tokens. However, your messages resulted in ${m} tokens. Please reduce the length of the messages or completion.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    });
    expect(mock.calls[0]!.reply).toBe('context-window');
    expect(mock.ruleCounts()).toEqual({});
  });

  it('sends raw HTTP errors, including a bare 413', async () => {
    use({ rules: [{ reply: { fault: 'http', status: 413 } }] });
    const res = await chat('x');
    expect(res.status).toBe(413);
    expect(await res.text()).toBe('');
  });

  it('cuts a non-streaming reply by dropping the connection', async () => {
    use({ rules: [{ reply: { fault: 'cut-stream', afterChunks: 1 } }] });
    await expect(chat('x')).rejects.toThrow();
  });

  it('cuts a stream after N events', async () => {
    use({ rules: [{ reply: { fault: 'cut-stream', afterChunks: 3, text: 'a b c d e f g h' } }] });
    const res = await chat('x', { stream: true });
    await expect(res.text()).rejects.toThrow();
  });
});

describe('hold', () => {
  it('holds the matching request open until released; others pass', async () => {
    use({});
    const held = mock.hold((call) => JSON.stringify(call.messages).includes('wait for me'));
    let answered = false;
    const first = chat('wait for me').then((res) => {
      answered = true;
      return res;
    });
    const call = await held.reached;
    expect(held.isReached).toBe(true);
    expect(call.index).toBe(0);
    // Another request is not held, and is answered while the first is still open.
    const other = await chat('go ahead');
    expect((await other.json()).choices[0].message.content).toBe('OK: go ahead');
    expect(answered).toBe(false);
    held.release();
    const res = await first;
    expect((await res.json()).choices[0].message.content).toBe('OK: wait for me');
    // Used up: the next matching request passes.
    expect((await chat('wait for me')).status).toBe(200);
  });

  it('holds a stream before its first byte; a hold released before it is reached holds nothing', async () => {
    use({});
    const unused = mock.hold();
    unused.release();
    expect((await chat('free')).status).toBe(200);
    expect(unused.isReached).toBe(false);
    const held = mock.hold();
    const pending = chat('streamed', { stream: true });
    await held.reached;
    held.release();
    const data = await sseData(await pending);
    expect(data.at(-1)).toBe('[DONE]');
  });
});

describe('summary and prompt cache', () => {
  it('writes a deterministic summary with the template sections', async () => {
    use({ rules: [{ reply: { summary: true } }] });
    const messages = [
      { role: 'user', content: 'Fix the bug in src/app.ts' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"src/app.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'export const x = 1;' },
      { role: 'assistant', content: 'Found it.' },
      { role: 'user', content: 'What did we do so far?' },
    ];
    const a = (await (await post('chat/completions', { model: 'm', messages })).json()).choices[0].message
      .content;
    const b = (await (await post('chat/completions', { model: 'm', messages })).json()).choices[0].message
      .content;
    expect(a).toBe(b);
    for (const h of [
      '## Goal',
      '## Instructions',
      '## Discoveries',
      '## Accomplished',
      '## Relevant files',
    ]) {
      expect(a).toContain(h);
    }
    expect(a).toContain('Fix the bug in src/app.ts');
    expect(a).toContain('1 tool result(s)');
    expect(a).toContain('- src/app.ts');
  });

  it('reports cached tokens for a shared prefix of at least 1024 tokens', async () => {
    use({});
    const long = 'lorem ipsum dolor sit amet '.repeat(400);
    const first = await (await chat(`${long} first`)).json();
    const second = await (await chat(`${long} second`)).json();
    expect(first.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const cached = second.usage.prompt_tokens_details.cached_tokens;
    expect(cached).toBeGreaterThanOrEqual(1024);
    expect(cached % 128).toBe(0);
    expect(cached).toBeLessThan(second.usage.prompt_tokens);
  });
});
