import { beforeEach, describe, expect, it } from 'vitest';
import { errorData } from '../src/errors.ts';
import { replayRequest } from '../src/session/compaction.ts';
import {
  type CompactionPlan,
  clipToTokens,
  llmRungs,
  MIN_STRUCTURAL_TOKENS,
  type PlanInput,
  planCompaction,
  structuralPlan,
} from '../src/session/compaction-plan.ts';
import { compactionRange } from '../src/session/compaction-range.ts';
import { CONTINUE_TEXT } from '../src/session/placeholders.ts';
import { countCapped, estimateTokenizer, type Tokenizer } from '../src/session/tokens.ts';
import { assistant, ids, p, reset, user } from './build.ts';

// The two plans of a compaction (with and without a verbatim tail): summary input, replayed
// request, follow-up text, and the size of the next prompt before the summary is known.

beforeEach(reset);

const text = (s: string, tokens: number) => [p.text(s, { tokens })];
const marker = (extra: Record<string, unknown>, id = 'c9') =>
  user([{ type: 'compaction', auto: true, overflow: false, tokens: 0, ...extra }], { id, synthetic: true });

function input(
  extra: Partial<PlanInput['agent']['compaction']> = {},
  ratio = { ratio: 1, margin: 0 },
): PlanInput {
  return {
    agent: { resendsReasoning: false, compaction: { tailTurns: 1, preserveRecentTokens: 1_000, ...extra } },
    budget: { usable: 10_000, trigger: 8_000 },
    overheadTokens: 500,
    ratio,
  };
}

const twoTurns = () => [
  user(text('first', 100), { id: 'u1' }),
  assistant(text('one', 100), { id: 'a2' }),
  user(text('second', 100), { id: 'u3' }),
  assistant(text('two', 100), { id: 'a4' }),
];

describe('planCompaction', () => {
  it('keeps the last turn as the tail and projects both plans from the same fixed costs', () => {
    const log = [...twoTurns(), marker({}), user(text('typed meanwhile', 50), { id: 'u10' })];
    const plans = planCompaction(input(), compactionRange(log, 'c9')!, estimateTokenizer);
    expect(ids(plans.withTail!.head)).toEqual(['u1', 'a2']);
    expect(ids(plans.withTail!.tail)).toEqual(['u3', 'a4']);
    expect(plans.withTail!.tailStartId).toBe('u3');
    expect(ids(plans.noTail.head)).toEqual(['u1', 'a2', 'u3', 'a4']);
    expect(plans.noTail.tail).toEqual([]);
    // The tail costs exactly its own tokens on top of the plan without it.
    expect(plans.withTail!.fixed - plans.noTail.fixed).toBe(200);
    expect(plans.project(plans.noTail, 300)).toBe(plans.noTail.fixed + 300);
    // An automatic compaction hands the turn back with the continue message.
    expect(plans.noTail.followUp).toBe(CONTINUE_TEXT);
    expect(plans.turnWasRunning).toBe(false);
    expect(plans.trigger).toBe(8_000);
    expect(plans.ratio).toBe(1);
  });

  it('scales by the learned ratio with its margin', () => {
    const log = [...twoTurns(), marker({})];
    const plans = planCompaction(
      input({}, { ratio: 1.2, margin: 0.1 }),
      compactionRange(log, 'c9')!,
      estimateTokenizer,
    );
    expect(plans.ratio).toBeCloseTo(1.32);
    const plain = planCompaction(input(), compactionRange(log, 'c9')!, estimateTokenizer);
    expect(plans.noTail.fixed).toBe(Math.ceil(plain.noTail.fixed * 1.32));
  });

  it('has no tail plan when no turn may be kept, and uses the default tail budget', () => {
    const log = [...twoTurns(), marker({})];
    const none = planCompaction(input({ tailTurns: 0 }), compactionRange(log, 'c9')!, estimateTokenizer);
    expect(none.withTail).toBeUndefined();
    const byDefault = planCompaction(
      input({ preserveRecentTokens: undefined }),
      compactionRange(log, 'c9')!,
      estimateTokenizer,
    );
    expect(ids(byDefault.withTail!.tail)).toEqual(['u3', 'a4']);
  });

  it('replays an overflowing request after the summary unless the tail shows it', () => {
    const log = [
      user(text('first', 100), { id: 'u1' }),
      assistant(text('one', 100), { id: 'a2' }),
      user(text('a huge paste', 100), { id: 'u3' }),
      assistant('', { id: 'a4', finish: undefined, error: errorData('ContextOverflowError') }),
      marker({ overflow: true }),
    ];
    const plans = planCompaction(input(), compactionRange(log, 'c9')!, estimateTokenizer);
    // The tail keeps the request verbatim: nothing to replay.
    expect(plans.withTail!.replay).toBeUndefined();
    expect(plans.withTail!.followUp).toBe(CONTINUE_TEXT);
    // Without the tail it is replayed, and left out of the summary input.
    const request = log[2]!;
    expect(plans.noTail.replay).toBe(request);
    expect(plans.noTail.followUp).toBe(replayRequest(request));
    expect(ids(plans.noTail.head)).toEqual(['u1', 'a2', 'a4']);
    expect(plans.turnWasRunning).toBe(true);
  });

  it('appends nothing for a background compaction, nor for a manual one between turns', () => {
    const log = [...twoTurns(), marker({ background: true })];
    const bg = planCompaction(input(), compactionRange(log, 'c9')!, estimateTokenizer);
    expect(bg.noTail.followUp).toBeUndefined();
    expect(bg.withTail!.followUp).toBeUndefined();
    const manual = planCompaction(
      input(),
      compactionRange([...twoTurns(), marker({ auto: false })], 'c9')!,
      estimateTokenizer,
    );
    expect(manual.noTail.followUp).toBeUndefined();
  });

  it('hands a turn in progress back to the loop after a manual compaction', () => {
    const log = [...twoTurns(), user(text('third', 10), { id: 'u5' }), marker({ auto: false })];
    const plans = planCompaction(input(), compactionRange(log, 'c9')!, estimateTokenizer);
    expect(plans.turnWasRunning).toBe(true);
    expect(plans.noTail.followUp).toBe(CONTINUE_TEXT);
  });
});

