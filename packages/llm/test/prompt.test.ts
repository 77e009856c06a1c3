// The provider-level request (prompt.ts) against the AI SDK's own conversion, which streamText ran
// before every call: the same system messages, user/assistant/tool content, file parts and tool
// definitions, for every shape core's model messages take. And the normaliser's tool-call parsing
// and stream-error payloads, which streamText used to do.

import { APICallError, JSONParseError } from '@ai-sdk/provider';
import {
  InvalidToolInputError,
  jsonSchema,
  NoSuchToolError,
  RetryError,
  StreamProviderError as SdkStreamProviderError,
  tool,
} from 'ai';
import { convertToLanguageModelPrompt, prepareTools } from 'ai/internal';
import { describe, expect, it } from 'vitest';
import {
  classifyError,
  type LlmEvent,
  MODEL_REPLY_MAX_CHARS,
  normaliseStreamError,
  type PromptMemo,
  type PromptMessage,
  REPLY_TOO_LARGE,
  StepNormaliser,
  type StreamPart,
  type ToolSpec,
  toProviderPrompt,
  toProviderTools,
} from '../src/index.ts';
import { invalidToolInputMessage, StreamProviderError } from '../src/sdk-errors.ts';

const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
const pdf = new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d, 0x31]);

const conversation: PromptMessage[] = [
  {
    role: 'user',
    content: [
      { type: 'text', text: 'look at these' },
      { type: 'text', text: '' },
      // Declared as JPEG, bytes are PNG: the bytes win, as in the SDK.
      { type: 'file', data: png, mediaType: 'image/jpeg' },
      { type: 'file', data: pdf, mediaType: 'application/pdf', filename: 'a.pdf' },
      { type: 'file', data: 'data:text/plain;base64,aGVsbG8=', mediaType: 'application/octet-stream' },
      { type: 'file', data: Buffer.from(png).toString('base64'), mediaType: 'image/webp' },
    ],
  },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'thinking' },
      { type: 'text', text: '' },
      { type: 'text', text: 'Looking.' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: { city: 'Rome' } },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'lookup', input: {} },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'text', value: 'sunny' } },
    ],
  },
  {
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: 'c2',
        toolName: 'lookup',
        output: { type: 'error-text', value: 'nope' },
      },
    ],
  },
  { role: 'assistant', content: 'It is sunny.' },
  { role: 'user', content: 'thanks' },
];

/** What streamText sent: its `instructions` (one system message per non-empty block), converted by the SDK. */
async function sdkPrompt(system: string[], messages: PromptMessage[]) {
  const kept = system.filter((b) => b.trim() !== '');
  const instructions =
    kept.length === 0
      ? undefined
      : kept.length === 1
        ? kept[0]
        : kept.map((content) => ({ role: 'system' as const, content }));
  return convertToLanguageModelPrompt({
    prompt: { instructions, messages: messages as never },
    supportedUrls: {},
    download: undefined,
  });
}

describe('provider prompt', () => {
  it('is what the AI SDK converts the same messages to', async () => {
    for (const system of [[], ['stable'], ['stable', '', 'per message'], ['  ']]) {
      expect(toProviderPrompt(system, conversation)).toEqual(await sdkPrompt(system, conversation));
    }
  });

  it('with a memo: the same prompt, unchanged messages not converted again nor changed', async () => {
    const memo: { prompt?: PromptMemo } = {};
    const first = toProviderPrompt(['s'], conversation, memo);
    expect(first).toEqual(await sdkPrompt(['s'], conversation));
    const snapshot = structuredClone(first);
    // The next call sends the same objects and one more message; the two tool messages are again one.
    const next = [...conversation, { role: 'assistant' as const, content: 'bye' }];
    const second = toProviderPrompt(['s'], next, memo);
    expect(second).toEqual(await sdkPrompt(['s'], next));
    expect(second[1]).toBe(first[1]);
    // Merging the tool messages made a new message: the kept ones are as they were.
    expect(toProviderPrompt(['s'], conversation, memo)).toEqual(snapshot);
    expect(memo.prompt?.converted[2]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'lookup',
          output: { type: 'text', value: 'sunny' },
        },
      ],
    });
    // Another message in a kept place is converted, not taken from the memo.
    const changed = [conversation[0]!, { role: 'user' as const, content: 'other' }, ...conversation.slice(2)];
    expect(toProviderPrompt(['s'], changed, memo)).toEqual(await sdkPrompt(['s'], changed));
  });

  it('keeps the image type the bytes name and splits a data URL', () => {
    const [, user] = toProviderPrompt(['s'], conversation);
    if (user?.role !== 'user') throw new Error('expected the user message second');
    const files = user.content.flatMap((p) => (p.type === 'file' ? [p] : []));
    expect(files.map((f) => f.mediaType)).toEqual([
      'image/png',
      'application/pdf',
      'text/plain',
      'image/png',
    ]);
    expect(files[2]?.data).toEqual({ type: 'data', data: 'aGVsbG8=' });
    expect(files[1]).toMatchObject({ filename: 'a.pdf' });
  });

  it('declares tools as the SDK prepared them', async () => {
    const specs: ToolSpec[] = [
      {
        name: 'lookup',
        description: 'Look it up',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
      },
      { name: 'bare', inputSchema: { type: 'object' } },
    ];
    const set = Object.fromEntries(
      specs.map((t) => [
        t.name,
        tool({
          description: t.description,
          inputSchema: jsonSchema<Record<string, unknown>>(t.inputSchema as never),
        }),
      ]),
    );
    expect(toProviderTools(specs)).toEqual(await prepareTools({ tools: set }));
    expect(toProviderTools([])).toBeUndefined();
  });
});

