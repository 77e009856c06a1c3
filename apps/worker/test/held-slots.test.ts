import { describe, expect, it } from 'vitest';
import { HeldSlots } from '../src/fairness/held-slots.ts';

// The memo that lets the next step of a runner chain run on the tenant slot its previous step took
// (fairness/held-slots.ts): only for the same tenant, the very next fence, within half the TTL,
// and never after a release. The cap itself is checked end to end in test/e2e/fairness-*.test.ts.

const TTL = 30_000;

describe('HeldSlots', () => {
  it('lets the next fence of the chain run on the slot within half the TTL', () => {
    const held = new HeldSlots();
    held.took('t1', 's1', 7, 1_000);
    expect(held.holds('t1', 's1', 8, 1_000 + TTL / 2 - 1, TTL)).toBe(true);
    held.carried('s1', 8);
    // The chain goes on: fence 9 after 8, still timed from when the slot was taken.
    expect(held.holds('t1', 's1', 9, 1_000 + TTL / 2 - 1, TTL)).toBe(true);
    expect(held.holds('t1', 's1', 9, 1_000 + TTL / 2, TTL)).toBe(false);
  });

  it('asks Redis again after another runner, for another tenant, or after a release', () => {
    const held = new HeldSlots();
    held.took('t1', 's1', 7, 0);
    // Fence 9: a runner (another worker, a compaction) ran at 8 and may have released the slot.
    expect(held.holds('t1', 's1', 9, 10, TTL)).toBe(false);
    // The same fence again (a retried job) or an older one.
    expect(held.holds('t1', 's1', 7, 10, TTL)).toBe(false);
    expect(held.holds('t2', 's1', 8, 10, TTL)).toBe(false);
    expect(held.holds('t1', 's2', 8, 10, TTL)).toBe(false);
    held.forget('s1');
    expect(held.holds('t1', 's1', 8, 10, TTL)).toBe(false);
    // carried() after a forget does not bring it back.
    held.carried('s1', 8);
    expect(held.holds('t1', 's1', 9, 10, TTL)).toBe(false);
  });

  it('remembers a bounded number of sessions, forgetting the least recently used', () => {
    const held = new HeldSlots(2);
    held.took('t', 'a', 1, 0);
    held.took('t', 'b', 1, 0);
    held.carried('a', 2); // a is now the most recent
    held.took('t', 'c', 1, 0);
    expect(held.size).toBe(2);
    expect(held.holds('t', 'a', 3, 1, TTL)).toBe(true);
    expect(held.holds('t', 'b', 2, 1, TTL)).toBe(false);
    expect(held.holds('t', 'c', 2, 1, TTL)).toBe(true);
  });
});
