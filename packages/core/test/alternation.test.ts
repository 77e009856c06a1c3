import { describe, expect, it } from 'vitest';
import { alternateRoles, foldSystemIntoUser, shapeForTemplate } from '../src/session/alternation.ts';
import type { ModelMessage } from '../src/session/model-message.ts';
import { classifyProviderError, isUnsupportedText } from '../src/session/provider-error.ts';

const u = (text: string): ModelMessage => ({ role: 'user', content: [{ type: 'text', text }] });
const a = (text: string): ModelMessage => ({ role: 'assistant', content: [{ type: 'text', text }] });
const call: ModelMessage = {
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'x', input: {} }],
};
const result: ModelMessage = {
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'x', output: { type: 'text', value: 'ok' } }],
};

describe('strict role alternation', () => {
  it('merges the synthetic continue text into the user message next to it', () => {
    const out = alternateRoles([u('summary question'), a('summary'), u('new request'), u('Continue if…')]);
    expect(out.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(out[2]!.content).toEqual([
      { type: 'text', text: 'new request' },
      { type: 'text', text: 'Continue if…' },
    ]);
  });

  it('merges assistant runs, never tool results', () => {
    const out = alternateRoles([u('q'), a('thinking'), call, result, result, a('done')]);
    expect(out.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(out[1]!.content).toHaveLength(2);
  });

  it('folds the system text into the first user message when the template has no system role', () => {
    expect(foldSystemIntoUser(['Be brief.', ''], [u('hi')])).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Be brief.' },
          { type: 'text', text: 'hi' },
        ],
      },
    ]);
    expect(foldSystemIntoUser(['S'], [a('x')])[0]!.role).toBe('user');
    const shaped = shapeForTemplate(['S'], [u('a'), u('b')], { strictAlternation: true, systemRole: false });
    expect(shaped.system).toEqual([]);
    expect(shaped.messages).toHaveLength(1);
    expect(shapeForTemplate(['S'], [u('a'), u('b')], {}).messages).toHaveLength(2);
  });
});

describe('provider errors of real servers', () => {
  it.each([
    [
      'llama.cpp',
      400,
      'request (2300 tokens) exceeds the available context size (2048 tokens), try increasing it',
    ],
    ['llama.cpp mid-stream', 500, 'context shift is disabled'],
    ['vLLM', 400, "This model's maximum context length is 2048 tokens. However, you requested 2300 tokens"],
    ['LM Studio', 400, 'the model is loaded with context length of only 4096 tokens, which is not enough'],
    ['TGI', 422, 'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000'],
  ])('%s: overflow', (_server, status, message) => {
    expect(classifyProviderError({ status, message })).toBe('overflow');
  });

  it.each([
    ['proxy', 500, 'Unsupported param: tools'],
    ['Ollama', 400, 'registry.ollama.ai/library/gemma:2b does not support tools'],
    ['vLLM', 400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'],
  ])('%s: an unsupported parameter is terminal whatever the status', (_server, status, message) => {
    expect(isUnsupportedText(message)).toBe(true);
    expect(classifyProviderError({ status, message })).toBe('terminal');
  });

  it('keeps transient classes retryable', () => {
    expect(classifyProviderError({ status: 503, message: 'Loading model' })).toBe('retryable');
    expect(classifyProviderError({ status: 429, message: 'too many tokens in the request per minute' })).toBe(
      'retryable',
    );
  });
});
