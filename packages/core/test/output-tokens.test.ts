import { describe, expect, it } from 'vitest';
import type { Part, ReasoningPart, TextPart, ToolPart } from '../src/schema/part.ts';
import { emptyUsage, type Usage } from '../src/schema/usage.ts';
import {
  countToolResult,
  DERIVE_MAX_SHARE,
  DERIVE_MIN_SHARE,
  deriveOutputTokens,
  modelOutputText,
  withOutputTokens,
} from '../src/session/output-tokens.ts';
import { countPart, estimateTokens, type Tokenizer } from '../src/session/tokens.ts';

// One token per four characters, counting its calls: the tests check what is tokenized.
function counter(): Tokenizer & { calls: string[] } {
  const calls: string[] = [];
  const count = (t: string) => {
    calls.push(t);
    return Math.ceil(t.length / 4);
  };
  return { name: 'quarter', calls, count };
}

const base = { sessionId: 'ses_t', messageId: 'msg_t', tokens: 0 };
const text = (t: string, extra: Partial<TextPart> = {}): TextPart => ({
  ...base,
  id: 'prt_x',
  type: 'text',
  text: t,
  ...extra,
});
const reasoning = (t: string): ReasoningPart => ({ ...base, id: 'prt_r', type: 'reasoning', text: t });
const call = (input: Record<string, unknown>): ToolPart => ({
  ...base,
  id: 'prt_c',
  type: 'tool',
  callId: 'call_1',
  tool: 'read_output',
  state: { status: 'pending', input },
});
const usage = (output: number): Usage => ({ ...emptyUsage(), output, total: output });
const learned = { ratio: 1.25, weight: 5_000 };

describe('modelOutputText', () => {
  it('is the text of a text part and the name and JSON arguments of a tool call', () => {
    expect(modelOutputText(text('hello'))).toBe('hello');
    expect(modelOutputText(call({ a: 1 }))).toBe('read_output{"a":1}');
  });

  it('leaves out ignored text, reasoning and parts the model did not write', () => {
    expect(modelOutputText(text('x', { ignored: true }))).toBeUndefined();
    expect(modelOutputText(reasoning('thinking'))).toBeUndefined();
    const start: Part = { ...base, id: 'prt_s', type: 'step-start' };
    expect(modelOutputText(start)).toBeUndefined();
  });
});

describe('deriveOutputTokens', () => {
  const reply = 'a'.repeat(400); // estimate 100

  it('divides the report by the learned ratio and shares it by length, rounding up', () => {
    const tool = call({ outputId: 'out_1' }); // 'read_output{"outputId":"out_1"}' = 31 chars
    const parts: Part[] = [text(reply), reasoning('ignored here'), tool];
    const derived = deriveOutputTokens(parts, usage(150), learned)!;
    // 150 / 1.25 = 120 tiktoken tokens over 431 characters.
    expect(derived[0]).toBe(Math.ceil((120 * 400) / 431));
    expect(derived[1]).toBeUndefined();
    expect(derived[2]).toBe(Math.ceil((120 * 31) / 431));
    // Never below the report once scaled back: the shares add up to at least the total.
    expect((derived[0]! + derived[2]!) * learned.ratio).toBeGreaterThanOrEqual(150);
  });

  it('gives an empty text part nothing', () => {
    expect(deriveOutputTokens([text(reply), text('')], usage(125), learned)).toEqual([100, 0]);
  });

  it('tokenizes instead before the ratio is learned or without an output count', () => {
    expect(deriveOutputTokens([text(reply)], usage(125), { ratio: 1.25, weight: 0 })).toBeUndefined();
    expect(deriveOutputTokens([text(reply)], usage(125), { ratio: 0, weight: 10 })).toBeUndefined();
    expect(deriveOutputTokens([text(reply)], usage(0), learned)).toBeUndefined();
    expect(deriveOutputTokens([text(reply)], undefined, learned)).toBeUndefined();
  });

  it('tokenizes instead when no part is model output', () => {
    expect(deriveOutputTokens([reasoning('r')], usage(10), learned)).toBeUndefined();
    expect(deriveOutputTokens([text('')], usage(10), learned)).toBeUndefined();
  });

  it('tokenizes instead when the report is implausible against the cheap estimate', () => {
    // The estimate of the reply is 100 tokens: a report of 40 (→ 32) is too small to trust, one
    // that folds hidden reasoning in (→ 400) too large.
    const estimate = estimateTokens(reply);
    const at = (tokens: number) => deriveOutputTokens([text(reply)], usage(tokens * learned.ratio), learned);
    expect(at(estimate * DERIVE_MIN_SHARE - 1)).toBeUndefined();
    expect(at(estimate * DERIVE_MIN_SHARE)).toEqual([50]);
    expect(at(estimate * DERIVE_MAX_SHARE)).toEqual([300]);
    expect(at(estimate * DERIVE_MAX_SHARE + 1)).toBeUndefined();
  });
});

