// Identifiers: prefixed, sortable by creation time within one process, opaque elsewhere.
// Ordering of history never relies on ids (PostgreSQL assigns `seq`); ids only need to be unique.

export type IdPrefix = 'ten' | 'key' | 'ses' | 'msg' | 'prt' | 'stp' | 'cmp' | 'out' | 'bat';

let lastTime = 0;
let counter = 0;

// Random bytes drawn from a pool refilled 4 KiB at a time: one getRandomValues call per ~400 ids
// instead of one per id (the per-call cost showed in the worker's profile).
const POOL_SIZE = 4096;
const pool = new Uint8Array(POOL_SIZE);
let poolAt = POOL_SIZE;
const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';

function randomBase36(length: number): string {
  if (poolAt + length > POOL_SIZE) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  let out = '';
  for (let i = 0; i < length; i++) out += DIGITS[pool[poolAt++]! % 36];
  return out;
}

/** A new id such as `ses_0lq7w2k3a9x1f3bq8vwz2c`. */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now === lastTime) counter++;
  else {
    lastTime = now;
    counter = 0;
  }
  const time = now.toString(36).padStart(9, '0');
  const seq = counter.toString(36).padStart(3, '0');
  return `${prefix}_${time}${seq}${randomBase36(10)}`;
}

/**
 * An id derived from another one, so a retried job finds the row an earlier
 * attempt wrote instead of adding a second (e.g. the summary message of a compaction part).
 */
export function derivedId(prefix: IdPrefix, from: string, role: string): string {
  const tail = from.slice(from.indexOf('_') + 1);
  return `${prefix}_${tail}_${role}`;
}

/** Whether an id carries the given type prefix. */
export function hasPrefix(id: string, prefix: IdPrefix): boolean {
  return id.startsWith(`${prefix}_`);
}