const call = (toolName: string, input: string): StreamPart => ({
  type: 'tool-call',
  toolCallId: `id-${toolName}`,
  toolName,
  input,
});

describe('tool calls from the stream', () => {
  const push = (part: StreamPart, tools = ['lookup']): LlmEvent[] =>
    new StepNormaliser(undefined, tools).push(part);

  it('parses the arguments; an empty string is no arguments', () => {
    expect(push(call('lookup', '{"city":"Rome"}'))).toEqual([
      { type: 'tool-call', callId: 'id-lookup', toolName: 'lookup', input: { city: 'Rome' } },
    ]);
    expect(push(call('lookup', ' '))).toMatchObject([{ type: 'tool-call', input: {} }]);
  });

  it('reports unknown tools with the SDK error text', () => {
    const [ev] = push(call('rm_rf', '{}'));
    expect(ev).toMatchObject({ type: 'tool-call-invalid', reason: 'unknown-tool', raw: '{}' });
    expect(ev?.type === 'tool-call-invalid' && ev.error).toBe(
      new NoSuchToolError({ toolName: 'rm_rf', availableTools: ['lookup'] }).message,
    );
    expect(push(call('rm_rf', '{}'), [])).toMatchObject([
      { error: expect.stringContaining('No tools are available') },
    ]);
  });

  it('reports unparsable, non-object and prototype-polluting arguments as invalid input', () => {
    const [bad] = push(call('lookup', '{"city": "Ro'));
    expect(bad).toMatchObject({ type: 'tool-call-invalid', reason: 'invalid-input', raw: '{"city": "Ro' });
    expect(bad?.type === 'tool-call-invalid' && bad.error).toMatch(
      /^Invalid input for tool lookup: .*JSON parsing failed/,
    );
    expect(push(call('lookup', '[1]'))).toMatchObject([{ reason: 'invalid-input', raw: '[1]' }]);
    expect(push(call('lookup', '{"a":{"__proto__":{"x":1}}}'))).toMatchObject([{ reason: 'invalid-input' }]);
    expect(push(call('lookup', '{"constructor":{"prototype":{}}}'))).toMatchObject([
      { reason: 'invalid-input' },
    ]);
    expect(push(call('lookup', '{"constructor":"fine"}'))).toMatchObject([{ type: 'tool-call' }]);
  });
});

describe('text PostgreSQL cannot store, from the stream', () => {
  const R = '\uFFFD';
  const delta = (text: string, id = 't1'): StreamPart => ({ type: 'text-delta', id, delta: text });
  const texts = (events: LlmEvent[]) =>
    events.flatMap((e) => (e.type === 'text-delta' ? [e.text] : [])).join('');

  it('a NUL and an unpaired surrogate in a delta become U+FFFD', () => {
    const n = new StepNormaliser();
    expect(texts(n.push(delta('a\u0000b\udc00c')))).toBe(`a${R}b${R}c`);
  });

  it('a pair split across two deltas stays a pair; a half left at the end of the block is replaced', () => {
    const n = new StepNormaliser();
    const first = n.push(delta('smile \ud83d'));
    expect(texts(first)).toBe('smile ');
    expect(texts(n.push(delta('\ude00!')))).toBe('\ud83d\ude00!');
    expect(texts(n.push(delta('\ud83d')))).toBe('');
    const end = n.push({ type: 'text-end', id: 't1' });
    expect(end).toEqual([
      { type: 'text-delta', id: 't1', text: R },
      { type: 'text-end', id: 't1' },
    ]);
    // A block whose only delta is a lone half still opens, at its end.
    const m = new StepNormaliser();
    expect(m.push(delta('\ud800', 't2'))).toEqual([]);
    expect(m.push({ type: 'text-end', id: 't2' })).toEqual([
      { type: 'text-start', id: 't2' },
      { type: 'text-delta', id: 't2', text: R },
      { type: 'text-end', id: 't2' },
    ]);
  });

  it("a tool call's arguments, name and id are made storable", () => {
    const [ev] = new StepNormaliser(undefined, ['lookup']).push(call('lookup', '{"city":"Ro\\u0000me"}'));
    expect(ev).toMatchObject({ type: 'tool-call', input: { city: `Ro${R}me` } });
    const [unknown] = new StepNormaliser(undefined, ['lookup']).push({
      type: 'tool-call',
      toolCallId: 'id\u0000',
      toolName: 'x\ud800',
      input: '{}',
    });
    expect(unknown).toMatchObject({ type: 'tool-call-invalid', callId: `id${R}`, toolName: `x${R}` });
  });
});