describe('withOutputTokens', () => {
  it('sets a text part to its share without tokenizing it', () => {
    const tk = counter();
    expect(withOutputTokens(text(reasonable()), 42, tk).tokens).toBe(42);
    expect(tk.calls).toEqual([]);
  });

  it('gives a tool call its input share plus its result as it stands', () => {
    const tk = counter();
    const pending = withOutputTokens(call({ outputId: 'out_1' }), 8, tk);
    const counted = countPart(call({ outputId: 'out_1' }), counter());
    expect(pending.outputTokens).toBe(counted.outputTokens);
    expect(pending.tokens).toBe(8 + counted.outputTokens!);
    // Only the placeholder result was tokenized, not the input.
    expect(tk.calls).toHaveLength(1);
    // The placeholder is the same for every call not run yet: counted once per tokenizer.
    withOutputTokens(call({ other: true }), 3, tk);
    expect(tk.calls).toHaveLength(1);
  });

  it("counts an invalid call's error as its result", () => {
    const tk = counter();
    const invalid: ToolPart = {
      ...call({}),
      state: { status: 'error', input: {}, error: 'x'.repeat(40), time: { start: 1, end: 1 } },
    };
    const part = withOutputTokens(invalid, 2, tk);
    expect(part.outputTokens).toBe(10);
    expect(part.tokens).toBe(12);
  });
});

describe('countToolResult', () => {
  const input = { outputId: 'out_1', offset: 0 };
  const stored = countPart(call(input), counter());
  const done = (inp: Record<string, unknown>, output: string): ToolPart => ({
    ...stored,
    state: { status: 'completed', input: inp, output, title: '', metadata: {}, time: { start: 1, end: 2 } },
  });

  it('counts only the result when the input is the one the call stored', () => {
    const tk = counter();
    const result = countToolResult(done(input, 'x'.repeat(40)), stored, tk);
    expect(tk.calls).toEqual(['x'.repeat(40)]);
    expect(result.outputTokens).toBe(10);
    expect(result).toEqual(countPart(done(input, 'x'.repeat(40)), counter()));
  });

  it('takes a result count the caller already has', () => {
    const tk = counter();
    const result = countToolResult(done(input, 'x'.repeat(40)), stored, tk, 10);
    expect(tk.calls).toEqual([]);
    expect(result.tokens).toBe(stored.tokens - stored.outputTokens! + 10);
  });

  it('counts the input again when it changed or the call was never counted', () => {
    const other = { outputId: 'out_2' };
    expect(countToolResult(done(other, 'y'), stored, counter())).toEqual(
      countPart(done(other, 'y'), counter()),
    );
    const uncounted = call(input);
    expect(countToolResult(done(input, 'y'), uncounted, counter())).toEqual(
      countPart(done(input, 'y'), counter()),
    );
    const noOutput: ToolPart = { ...stored, outputTokens: undefined };
    expect(countToolResult(done(input, 'y'), noOutput, counter())).toEqual(
      countPart(done(input, 'y'), counter()),
    );
  });
});

function reasonable(): string {
  return 'a reply of reasonable length';
}
