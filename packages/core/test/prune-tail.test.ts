import { beforeEach, describe, expect, it } from 'vitest';
import { filterCompacted } from '../src/session/history.ts';
import { minimumBeforeCompaction, planPrune, pruneDefaults, pruneOptions } from '../src/session/prune.ts';
import { defaultTailBudget, selectTail } from '../src/session/tail.ts';
import { assistant, compaction, ids, p, reset, summary, toolPart, user } from './build.ts';

beforeEach(reset);

const out = (tool: string, tokens: number, extra: { compacted?: number } = {}) =>
  p.tool(tool, 'output', { outputTokens: tokens, tokens: tokens + 10, ...extra });

describe('planPrune', () => {
  it('marks a 50k-token output older than the three newest steps', () => {
    const old = assistant([out('bash', 50_000)]);
    const msgs = [
      user('one'),
      old,
      assistant([out('read', 1_000)]),
      assistant([out('read', 1_000)]),
      user('two'),
      assistant('done'),
    ];
    expect(planPrune(msgs)).toEqual({ partIds: [toolPart(old).id], tokens: 50_000 });
  });

  it('never touches the outputs of the newest pruneProtectSteps assistant messages', () => {
    const msgs = [
      user('one'),
      assistant([out('bash', 90_000)]),
      assistant([out('bash', 90_000)]),
      assistant([out('bash', 90_000)]),
    ];
    expect(planPrune(msgs)).toEqual({ partIds: [], tokens: 0 });
    expect(planPrune(msgs, { protectSteps: 2 }).tokens).toBe(90_000);
  });

  it('prunes inside one long user turn (a single-turn task)', () => {
    const steps = Array.from({ length: 8 }, () => assistant([out('bash', 3_000)], { finish: 'tool-calls' }));
    const msgs = [user('fix the bug'), ...steps];
    // 16k window: usable 14,000 → protect 3,500, minimum 1,400. Newest 3 steps skipped; a5 and a4
    // (6,000) pass the protection at the second; a4, a3, a2, a1 are candidates (12,000).
    const plan = planPrune(msgs, { protect: 3_500, minimum: 1_400 });
    expect(plan.partIds).toEqual([3, 2, 1, 0].map((i) => toolPart(steps[i]!).id));
    expect(plan.tokens).toBe(12_000);
  });

  it('leaves a protected tool alone', () => {
    const msgs = [
      user('one'),
      assistant([out('skill', 90_000)]),
      assistant('a'),
      assistant('b'),
      assistant('c'),
    ];
    expect(planPrune(msgs).partIds).toEqual([]);
    expect(planPrune(msgs, { protectedTools: [] }).tokens).toBe(90_000);
  });

  it('protects the newest 40k of outputs and clears what lies beyond', () => {
    const a = assistant([out('read', 30_000)]);
    const b = assistant([out('read', 15_000)]);
    const c = assistant([out('read', 25_000)]);
    const msgs = [user('1'), a, user('2'), b, user('3'), c, assistant('x'), assistant('y'), assistant('z')];
    // newest first: c 25k (total 25k), b 15k (40k, not past), a 30k (70k) → only a.
    expect(planPrune(msgs)).toEqual({ partIds: [toolPart(a).id], tokens: 30_000 });
  });

  it('returns nothing when the candidates do not exceed the minimum', () => {
    // newest 35k stays; the older 15k passes 40k and is a candidate, but 15k ≤ 20k.
    const msgs = [
      user('1'),
      assistant([out('read', 15_000), out('read', 35_000)]),
      assistant('x'),
      assistant('y'),
      assistant('z'),
    ];
    expect(planPrune(msgs)).toEqual({ partIds: [], tokens: 0 });
    expect(planPrune(msgs, { minimum: 1_000 }).tokens).toBe(15_000);
    expect(planPrune(msgs, { protect: 10_000 }).tokens).toBe(50_000);
  });

  it('stops at a summary message and at an already pruned output', () => {
    const beforeSummary = [user('0'), assistant([out('read', 90_000)])];
    const view = filterCompacted([
      ...beforeSummary,
      compaction({}, { id: 'c1' }),
      summary('S', 'c1'),
      user('1'),
      assistant([out('read', 10_000)]),
      user('2'),
      user('3'),
    ]);
    expect(planPrune(view, { protectSteps: 0, protect: 0, minimum: 0 }).partIds).toHaveLength(1);
    expect(planPrune(view).partIds).toEqual([]);
    const pruned = [
      user('1'),
      assistant([out('read', 90_000)]),
      assistant([out('read', 5_000, { compacted: 1 })]),
      assistant('x'),
      assistant('y'),
      assistant('z'),
    ];
    expect(planPrune(pruned).partIds).toEqual([]);
  });

  it('ignores errored and pending tools', () => {
    const msgs = [
      user('1'),
      assistant([p.toolError('bash', 'x'.repeat(400_000)), p.toolPending('bash')]),
      assistant('x'),
      assistant('y'),
      assistant('z'),
    ];
    expect(planPrune(msgs).tokens).toBe(0);
  });
});