describe('stream error payloads', () => {
  it('become provider errors with a status, as streamText made them', () => {
    expect(classifyError(normaliseStreamError({ message: 'Overloaded' }))).toMatchObject({
      kind: 'retryable',
      status: 503,
    });
    expect(
      classifyError(
        normaliseStreamError({ type: 'error', error: { message: 'slow down', status: 429, code: 'rate' } }),
      ),
    ).toMatchObject({ kind: 'retryable', status: 429, code: 'rate' });
    expect(
      classifyError(
        normaliseStreamError({
          response: {
            error: {
              message: "This model's maximum context length is 10 tokens",
              code: 'context_length_exceeded',
            },
          },
        }),
      ),
    ).toMatchObject({ kind: 'overflow', code: 'context_length_exceeded' });
    const plain = new Error('terminated');
    expect(normaliseStreamError(plain)).toBe(plain);
    expect(normaliseStreamError('text')).toBe('text');
  });
});

// packages/llm/src/sdk-errors.ts stands in for the `ai` package's errors in the services: the same
// names, markers and messages, checked here against the package itself.
describe('the errors of the `ai` package, without it', () => {
  it('a stream provider error is of the SDK kind, both ways', () => {
    const ours = normaliseStreamError({ message: 'slow down', status: 429 });
    expect(ours).toBeInstanceOf(StreamProviderError);
    expect(SdkStreamProviderError.isInstance(ours)).toBe(true);
    expect(ours).toMatchObject({ name: 'AI_StreamProviderError', statusCode: 429, isRetryable: true });
    const theirs = new SdkStreamProviderError({ message: 'overloaded', statusCode: 503 });
    expect(StreamProviderError.isInstance(theirs)).toBe(true);
    expect(normaliseStreamError(theirs)).toBe(theirs);
    expect(classifyError(theirs)).toMatchObject({ kind: 'retryable', status: 503 });
  });

  it('a RetryError (from generateText or streamText) is classified by its last error', () => {
    const last = new APICallError({
      message: 'Bad Request',
      url: 'http://model/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 400,
      responseBody: '{"error":{"message":"bad","code":"invalid_request_error"}}',
    });
    const retried = new RetryError({
      message: 'failed after 3 attempts',
      reason: 'maxRetriesExceeded',
      errors: [last],
    });
    expect(classifyError(retried)).toEqual(classifyError(last));
    expect(classifyError(retried)).toMatchObject({ kind: 'terminal', status: 400 });
  });

  it('an invalid tool input says what the SDK said', () => {
    const cause = new JSONParseError({ text: '{"city": "Ro', cause: new SyntaxError('Unterminated string') });
    expect(invalidToolInputMessage('lookup', cause)).toBe(
      new InvalidToolInputError({ toolName: 'lookup', toolInput: '{"city": "Ro', cause }).message,
    );
  });
});

describe("a reply's character budget", () => {
  const delta = (type: 'text-delta' | 'reasoning-delta', text: string): StreamPart => ({
    type,
    id: 'b1',
    delta: text,
  });

  it('counts text, reasoning and tool arguments together and ends the reply past it, once', () => {
    const n = new StepNormaliser(undefined, ['lookup'], 100);
    expect(n.push(delta('text-delta', 'a'.repeat(40)))).toMatchObject([
      { type: 'text-start' },
      { type: 'text-delta' },
    ]);
    n.push(delta('reasoning-delta', 'r'.repeat(30)));
    // Arguments streamed as deltas count there, not again with the call.
    n.push({ type: 'tool-input-delta', id: 'c1', delta: '{"q":"' });
    expect(
      n.push({ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"q":"x"}' }),
    ).toMatchObject([{ type: 'tool-call' }]);
    expect(n.streamed).toBe(76);
    // Arguments that came whole count with the call.
    expect(
      n.push({ type: 'tool-call', toolCallId: 'c2', toolName: 'lookup', input: '{"q":"y"}' }),
    ).toMatchObject([{ type: 'tool-call' }]);
    expect(n.streamed).toBe(85);
    expect(n.push(delta('text-delta', 'b'.repeat(15)))).toMatchObject([{ type: 'text-delta' }]);
    const over = n.push(delta('text-delta', 'c'));
    expect(over).toEqual([
      {
        type: 'error',
        error: {
          kind: 'terminal',
          code: REPLY_TOO_LARGE,
          message: "the model's reply passed 100 characters and was cut there",
        },
      },
    ]);
    expect(n.ended).toBe(true);
    expect(n.push(delta('text-delta', 'd'))).toEqual([]);
  });

  it('is MODEL_REPLY_MAX_CHARS unless the caller says otherwise', () => {
    const n = new StepNormaliser();
    n.push(delta('text-delta', 'a'.repeat(MODEL_REPLY_MAX_CHARS)));
    expect(n.ended).toBe(false);
    expect(n.push(delta('text-delta', 'a'))).toMatchObject([
      { type: 'error', error: { code: REPLY_TOO_LARGE } },
    ]);
  });
});
