import { beforeEach, describe, expect, it } from 'vitest';
import type { ModelLimits } from '../src/config.ts';
import {
  contextGauge,
  EXPECTED_SUMMARY_MAX,
  expectedSummaryTokens,
  type GaugeInput,
  pruneEnabled,
  requestOverhead,
} from '../src/session/gauge.ts';
import { CLEARED_TOOL_OUTPUT } from '../src/session/placeholders.ts';
import { READ_OUTPUT_TOOL } from '../src/session/read-output.ts';
import { estimateTokenizer, estimateTokens } from '../src/session/tokens.ts';
import { assistant, compaction, p, reset, usage, user } from './build.ts';

beforeEach(reset);

// context 100k, output 32k, no input limit: maxOutput 32,000, usable 68,000, trigger 68,000,
// background floor(68,000 × 0.8) = 54,400.
const limits: ModelLimits = { context: 100_000, output: 32_000 };
const CLEARED = estimateTokens(CLEARED_TOOL_OUTPUT); // 33 chars → 9

const text = (t: string, tokens: number) => p.text(t, { tokens });
const tool = (name: string, outputTokens: number) =>
  p.tool(name, 'output', { outputTokens, tokens: outputTokens + 10 });

/**
 * u1 (10) · a2 bash (50,010 = 10 call + 50,000 output) · u3 (10) · a4 read (1,010) · u5 (10) · a6 (5).
 * No provider report yet, so used = every stored count + overhead = 51,055 + overhead (ratio 1).
 */
function session() {
  return [
    user([text('one', 10)]),
    assistant([tool('bash', 50_000)]),
    user([text('two', 10)]),
    assistant([tool('read', 1_000)]),
    user([text('three', 10)]),
    assistant([text('done', 5)]),
  ];
}

// The session has three steps; protecting only the newest keeps bash's 50k output prunable.
const gauge = (input: Partial<GaugeInput> = {}) =>
  contextGauge({
    messages: session(),
    limits,
    ratio: 1,
    ...input,
    compaction: { pruneProtectSteps: 1, ...input.compaction },
  });

