import { describe, expect, it } from 'vitest';
import { workerConfigFromEnv } from '../src/config.ts';
import { reconcileJobId, reconcileOptions, sessionOfJobId } from '../src/reconcile.ts';

// The reconciler's pure parts: its configuration, its job ids, and which session a job id is for.

describe('reconcileOptions', () => {
  it('defaults to a 30 s period and 2 lock TTLs', () => {
    const env = workerConfigFromEnv({});
    expect(
      reconcileOptions(env.LOOPLINE_RECONCILE_INTERVAL_MS, env.LOOPLINE_RECONCILE_AFTER_MS, 15_000),
    ).toEqual({
      intervalMs: 30_000,
      afterMs: 30_000,
    });
  });

  it('reads LOOPLINE_RECONCILE_INTERVAL_MS (0: off) and LOOPLINE_RECONCILE_AFTER_MS; junk stops the worker', () => {
    const env = workerConfigFromEnv({
      LOOPLINE_RECONCILE_INTERVAL_MS: '0',
      LOOPLINE_RECONCILE_AFTER_MS: '5s',
    });
    expect(
      reconcileOptions(env.LOOPLINE_RECONCILE_INTERVAL_MS, env.LOOPLINE_RECONCILE_AFTER_MS, 2000),
    ).toEqual({
      intervalMs: 0,
      afterMs: 5000,
    });
    expect(() => workerConfigFromEnv({ LOOPLINE_RECONCILE_INTERVAL_MS: 'x' })).toThrow(
      /LOOPLINE_RECONCILE_INTERVAL_MS/,
    );
    expect(() => workerConfigFromEnv({ LOOPLINE_RECONCILE_AFTER_MS: '-1' })).toThrow(
      /LOOPLINE_RECONCILE_AFTER_MS/,
    );
  });
});

describe('job ids', () => {
  it('one reconciler job per session and fence, without ":"', () => {
    expect(reconcileJobId('ses_abc123', 7)).toBe('reconcile-ses_abc123-f7');
    expect(reconcileJobId('ses_abc123', 7)).not.toContain(':');
  });

  it('finds the session a loop job is for: the first session id in its id', () => {
    expect(sessionOfJobId('step-ses_0mwsd72i7000seazzduyh9-12')).toBe('ses_0mwsd72i7000seazzduyh9');
    expect(sessionOfJobId('wake-ses_a1-msg_b2-r3')).toBe('ses_a1');
    expect(sessionOfJobId('child-ses_parent1-ses_child2-4')).toBe('ses_parent1');
    expect(sessionOfJobId(reconcileJobId('ses_x9', 2))).toBe('ses_x9');
    expect(sessionOfJobId('repeat:reconcile:1700000000000')).toBeUndefined();
  });
});
