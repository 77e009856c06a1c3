import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { WithParts } from '../src/schema/message.ts';
import type { Part } from '../src/schema/part.ts';
import { compactionPartOf, filterCompacted } from '../src/session/history.ts';
import {
  anchorFactsOf,
  estimateView,
  extendAnchorFacts,
  hasPrunedOutput,
} from '../src/session/view-estimate.ts';
import { assistant, p, reset, usage, user } from './build.ts';
import { build, opArb } from './random-log.ts';

beforeEach(reset);

// The worker's session cache keeps a view's anchor facts and extends them as messages are appended;
// the estimate it makes from them must be the estimate over the whole view.

/**
 * Some replies given a usage report, and some completed outputs cleared (beside the ones the log's
 * own prunes cleared) at times before and after those reports.
 */
function decorate(log: WithParts[], seed: number): WithParts[] {
  let n = seed;
  const next = () => {
    n = (n * 1103515245 + 12345) % 2 ** 31;
    return n;
  };
  const last = log.length * 1000 + 1000;
  return log.map((m) => {
    const parts = m.parts.map((part): Part => {
      if (part.type !== 'tool' || part.state.status !== 'completed') return part;
      if (part.state.time.compacted === undefined && next() % 3 !== 0) return part;
      return {
        ...part,
        state: { ...part.state, time: { ...part.state.time, compacted: next() % last } },
      } as Part;
    });
    if (m.info.role === 'assistant' && !m.info.summary && next() % 3 !== 0) {
      const report = usage(1_000 + (next() % 5_000), 10 + (next() % 200), next() % 500);
      return { info: { ...m.info, usage: report }, parts };
    }
    return { info: m.info, parts };
  });
}

function isBoundaryMarker(m: WithParts): boolean {
  return (m.info.role === 'assistant' && m.info.summary === true) || compactionPartOf(m) !== undefined;
}

const ids = (ms: readonly WithParts[]) => ms.map((m) => m.info.id);

describe('estimateView', () => {
  const base = { ratio: 1.3, margin: 0.1, model: 'openai/gpt-5', overhead: 120 };

  it('with the view’s facts equals the estimate over the whole view', () => {
    let anchored = 0;
    let prunedOlder = 0;
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.nat(1000), fc.boolean(), (ops, seed, rr) => {
        reset();
        const view = filterCompacted(decorate(build(ops), seed));
        const facts = anchorFactsOf(view);
        const walked = estimateView({ ...base, view, resendsReasoning: rr });
        expect(estimateView({ ...base, view, facts, resendsReasoning: rr })).toEqual(walked);
        if (walked.anchored) anchored++;
        if (facts.anchor && facts.pruned.some((m) => m.info.seq < facts.anchor!.messageSeq)) prunedOlder++;
      }),
      { numRuns: 300 },
    );
    // The property is worth something only if it met anchors and pruned outputs behind them.
    expect(anchored).toBeGreaterThan(30);
    expect(prunedOlder).toBeGreaterThan(5);
  });

  it('reads a prune after the report from the facts, not from a walk', () => {
    const cleared = p.tool('bash', 'x'.repeat(4_000), { tokens: 40, outputTokens: 1_000, compacted: 9_000 });
    const view = [
      user('a'),
      assistant([p.stepStart(), cleared]),
      user('b'),
      assistant('c', { usage: usage(5_000, 50) }),
      user('d'),
    ];
    const facts = anchorFactsOf(view);
    expect(ids(facts.pruned)).toEqual([view[1]!.info.id]);
    const input = { ...base, view, resendsReasoning: false };
    const withFacts = estimateView({ ...input, facts });
    expect(withFacts).toEqual(estimateView(input));
    // Cleared after the report: the estimate is below the report plus what came after it.
    expect(withFacts.tokens).toBeLessThan(5_000 + 50);
    // Without the pruned message in the facts, the saving would be missed.
    expect(estimateView({ ...input, facts: { ...facts, pruned: [] } }).tokens).toBeGreaterThan(
      withFacts.tokens,
    );
  });
});

describe('extendAnchorFacts', () => {
  it('extended by appended messages equal the facts of the grown view', () => {
    let extended = 0;
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.nat(1000), (ops, seed) => {
        reset();
        // Reverted rows never enter the cache's log (a revert of held ones makes it reload).
        const log = decorate(build(ops), seed).filter((m) => !m.info.reverted);
        for (let k = 0; k <= log.length; k++) {
          const appended = log.slice(k);
          // The session cache extends only when no boundary marker is appended.
          if (appended.some(isBoundaryMarker)) continue;
          const before = filterCompacted(log.slice(0, k));
          const view = filterCompacted(log);
          // What the cache relies on: the view then just grows by the appended messages.
          expect(ids(view)).toEqual([...ids(before), ...ids(appended)]);
          const facts = extendAnchorFacts(anchorFactsOf(before), appended);
          const fresh = anchorFactsOf(view);
          expect(facts.anchor).toEqual(fresh.anchor);
          expect(ids(facts.pruned)).toEqual(ids(fresh.pruned));
          extended++;
        }
      }),
      { numRuns: 200 },
    );
    expect(extended).toBeGreaterThan(200);
  });

  it('keeps the facts when nothing is appended, and the older anchor when no new report came', () => {
    const view = [user('a'), assistant('b', { usage: usage(100, 10) })];
    const facts = anchorFactsOf(view);
    expect(extendAnchorFacts(facts, [])).toBe(facts);
    const grown = extendAnchorFacts(facts, [user('c'), assistant('d')]);
    expect(grown.anchor).toBe(facts.anchor);
    expect(grown.pruned).toEqual([]);
  });

  it('finds pruned outputs only in completed tool parts that prune cleared', () => {
    const done = p.tool('bash', 'out', { tokens: 3 });
    const cleared = p.tool('bash', 'out', { tokens: 3, compacted: 5 });
    expect(hasPrunedOutput(assistant([done]))).toBe(false);
    expect(hasPrunedOutput(assistant([cleared]))).toBe(true);
    expect(hasPrunedOutput(user('x'))).toBe(false);
  });
});
