import { setFlagsFromString } from 'node:v8';

// V8 lets the old generation grow up to 4× what survived the last full GC; a worker's in-flight
// steps die together when their calls return, so RSS peaked near twice the live heap. A smaller
// factor trades some CPU for the peak (docs/DEPLOYMENT.md, "Worker memory with many steps in flight").

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
