// One timer for many leases: the session locks (lock.ts) and tenant slots (semaphore.ts) that a
// worker process holds through its steps are renewed by one periodic tick per Redis client and
// timing, which hands the whole set to one batched command, instead of one setInterval and one
// command per lease. A worker that holds 1,000 sessions through their model calls thus costs a
// few commands per period, whatever the number.

export class RenewalTicker<T> {
  private readonly held = new Set<T>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private readonly everyMs: number;
  private readonly renew: (batch: T[]) => Promise<void>;

  /** `renew` gets every lease held at the tick; its errors are swallowed (the next tick retries). */
  constructor(everyMs: number, renew: (batch: T[]) => Promise<void>) {
    this.everyMs = everyMs;
    this.renew = renew;
  }

  get size(): number {
    return this.held.size;
  }

  has(item: T): boolean {
    return this.held.has(item);
  }

  add(item: T): void {
    this.held.add(item);
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.everyMs);
      this.timer.unref();
    }
  }

  /** Stops renewing it; the timer stops with the last lease. */
  delete(item: T): void {
    this.held.delete(item);
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async tick(): Promise<void> {
    // A tick still waiting on Redis (a hiccup): another would only queue behind it.
    if (this.ticking || this.held.size === 0) return;
    this.ticking = true;
    try {
      await this.renew([...this.held]);
    } catch {
      // A Redis hiccup: keep trying until the TTL would have run out.
    } finally {
      this.ticking = false;
    }
  }
}

/** The ticker of one Redis client and timing, made on first use. */
export function tickerFor<C extends object, T>(
  registry: WeakMap<C, Map<string, RenewalTicker<T>>>,
  client: C,
  ttlMs: number,
  everyMs: number,
  make: () => RenewalTicker<T>,
): RenewalTicker<T> {
  let byTiming = registry.get(client);
  if (!byTiming) {
    byTiming = new Map();
    registry.set(client, byTiming);
  }
  const id = `${ttlMs}:${everyMs}`;
  let ticker = byTiming.get(id);
  if (!ticker) {
    ticker = make();
    byTiming.set(id, ticker);
  }
  return ticker;
}

/** Splits `items` into runs of at most `size` (keys per batched script call). */
export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
