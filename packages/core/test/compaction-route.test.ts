import { beforeEach, describe, expect, it } from 'vitest';
import type { RuntimeFlags } from '../src/config.ts';
import {
  type AfterPruneInput,
  afterPrune,
  type BackgroundInput,
  backgroundSkipReason,
  idlePruneObsolete,
  resumableBackground,
} from '../src/session/compaction-route.ts';
import { assistant, compaction, reset, summary, user } from './build.ts';

// The compaction decisions of the prune job (after the pass the loop asked for) and of the idle
// background check.

beforeEach(reset);

const flags: RuntimeFlags = { disableAutocompact: false, disablePrune: false };

describe('afterPrune', () => {
  const base = (extra: Partial<AfterPruneInput> = {}): AfterPruneInput => ({
    messages: [user('hi'), assistant('x', { finish: 'tool-calls' })],
    compaction: { auto: true },
    flags,
    rejected: false,
    estimate: 70_000,
    trigger: 68_000,
    ...extra,
  });

  it('creates the compaction when pruning did not bring the estimate under the trigger', () => {
    expect(afterPrune(base())).toEqual({ type: 'create-compaction' });
    expect(afterPrune(base({ estimate: 68_000 }))).toEqual({ type: 'create-compaction' });
  });

  it('continues the loop when pruning made enough room', () => {
    expect(afterPrune(base({ estimate: 67_999 }))).toEqual({ type: 'continue', why: 'enough-room' });
  });

  it('compacts after a provider rejection even when the estimate fits', () => {
    expect(afterPrune(base({ estimate: 1_000, rejected: true }))).toEqual({ type: 'create-compaction' });
  });

  it('hands back to the step when automatic compaction was switched off meanwhile', () => {
    expect(afterPrune(base({ compaction: { auto: false } }))).toEqual({ type: 'continue', why: 'auto-off' });
    expect(afterPrune(base({ flags: { ...flags, disableAutocompact: true } }))).toEqual({
      type: 'continue',
      why: 'auto-off',
    });
  });

  it('runs a marker an earlier run already wrote, before anything else', () => {
    const messages = [user('hi'), compaction({}, { id: 'c5' })];
    expect(afterPrune(base({ messages, compaction: { auto: false } }))).toEqual({
      type: 'run-compaction',
      messageId: 'c5',
    });
  });
});

describe('backgroundSkipReason', () => {
  const base = (extra: Partial<BackgroundInput> = {}): BackgroundInput => ({
    status: 'idle',
    messages: [user('hi'), assistant('done')],
    compaction: { auto: true, growthMargin: 0.1 },
    flags,
    estimate: 60_000,
    budget: { trigger: 68_000, background: 54_400 },
    lastCompactionTokensAfter: undefined,
    ...extra,
  });

  it('schedules one for an idle session above the background threshold', () => {
    expect(backgroundSkipReason(base())).toBeUndefined();
    expect(backgroundSkipReason(base({ lastCompactionTokensAfter: 50_000 }))).toBeUndefined();
  });

  it('says why not', () => {
    expect(backgroundSkipReason(base({ status: 'running' }))).toBe('session is running');
    expect(backgroundSkipReason(base({ compaction: { auto: false, growthMargin: 0.1 } }))).toBe(
      'automatic compaction is off',
    );
    expect(backgroundSkipReason(base({ estimate: 54_399 }))).toBe('below the background threshold');
    expect(backgroundSkipReason(base({ messages: [user('hi'), compaction({}, { id: 'c2' })] }))).toBe(
      'a compaction is already pending',
    );
    expect(backgroundSkipReason(base({ lastCompactionTokensAfter: 54_000 }))).toBe(
      'no growth since the last compaction',
    );
  });

  it('does not count an answered compaction as pending', () => {
    const messages = [
      user('hi'),
      compaction({}, { id: 'c2' }),
      summary('s', 'c2'),
      user('more'),
      assistant('ok'),
    ];
    expect(backgroundSkipReason(base({ messages }))).toBeUndefined();
  });
});

describe('idlePruneObsolete', () => {
  it('keeps the pass while the session is still idle at the step count it was scheduled at', () => {
    expect(idlePruneObsolete({ stepCount: 4, status: 'idle' }, 4)).toBe(false);
  });

  it('drops it once a newer turn ran a step or is under way', () => {
    expect(idlePruneObsolete({ stepCount: 5, status: 'idle' }, 4)).toBe(true);
    expect(idlePruneObsolete({ stepCount: 4, status: 'queued' }, 4)).toBe(true);
  });

  it('runs a pass from an older worker, which carried no step count', () => {
    expect(idlePruneObsolete({ stepCount: 9, status: 'running' }, undefined)).toBe(false);
  });
});

describe('resumableBackground', () => {
  it('finds a background marker left without a summary, and nothing else', () => {
    const bg = user([{ type: 'compaction', auto: true, overflow: false, background: true, tokens: 0 }], {
      id: 'c7',
      synthetic: true,
    });
    expect(resumableBackground([user('hi'), assistant('ok'), bg])).toBe('c7');
    expect(resumableBackground([user('hi'), assistant('ok'), bg, summary('s', 'c7')])).toBeUndefined();
    expect(resumableBackground([user('hi'), compaction({}, { id: 'c8' })])).toBeUndefined();
    expect(resumableBackground([user('hi')])).toBeUndefined();
  });
});