describe('minimumBeforeCompaction', () => {
  it('drops the minimum to what gets under the trigger, never raises it', () => {
    expect(minimumBeforeCompaction(1_400, 300)).toBe(300);
    expect(minimumBeforeCompaction(1_400, 5_000)).toBe(1_400);
    expect(minimumBeforeCompaction(1_400, 0)).toBe(1_400);
    expect(minimumBeforeCompaction(1_400, -50)).toBe(1_400);
  });
});

describe('pruneOptions', () => {
  it('scales protect and minimum with the usable window, capped at 40,000 / 20,000', () => {
    expect(pruneDefaults(14_000)).toEqual({ protect: 3_500, minimum: 1_400 });
    expect(pruneDefaults(30_000)).toEqual({ protect: 7_500, minimum: 3_000 });
    expect(pruneDefaults(168_000)).toEqual({ protect: 40_000, minimum: 16_800 });
    expect(pruneDefaults(400_000)).toEqual({ protect: 40_000, minimum: 20_000 });
  });

  it('keeps configured values and defaults the rest', () => {
    expect(pruneOptions({ pruneProtect: 1_000 }, 14_000)).toEqual({
      protect: 1_000,
      minimum: 1_400,
      protectSteps: 3,
      protectedTools: ['skill'],
    });
    expect(pruneOptions({ pruneMinimum: 5, pruneProtectSteps: 1, protectedTools: [] }, 0)).toEqual({
      protect: 0,
      minimum: 5,
      protectSteps: 1,
      protectedTools: [],
    });
  });
});

describe('selectTail', () => {
  const msg = (role: 'u' | 'a', tokens: number, id?: string) =>
    role === 'u'
      ? user([p.text('q', { tokens })], id ? { id } : {})
      : assistant([p.text('r', { tokens })], id ? { id } : {});

  it('clamps the default budget to 2,000..8,000', () => {
    expect(defaultTailBudget(4_000)).toBe(2_000);
    expect(defaultTailBudget(20_000)).toBe(5_000);
    expect(defaultTailBudget(1_000_000)).toBe(8_000);
  });

  it('keeps the last two turns when they fit', () => {
    const msgs = [
      msg('u', 500),
      msg('a', 500),
      msg('u', 500, 'u3'),
      msg('a', 500),
      msg('u', 500),
      msg('a', 500),
    ];
    const r = selectTail(msgs, { budget: 8_000 });
    expect(ids(r.tail)).toEqual(['u3', 'a4', 'u5', 'a6']);
    expect(ids(r.head)).toEqual(['u1', 'a2']);
    expect(r.tailStartId).toBe('u3');
  });

  it('splits a turn that does not fit at a message boundary', () => {
    const msgs = [msg('u', 100), msg('a', 100), msg('u', 100), msg('a', 3_000), msg('a', 800), msg('a', 900)];
    const r = selectTail(msgs, { budget: 2_000 });
    expect(ids(r.tail)).toEqual(['a5', 'a6']);
    expect(r.tailStartId).toBe('a5');
    expect(ids(r.head)).toEqual(['u1', 'a2', 'u3', 'a4']);
  });

  it('keeps nothing when the newest message alone is over budget, or with tailTurns 0', () => {
    const msgs = [msg('u', 100), msg('a', 5_000)];
    expect(selectTail(msgs, { budget: 2_000 })).toEqual({ head: msgs, tail: [] });
    expect(selectTail([msg('u', 1), msg('a', 1)], { budget: 2_000, tailTurns: 0 }).tail).toEqual([]);
  });

  it('keeps nothing when the tail would leave nothing new to summarise', () => {
    const msgs = filterCompacted([
      msg('u', 10),
      compaction({}, { id: 'c1' }),
      summary('S', 'c1'),
      msg('u', 10),
      msg('a', 10),
    ]);
    expect(selectTail(msgs, { budget: 2_000 }).tail).toEqual([]);
  });

  it('never puts the previous boundary in the tail', () => {
    const msgs = filterCompacted([
      compaction({}, { id: 'c1' }),
      summary('S', 'c1', { id: 's1' }),
      msg('a', 10, 'a3'),
      msg('u', 10, 'u4'),
      msg('a', 10, 'a5'),
    ]);
    const r = selectTail(msgs, { budget: 2_000, tailTurns: 5 });
    expect(ids(r.tail)).toEqual(['u4', 'a5']);
    expect(ids(r.head)).toEqual(['c1', 's1', 'a3']);
  });
});
