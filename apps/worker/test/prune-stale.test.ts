import { describe, expect, it } from 'vitest';
import { isStaleIdlePass } from '../src/processors/prune.ts';

const idle = { tenantId: 't', sessionId: 's', purpose: 'idle' as const, overflow: false, rejected: false };

describe('isStaleIdlePass', () => {
  it('skips an idle pass scheduled before the newest turn', () => {
    expect(isStaleIdlePass({ ...idle, stepCount: 2 }, 4)).toBe(true);
  });
  it('runs an idle pass of the current turn, and one from before the field existed', () => {
    expect(isStaleIdlePass({ ...idle, stepCount: 4 }, 4)).toBe(false);
    expect(isStaleIdlePass(idle, 4)).toBe(false);
  });
  it('never skips the prune that precedes a compaction', () => {
    expect(isStaleIdlePass({ ...idle, purpose: 'compact', stepCount: 2 }, 4)).toBe(false);
  });
});
