// Failed API-key authentication costs the attacker, not PostgreSQL (per gateway process):
//
// - an unknown key's hash is remembered for `negativeCacheMs`: the same bad key again is answered
//   401 from memory (a new key is a new hash, so it still works at once);
// - after `failuresPerMinute` failures from one client address (an IPv6 address by its /64:
//   throttleKey) within a minute, that address
//   gets 429 without a lookup until the minute is over, except for keys this process already
//   knows to be valid (the positive cache), which keep working.
//
// So a burst of bad keys from one address costs at most `failuresPerMinute` queries a minute.
// Both maps are bounded (oldest entries go first).

export interface AuthGuardOptions {
  /** 0 = no throttle. */
  failuresPerMinute: number;
  /** 0 = no negative cache. */
  negativeCacheMs: number;
  /** Entries per map (default 10,000). */
  maxEntries?: number;
}

export interface AuthGuard {
  /** Seconds until the address may try unknown keys again, or undefined when it may now. */
  throttled(address: string, now?: number): number | undefined;
  /** The key hash failed recently (answer 401 without asking PostgreSQL). */
  knownBad(keyHash: string, now?: number): boolean;
  /** A failed authentication from `address` (with the key's hash when one was looked up). */
  failed(address: string, keyHash: string | undefined, now?: number): void;
}

const WINDOW_MS = 60_000;

/**
 * The client address as the throttle counts it: an IPv4 address (IPv4-mapped IPv6 included) as
 * itself, an IPv6 address by its /64, the block one host or one customer is usually given: an
 * attacker rotating through the addresses of its /64 is one client, not 2^64.
 */
export function throttleKey(ip: string): string {
  const address = ip.replace(/%.*$/, '');
  if (!address.includes(':')) return address;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  const [head = '', tail] = address.split('::');
  const groupsOf = (part: string) =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const front = groupsOf(head);
  const back = tail === undefined ? [] : groupsOf(tail);
  const groups =
    tail === undefined
      ? front
      : [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  const prefix = groups.slice(0, 4).map((g) => (Number.parseInt(g, 16) || 0).toString(16));
  while (prefix.length < 4) prefix.push('0');
  return `${prefix.join(':')}::/64`;
}

function setBounded<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** Creates the per-process guard against repeated bad API keys (see the file header). */
export function authGuard(opts: AuthGuardOptions): AuthGuard {
  const max = opts.maxEntries ?? 10_000;
  const failures = new Map<string, { count: number; windowEnd: number }>();
  const bad = new Map<string, number>();
  return {
    throttled(address, now = Date.now()) {
      if (opts.failuresPerMinute <= 0) return undefined;
      const entry = failures.get(throttleKey(address));
      if (!entry || entry.windowEnd <= now || entry.count < opts.failuresPerMinute) return undefined;
      return Math.max(1, Math.ceil((entry.windowEnd - now) / 1000));
    },
    knownBad(keyHash, now = Date.now()) {
      const until = bad.get(keyHash);
      if (until === undefined) return false;
      if (until > now) return true;
      bad.delete(keyHash);
      return false;
    },
    failed(address, keyHash, now = Date.now()) {
      if (keyHash && opts.negativeCacheMs > 0) setBounded(bad, keyHash, now + opts.negativeCacheMs, max);
      if (opts.failuresPerMinute <= 0) return;
      const key = throttleKey(address);
      const entry = failures.get(key);
      if (!entry || entry.windowEnd <= now)
        setBounded(failures, key, { count: 1, windowEnd: now + WINDOW_MS }, max);
      else entry.count += 1;
    },
  };
}