describe('clipToTokens', () => {
  const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');

  it('returns text that fits unchanged', () => {
    expect(clipToTokens('short', 100, estimateTokenizer)).toBe('short');
  });

  it('keeps the beginning and the end within the budget', () => {
    const clipped = clipToTokens(long, 100, estimateTokenizer);
    expect(countCapped(estimateTokenizer, clipped)).toBeLessThanOrEqual(100);
    expect(clipped.startsWith('word0 ')).toBe(true);
    expect(clipped.endsWith('word399')).toBe(true);
    expect(clipped).toContain('\n…\n');
  });

  it('falls back to a plain cut when no clipped form fits, and to nothing for a budget of 0', () => {
    const chars: Tokenizer = { name: 'chars', count: (t) => t.length };
    expect(clipToTokens('abcdefghij'.repeat(10), 3, chars)).toBe('abc');
    expect(clipToTokens(long, 0, estimateTokenizer)).toBe('');
  });
});

describe('the ladder’s rungs', () => {
  const plan = (fixed: number, tail = true): CompactionPlan => ({
    head: [],
    tail: tail ? [user('kept')] : [],
    tailStartId: undefined,
    replay: undefined,
    followUp: undefined,
    fixed,
  });

  it('tries the summary with the tail, then without it, dropping plans that leave no room', () => {
    const withTail = plan(5_000);
    const noTail = plan(1_000, false);
    expect(llmRungs({ withTail, noTail, trigger: 8_000 })).toEqual([
      { plan: withTail, rung: 'summary' },
      { plan: noTail, rung: 'summary-no-tail' },
    ]);
    expect(llmRungs({ withTail: plan(8_000), noTail, trigger: 8_000 })).toEqual([
      { plan: noTail, rung: 'summary-no-tail' },
    ]);
    expect(llmRungs({ withTail: undefined, noTail, trigger: 8_000 })).toEqual([
      { plan: noTail, rung: 'summary' },
    ]);
    expect(llmRungs({ withTail: undefined, noTail: plan(9_000, false), trigger: 8_000 })).toEqual([]);
  });

  it('keeps the tail for the structural summary while it leaves MIN_STRUCTURAL_TOKENS beside it', () => {
    const noTail = plan(1_000, false);
    const roomy = plan(7_000);
    expect(structuralPlan({ withTail: roomy, noTail, trigger: 8_000, ratio: 2 })).toEqual({
      plan: roomy,
      maxTokens: 499, // (8,000 − 1 − 7,000) / 2
    });
    const tight = plan(7_700);
    expect(structuralPlan({ withTail: tight, noTail, trigger: 8_000, ratio: 2 })).toEqual({
      plan: noTail,
      maxTokens: 3_499,
    });
  });

  it('gives the structural summary MIN_STRUCTURAL_TOKENS even when nothing fits', () => {
    const full = plan(9_000, false);
    expect(structuralPlan({ withTail: undefined, noTail: full, trigger: 8_000, ratio: 1 })).toEqual({
      plan: full,
      maxTokens: MIN_STRUCTURAL_TOKENS,
    });
  });
});
