import { beforeEach, describe, expect, it } from 'vitest';
import {
  CUT_PROMPT_SHARE,
  estimateNextPrompt,
  estimatePrompt,
  familyPrior,
  findAnchor,
  learnFromReport,
  learnRatio,
  RATIO_WEIGHT_CAP,
  ratioState,
  tokenizerFamilyOf,
  UNKNOWN_FAMILY_PRIOR,
  UNKNOWN_PRIOR_MARGIN,
} from '../src/session/estimate.ts';
import { filterCompacted } from '../src/session/history.ts';
import { assistant, compaction, p, reset, summary, usage, user } from './build.ts';

beforeEach(reset);

describe('findAnchor', () => {
  it('is the newest reply with usage', () => {
    const msgs = [
      user('a'),
      assistant('b', { usage: usage(100, 10) }),
      user('c'),
      assistant('d', { usage: usage(200, 20) }),
      assistant('e'),
    ];
    expect(findAnchor(msgs)).toMatchObject({ messageSeq: 4, usage: { input: 200 }, time: 4_500 });
  });

  it('prefers the last step-finish usage over the message total', () => {
    const msgs = [
      assistant([p.stepFinish(usage(10, 1)), p.stepFinish(usage(30, 3))], { usage: usage(40, 4) }),
    ];
    expect(findAnchor(msgs)?.usage.input).toBe(30);
  });

  it('skips summaries, messages before the boundary summary, and empty reports', () => {
    const view = filterCompacted([
      user('one', { id: 'u1' }),
      assistant('two', { id: 'a1', usage: usage(50_000, 100) }),
      compaction({ tailStartId: 'u1' }, { id: 'c1' }),
      summary('S', 'c1', { usage: usage(60_000, 2_000) }),
      user('three'),
      assistant('zero', { usage: usage(0, 0) }),
    ]);
    expect(findAnchor(view)).toBeUndefined();
  });

  it('uses the created time when the message has no completed time', () => {
    const a = assistant('x', { usage: usage(1, 1), time: { created: 77 } });
    expect(findAnchor([a])?.time).toBe(77);
  });
});

describe('estimateNextPrompt', () => {
  it('before any report counts everything × prior, plus overhead', () => {
    const msgs = [
      user([p.text('x', { tokens: 100 })]),
      assistant([p.reasoning('r', 50), p.text('y', { tokens: 100 })]),
    ];
    expect(
      estimateNextPrompt({ messages: msgs, resendsReasoning: false, tokenizerPrior: 1.25, overhead: 200 }),
    ).toBe(500);
    expect(
      estimateNextPrompt({ messages: msgs, resendsReasoning: true, tokenizerPrior: 1, overhead: 0 }),
    ).toBe(250);
  });

  it('takes the prior from the model when none is given, and prefers a learned ratio', () => {
    const msgs = [user([p.text('x', { tokens: 1_000 })])];
    expect(
      estimateNextPrompt({ messages: msgs, resendsReasoning: false, model: 'compatible/claude-sonnet-4' }),
    ).toBe(1_250);
    expect(estimateNextPrompt({ messages: msgs, resendsReasoning: false })).toBe(1_000);
    expect(
      estimateNextPrompt({ messages: msgs, resendsReasoning: false, tokenizerPrior: 1.25, ratio: 1.1 }),
    ).toBe(1_100);
  });

  it('anchors on the last report: prompt + reply, plus what came since × ratio', () => {
    const msgs = [
      user([p.text('old', { tokens: 40_000 })]),
      assistant(
        [p.text('reply', { tokens: 999 }), p.tool('read', 'big', { tokens: 5_100, outputTokens: 5_000 })],
        {
          usage: usage(30_000, 1_000, 20_000, { reasoning: 500, cache: { read: 20_000, write: 100 } }),
          finish: 'tool-calls',
        },
      ),
      user([p.text('new question', { tokens: 1_000 })]),
    ];
    const anchor = findAnchor(msgs)!;
    // base = 30,000 + 20,000 + 100 + 1,000 (reasoning not resent); added = 5,000 (result) + 1,000.
    expect(
      estimateNextPrompt({ anchor, messages: msgs, resendsReasoning: false, tokenizerPrior: 1, ratio: 1.2 }),
    ).toBe(51_100 + 7_200);
    // A DeepSeek-style agent is sent its reasoning back.
    expect(
      estimateNextPrompt({ anchor, messages: msgs, resendsReasoning: true, tokenizerPrior: 1, ratio: 1.2 }),
    ).toBe(51_600 + 7_200);
  });

  it('subtracts outputs pruned after the report', () => {
    const msgs = [
      user('q'),
      assistant([p.tool('read', 'x'.repeat(40_000), { outputTokens: 10_000, compacted: 9_000 })]),
      assistant([p.tool('read', 'y', { outputTokens: 2_000, compacted: 1 })]), // pruned before the report
      assistant('answer', { usage: usage(60_000, 100), time: { created: 5_000, completed: 5_000 } }),
    ];
    const anchor = findAnchor(msgs)!;
    expect(anchor.time).toBe(5_000);
    const saved = 10_000 - 9; // the placeholder remains
    expect(estimateNextPrompt({ anchor, messages: msgs, resendsReasoning: false, tokenizerPrior: 1 })).toBe(
      60_100 - saved,
    );
    // Without a report time nothing is subtracted.
    const noTime = { usage: anchor.usage, messageSeq: anchor.messageSeq };
    expect(
      estimateNextPrompt({ anchor: noTime, messages: msgs, resendsReasoning: false, tokenizerPrior: 1 }),
    ).toBe(60_100);
  });
});

