import { beforeEach, describe, expect, it } from 'vitest';
import type { Part, ToolPart } from '../src/schema/part.ts';
import {
  countCapped,
  countCappedMemo,
  countPart,
  estimateTokens,
  FILE_PART_TOKENS,
  messageTokens,
  partTokens,
  storedOutputTokens,
  storedTokens,
  type Tokenizer,
  toolOutputTokens,
} from '../src/session/tokens.ts';
import { assistant, compaction, p, reset, toolPart, user } from './build.ts';

beforeEach(reset);

// One token per word: easy to reason about in assertions.
const words: Tokenizer = { name: 'words', count: (t) => t.split(/\s+/).filter(Boolean).length };

describe('estimateTokens', () => {
  it('counts four Latin characters per token and one per CJK character', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd')).toBe(1);
    expect(estimateTokens('abcde')).toBe(2);
    expect(estimateTokens('你好世界')).toBe(4);
    expect(estimateTokens('こんにちは')).toBe(5);
    expect(estimateTokens('안녕')).toBe(2);
    expect(estimateTokens('abcd你好')).toBe(3);
    expect(estimateTokens('，。')).toBe(2);
  });

  it('counts a supplementary ideograph (surrogate pair) once', () => {
    expect(estimateTokens('𠀀')).toBe(1);
  });
});

describe('countCapped', () => {
  it('counts exactly up to the cap and estimates the rest', () => {
    const calls: number[] = [];
    const spy: Tokenizer = {
      name: 'spy',
      count: (t) => {
        calls.push(t.length);
        return 1_000;
      },
    };
    expect(countCapped(spy, 'a'.repeat(10), 100)).toBe(1_000);
    expect(countCapped(spy, 'a'.repeat(500), 100)).toBe(1_000 + 100);
    expect(calls).toEqual([10, 100]);
  });
});

describe('countCappedMemo', () => {
  it('counts a text once per tokenizer and answers like countCapped', () => {
    const calls: string[] = [];
    const spy: Tokenizer = {
      name: 'spy',
      count: (t) => {
        calls.push(t);
        return t.length;
      },
    };
    const other: Tokenizer = { name: 'spy', count: () => 7 };
    const system = 'You are a helpful assistant.';
    expect(countCappedMemo(spy, system)).toBe(countCapped(spy, system));
    calls.length = 0;
    expect(countCappedMemo(spy, system)).toBe(system.length);
    expect(countCappedMemo(spy, system)).toBe(system.length);
    expect(calls).toEqual([]);
    // Another tokenizer (even with the same name) has its own counts.
    expect(countCappedMemo(other, system)).toBe(7);
    expect(countCappedMemo(spy, `${system}!`)).toBe(system.length + 1);
    expect(calls).toEqual([`${system}!`]);
  });

  it('keeps a bounded amount of text', () => {
    let n = 0;
    const spy: Tokenizer = {
      name: 'bounded',
      count: (t) => {
        n++;
        return t.length;
      },
    };
    const big = (i: number) => `${i}`.padEnd(600_000, 'x');
    for (let i = 0; i < 10; i++) countCappedMemo(spy, big(i));
    expect(n).toBe(10);
    countCappedMemo(spy, big(9)); // newest: still known
    expect(n).toBe(10);
    countCappedMemo(spy, big(0)); // oldest: evicted (10 × 600k > 4 M characters)
    expect(n).toBe(11);
  });
});

describe('countPart', () => {
  it("sets tokens like partTokens and a tool part's outputTokens, tokenizing the result once", () => {
    const seen: string[] = [];
    const spy: Tokenizer = {
      name: 'words-spy',
      count: (t) => {
        seen.push(t);
        return words.count(t);
      },
    };
    const tool = assistant([p.tool('read', 'one two three four', { input: { path: 'a' } })])
      .parts[0] as ToolPart;
    const counted = countPart(tool, spy);
    expect(counted.tokens).toBe(partTokens(tool, words));
    expect(counted.outputTokens).toBe(toolOutputTokens(tool, words));
    expect(seen.filter((t) => t === 'one two three four')).toHaveLength(1);
    const text = user([p.text('three short words')]).parts[0]!;
    expect(countPart(text, words)).toEqual({ ...text, tokens: 3 });
    expect('outputTokens' in countPart(text, words)).toBe(false);
  });
});

describe('partTokens', () => {
  const one = (part: Part) => partTokens(part, words);
  it('counts text, reasoning, compaction and subtask text', () => {
    const msg = user([
      p.text('three short words'),
      p.text('skip me', { ignored: true }),
      p.compaction(),
      p.subtask(),
    ]);
    expect(msg.parts.map(one)).toEqual([3, 0, 6, 8]);
    expect(one(assistant([p.reasoning('a b')]).parts[0]!)).toBe(2);
  });

  it('counts a tool call as name + JSON input + result', () => {
    const msg = assistant([p.tool('read', 'one two three', { input: { path: 'a' } })]);
    expect(one(msg.parts[0]!)).toBe(1 + 1 + 3);
    expect(toolOutputTokens(toolPart(msg), words)).toBe(3);
  });

  it('counts the placeholder of a cleared, failed or interrupted tool', () => {
    const cleared = toolPart(assistant([p.tool('bash', 'long output here', { compacted: 5 })]));
    expect(toolOutputTokens(cleared, words)).toBe(5); // [Old tool result content cleared]
    const failed = toolPart(assistant([p.toolError('bash', 'exit code 1')]));
    expect(toolOutputTokens(failed, words)).toBe(3);
    const pending = toolPart(assistant([p.toolPending('bash')]));
    expect(toolOutputTokens(pending, words)).toBe(4); // [Tool execution was interrupted]
  });

  it('counts a file as a flat cost and markers as nothing', () => {
    const msg = user([p.file('image/png', 'https://x'), p.stepStart()]);
    expect(msg.parts.map(one)).toEqual([FILE_PART_TOKENS, 0]);
  });
});

describe('stored counts', () => {
  it('trust part.tokens, and estimate when a writer left 0', () => {
    const msg = user([p.text('abcdefgh', { tokens: 7 }), p.text('abcdefgh')]);
    expect(msg.parts.map(storedTokens)).toEqual([7, 2]);
  });

  it('shrink a pruned output to its placeholder', () => {
    const withCounts = toolPart(
      assistant([p.tool('bash', 'x'.repeat(4_000), { tokens: 1_010, outputTokens: 1_000, compacted: 9 })]),
    );
    expect(storedTokens(withCounts)).toBe(10 + 9);
    expect(storedOutputTokens(withCounts)).toBe(9);
    const noCounts: ToolPart = toolPart(assistant([p.tool('bash', 'x'.repeat(4_000), { compacted: 9 })]));
    expect(storedTokens(noCounts)).toBe(estimateTokens('bash') + estimateTokens('{}') + 9);
  });

  it('use outputTokens, else estimate the result', () => {
    expect(storedOutputTokens(toolPart(assistant([p.tool('bash', 'abcd', { outputTokens: 50 })])))).toBe(50);
    expect(storedOutputTokens(toolPart(assistant([p.tool('bash', 'abcdefgh')])))).toBe(2);
  });

  it('messageTokens leaves reasoning out unless it is resent', () => {
    const msg = assistant([p.reasoning('r', 10), p.text('t', { tokens: 5 })]);
    expect(messageTokens(msg)).toBe(5);
    expect(messageTokens(msg, true)).toBe(15);
    expect(messageTokens(compaction())).toBe(estimateTokens('What did we do so far?'));
  });
});