describe('contextGauge', () => {
  it('matches hand-computed numbers below the background threshold', () => {
    const g = gauge();
    // Prune: the two newest turns are skipped; bash's 50,000 passes the 40,000 protection and
    // exceeds the 20,000 minimum → cleared, leaving the 9-token placeholder: 49,991 freed.
    // After it, a2 counts 10 + 9 = 19. Tail (budget clamp(68,000 / 4) = 8,000, 2 turns): u3..a6.
    // Head u1 + a2 = 29 tokens; expected summary ceil(2.9) = 3; the summary frees 26.
    expect(g).toEqual({
      used: 51_055,
      usable: 68_000,
      trigger: 68_000,
      background: 54_400,
      percentOfTrigger: 75.1,
      pruneWouldFree: { parts: 1, tokens: 50_000 - CLEARED },
      suggestion: {
        shouldCompact: false,
        estimatedSavings: 50_000 - CLEARED + 26,
        reason:
          'The next prompt (~51,055 tokens, 75.1% of the trigger) is below the background threshold (54,400); no compaction is needed.',
      },
    });
  });

  it('suggests a background compaction above the background threshold, noting when prune alone is enough', () => {
    const g = gauge({ overhead: 4_000 });
    expect(g.used).toBe(55_055);
    expect(g.suggestion.shouldCompact).toBe(true);
    expect(g.suggestion.reason).toBe(
      'The next prompt (~55,055 tokens, 81% of the trigger) is above the background threshold (54,400): ' +
        'an idle session is compacted in the background so that the next turn starts with room to spare. ' +
        'Pruning old tool outputs alone (~49,991 tokens) would bring it under the background threshold.',
    );
    const off = gauge({ overhead: 4_000, flags: { disableAutocompact: true } });
    expect(off.suggestion.reason).toContain(
      'automatic compaction is off, and compacting now would free about 50,017',
    );
  });

  it('says the session must compact at the trigger', () => {
    const g = gauge({ overhead: 20_000 });
    expect(g.used).toBe(71_055);
    expect(g.percentOfTrigger).toBe(104.5);
    expect(g.suggestion).toMatchObject({ shouldCompact: true, estimatedSavings: 50_017 });
    expect(g.suggestion.reason).toBe(
      'The next prompt (~71,055 tokens, 104.5% of the trigger) has reached the compaction trigger (68,000): ' +
        'the session must compact before the next model call, and will do so automatically. ' +
        'Pruning old tool outputs alone (~49,991 tokens) would bring it under the trigger.',
    );
    const manual = gauge({ overhead: 20_000, compaction: { auto: false } });
    expect(manual.suggestion.reason).toContain(
      'automatic compaction is off, so request a manual compaction.',
    );
  });

  it('leaves the prune note out when pruning would not be enough', () => {
    const g = gauge({ overhead: 80_000 });
    expect(g.suggestion.shouldCompact).toBe(true);
    expect(g.suggestion.reason).not.toContain('Pruning');
  });

  it('counts no prune when pruning is off, and the whole unpruned head for the summary', () => {
    for (const input of [{ compaction: { prune: false } }, { flags: { disablePrune: true } }]) {
      const g = gauge(input);
      expect(g.pruneWouldFree).toEqual({ parts: 0, tokens: 0 });
      // Head u1 + a2 = 50,020; expected summary min(2,000, 5,002) = 2,000.
      expect(g.suggestion.estimatedSavings).toBe(48_020);
    }
  });

  it('passes the prune settings of the config on', () => {
    const g = gauge({ compaction: { protectedTools: ['bash'] } });
    expect(g.pruneWouldFree).toEqual({ parts: 0, tokens: 0 });
    // Protecting 500 tokens only: read's 1,000 passes it too.
    const lower = gauge({ compaction: { pruneProtect: 500, pruneMinimum: 100 } });
    expect(lower.pruneWouldFree.parts).toBe(2);
    // Protecting all three steps leaves nothing to prune.
    expect(gauge({ compaction: { pruneProtectSteps: 3 } }).pruneWouldFree.parts).toBe(0);
    const higher = gauge({ compaction: { pruneMinimum: 60_000 } });
    expect(higher.pruneWouldFree.parts).toBe(0);
  });

  it('scales tokens by the session ratio, or by the family prior of the model', () => {
    const g = gauge({ ratio: 1.25 });
    expect(g.used).toBe(Math.ceil(51_055 * 1.25));
    expect(g.pruneWouldFree.tokens).toBe(Math.ceil((50_000 - CLEARED) * 1.25));
    expect(g.suggestion.estimatedSavings).toBe(Math.ceil(50_017 * 1.25));
    const claude = contextGauge({ messages: session(), limits, model: 'compatible/claude-sonnet' });
    expect(claude.used).toBe(Math.ceil(51_055 * 1.25));
    expect(contextGauge({ messages: session(), limits }).used).toBe(51_055);
  });

  it('anchors on the last provider report', () => {
    const messages = [
      user([text('hi', 5)]),
      assistant([text('hello', 7)], { usage: usage(50_000, 1_000) }),
      user([text('next', 100)]),
    ];
    const g = contextGauge({ messages, limits, ratio: 1, overhead: 9_999 });
    // 50,000 input + 1,000 output + 100 since; the overhead is in the report already.
    expect(g.used).toBe(51_100);
  });

  it('uses the tail settings of the config', () => {
    // tailTurns 0: nothing is kept, the head is everything after the prune (10+19+10+1,010+10+5).
    const g = gauge({ compaction: { tailTurns: 0 } });
    const head = 1_064;
    expect(g.suggestion.estimatedSavings).toBe(50_000 - CLEARED + head - Math.ceil(head / 10));
    // A tail budget of 20 keeps only a6 and u5.
    const small = gauge({ compaction: { preserveRecentTokens: 20 } });
    const smallHead = 10 + 19 + 10 + 1_010;
    expect(small.suggestion.estimatedSavings).toBe(50_000 - CLEARED + smallHead - Math.ceil(smallHead / 10));
  });

  it('counts reasoning only for models that are sent it back', () => {
    const messages = [user([text('q', 10)]), assistant([p.reasoning('think', 3_000), text('a', 10)])];
    expect(contextGauge({ messages, limits, ratio: 1 }).used).toBe(20);
    expect(contextGauge({ messages, limits, ratio: 1, resendsReasoning: true }).used).toBe(3_020);
  });

  it('reports an empty session', () => {
    const g = contextGauge({ messages: [], limits, ratio: 1 });
    expect(g).toMatchObject({
      used: 0,
      percentOfTrigger: 0,
      pruneWouldFree: { parts: 0, tokens: 0 },
      suggestion: { shouldCompact: false, estimatedSavings: 0 },
    });
  });

  it('never suggests compacting when the window is unknown', () => {
    const g = contextGauge({ messages: session(), limits: { context: 0, output: 0 }, ratio: 1 });
    expect(g.trigger).toBe(0);
    expect(g.percentOfTrigger).toBe(0);
    expect(g.suggestion.shouldCompact).toBe(false);
    expect(g.suggestion.reason).toContain('unknown');
  });

  it('reports a pending compaction, and sizes the summary from what precedes it', () => {
    const messages = [...session(), compaction()];
    const g = contextGauge({
      messages,
      limits,
      ratio: 1,
      overhead: 80_000,
      compaction: { pruneProtectSteps: 1 },
    });
    expect(g.suggestion.shouldCompact).toBe(false);
    expect(g.suggestion.reason).toBe('A compaction is already pending; it runs before the next model call.');
    expect(g.suggestion.estimatedSavings).toBe(50_017);
  });
});

describe('expectedSummaryTokens', () => {
  it('is a tenth of the head, at most 2,000', () => {
    expect(expectedSummaryTokens(0)).toBe(0);
    expect(expectedSummaryTokens(-5)).toBe(0);
    expect(expectedSummaryTokens(29)).toBe(3);
    expect(expectedSummaryTokens(15_000)).toBe(1_500);
    expect(expectedSummaryTokens(1_000_000)).toBe(EXPECTED_SUMMARY_MAX);
  });
});

describe('pruneEnabled', () => {
  it('needs compaction.prune and no LOOPLINE_DISABLE_PRUNE', () => {
    expect(pruneEnabled(undefined, undefined)).toBe(true);
    expect(pruneEnabled({ prune: true }, { disablePrune: false })).toBe(true);
    expect(pruneEnabled({ prune: false }, undefined)).toBe(false);
    expect(pruneEnabled({ prune: true }, { disablePrune: true })).toBe(false);
  });
});

describe('requestOverhead', () => {
  it('counts the system blocks and the tool definitions as JSON', () => {
    const system = ['You are terse.', 'Answer in French.'];
    expect(requestOverhead(estimateTokenizer, system, [])).toBe(estimateTokens(system.join('\n')));
    expect(requestOverhead(estimateTokenizer, system, [READ_OUTPUT_TOOL])).toBe(
      estimateTokens(system.join('\n')) + estimateTokens(JSON.stringify([READ_OUTPUT_TOOL])),
    );
  });
});
