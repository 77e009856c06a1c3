import { setFlagsFromString } from 'node:v8';

// V8 lets the old generation grow to up to 4× what survived the last full GC before it collects
// again. A worker with hundreds of steps in flight promotes each step's objects (they outlive a
// model call) and drops them all when the calls return, so RSS peaked at about twice the live
// heap. A fixed, smaller factor collects that garbage sooner: a 30–40 % lower peak for more full
// GCs (bench/profile-findings.md, round 4: up to ~18 % more CPU while 1,000 calls return).

const FLAG = '--heap-growing-percent';

/** WORKER_HEAP_GROWTH_PERCENT's default. */
export const DEFAULT_HEAP_GROWTH_PERCENT = 50;

/**
 * Sets V8's old-generation growing factor to 1 + percent/100 for this process; 0, or the flag
 * among the node options `given` (command line and NODE_OPTIONS), leaves it as it is.
 */
export function limitHeapGrowth(percent: number, given: readonly string[]): boolean {
  if (percent <= 0 || given.some((a) => a.startsWith(FLAG) || a.startsWith('--heap_growing_percent')))
    return false;
  setFlagsFromString(`${FLAG}=${percent}`);
  return true;
}