describe('familyPrior', () => {
  it.each([
    ['openai/gpt-5', 1.0],
    ['openai/o3-mini', 1.0],
    ['compatible/gpt-oss-120b', 1.0],
    ['compatible/meta-llama/llama-3.3-70b', 1.05],
    ['compatible/deepseek-chat', 1.1],
    ['compatible/gemini-2.5-pro', 1.2],
    ['compatible/anthropic/claude-sonnet-4.5', 1.25],
    ['compatible/qwen3-coder', 1.1],
  ])('%s → %d', (model, prior) => {
    expect(familyPrior(model)).toBe(prior);
  });

  it('answers the same from its memo, past its bound too', () => {
    // More ids than the memo keeps: it starts over and every answer stays what the id names.
    for (let i = 0; i < 600; i++) {
      expect(tokenizerFamilyOf(`compatible/Qwen-${i}`)).toBe('qwen');
      expect(tokenizerFamilyOf(`compatible/house-model-${i}`)).toBeUndefined();
    }
    expect(tokenizerFamilyOf('compatible/Qwen-1')).toBe('qwen');
    expect(tokenizerFamilyOf('compatible/house-model-1')).toBeUndefined();
  });
});

describe('learnRatio', () => {
  it('takes the first report whatever its size, then averages by size', () => {
    expect(learnRatio({ ratio: 1.5, weight: 0 }, 360, 200)).toEqual({ ratio: 1.8, weight: 200 });
    const next = learnRatio({ ratio: 1.8, weight: 200 }, 12_000, 10_000);
    expect(next.ratio).toBeCloseTo((1.8 * 200 + 1.2 * 10_000) / 10_200);
    expect(next.weight).toBe(10_200);
  });

  it('ignores empty samples, clamps outliers and caps the weight', () => {
    expect(learnRatio({ ratio: 1.1, weight: 500 }, 0, 5_000)).toEqual({ ratio: 1.1, weight: 500 });
    expect(learnRatio({ ratio: 1, weight: 0 }, 100_000, 5_000).ratio).toBe(4);
    expect(learnRatio({ ratio: 1, weight: 49_000 }, 10_000, 10_000).weight).toBe(RATIO_WEIGHT_CAP);
  });
});

describe('learnFromReport', () => {
  it('learns as learnRatio does from a plausible report', () => {
    const known = { ratio: 1.2, weight: 8_000 };
    expect(learnFromReport(known, 7_000, 6_000)).toEqual({
      ...learnRatio(known, 7_000, 6_000),
      promptCut: false,
    });
    // Exactly the share is still plausible.
    expect(learnFromReport({ ratio: 1, weight: 100 }, 600, 1_000).promptCut).toBe(false);
  });

  it('learns nothing from a report far below what was sent once a ratio is known (a cut prompt)', () => {
    const known = { ratio: 1.2, weight: 8_000 };
    // 10,000 tiktoken tokens sent at 1.2 ≈ 12,000 expected; 4,096 reported (a num_ctx cut).
    expect(learnFromReport(known, 4_096, 10_000)).toEqual({ ratio: 1.2, weight: 8_000, promptCut: true });
    expect(learnFromReport(known, CUT_PROMPT_SHARE * 10_000 * 1.2 - 1, 10_000).promptCut).toBe(true);
  });

  it('takes the first report whatever its size, and ignores a report of nothing', () => {
    // No ratio known yet: nothing to compare with, so even a small first report is learned.
    expect(learnFromReport({ ratio: 1.5, weight: 0 }, 900, 10_000)).toEqual({
      ...learnRatio({ ratio: 1.5, weight: 0 }, 900, 10_000),
      promptCut: false,
    });
    expect(learnFromReport({ ratio: 1.1, weight: 500 }, 0, 5_000)).toEqual({
      ratio: 1.1,
      weight: 500,
      promptCut: false,
    });
  });
});

describe('ratioState', () => {
  it('uses a conservative prior and margin for unknown families, a small margin once learned', () => {
    const unknown = ratioState({ model: 'compatible/tinyllm-q4' });
    expect(unknown).toEqual({ ratio: UNKNOWN_FAMILY_PRIOR, weight: 0, margin: UNKNOWN_PRIOR_MARGIN });
    expect(ratioState({ model: 'compatible/tinyllm-q4', tokenizer: 'claude' }).ratio).toBe(1.25);
    const learned = ratioState({ model: 'compatible/x', tokenRatio: 1.8, tokenRatioWeight: 200 });
    expect(learned.ratio).toBe(1.8);
    expect(learned.margin).toBeLessThan(0.1);
    const more = ratioState({ model: 'compatible/x', tokenRatio: 1.8, tokenRatioWeight: 20_000 });
    expect(more.margin).toBeLessThan(learned.margin);
    // A prior is never taken for a learned ratio.
    expect(ratioState({ model: 'compatible/x', tokenRatio: 1.8, tokenRatioWeight: 0 }).weight).toBe(0);
  });
});

describe('estimatePrompt', () => {
  it('adds framing per message and the margin to the bound only', () => {
    const msgs = [user([p.text('x', { tokens: 1_000 })])];
    const e = estimatePrompt({
      messages: msgs,
      resendsReasoning: false,
      ratio: 1.5,
      margin: 0.5,
      framing: 4,
    });
    // (1,000 + 4 for the message + 2 × 4 for the system message and the reply's opening) × 1.5.
    expect(e).toEqual({ tokens: 1_518, bound: 2_277, anchored: false, ratio: 1.5, margin: 0.5 });
  });
});
