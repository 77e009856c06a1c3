import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';

// The start gate of step jobs: how many steps of this process may be *preparing* at once —
// taking the lease and the fence, loading the session, deciding, writing the step's start —
// as opposed to waiting on the model. A step lets go of its permit when its first outbound HTTP
// request leaves (the model call; a tool or an attachment download if one comes first), or when
// it ends without one.
//
// Why: with 1,000 step jobs active (WORKER_STEP_CONCURRENCY), an ungated burst starts all of them
// at once; they interleave on one event loop and queue FIFO for the 20 PostgreSQL connections, so
// none reaches its model call until nearly all have loaded their session (every session's history
// in memory at once), and then they all return together: waves of work and idleness. Gated, steps
// start in arrival order a few at a time, each reaches its model call in a few milliseconds, and
// the model calls themselves stay unlimited.
//
// "The first outbound request" is seen through undici's diagnostics channel, which Node's fetch
// (the AI SDK's transport) and the undici package (the egress gates) both publish to, synchronously
// in the caller's async context: the AsyncLocalStorage store there is the step's own permit.

interface Permit {
  held: boolean;
  release(): void;
}

const current = new AsyncLocalStorage<Permit>();
let subscribed = false;

function onRequest(): void {
  current.getStore()?.release();
}

export class StepGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
    if (!subscribed) {
      diagnostics.subscribe('undici:request:create', onRequest);
      subscribed = true;
    }
  }

  /** Steps preparing now, and steps waiting to start. */
  get load(): { preparing: number; waiting: number } {
    return { preparing: this.active, waiting: this.waiting.length };
  }

  /** Runs `work` once a permit is free; the permit goes back at its first HTTP request or its end. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    const permit: Permit = {
      held: true,
      release: () => {
        if (!permit.held) return;
        permit.held = false;
        this.next();
      },
    };
    try {
      return await current.run(permit, work);
    } finally {
      permit.release();
    }
  }

  /** A permit came back: hand it to the oldest waiter (it stays counted), or free it. */
  private next(): void {
    const wake = this.waiting.shift();
    if (wake) wake();
    else this.active--;
  }
}
