import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';

// The start gate of step jobs: how many steps of this process may be *preparing* at once (lease,
// fence, load, decide, write the start). A permit goes back at the step's first outbound HTTP
// request or its end, so model calls are never capped; the gate keeps a burst of 1,000 steps from
// loading every session at once and reaching the model in waves (docs/decisions.md D31). Requests
// are seen on undici's diagnostics channel (Node's fetch and the undici package both publish there)
// and on node:http's (the model HTTP client of packages/llm), both synchronously in the caller's
// async context, so the AsyncLocalStorage store is the step's permit.

interface Permit {
  held: boolean;
  release(): void;
}

const current = new AsyncLocalStorage<Permit>();
let subscribed = false;

function onRequest(): void {
  current.getStore()?.release();
}

/** Limits the steps preparing at once; each gives its permit back at its first HTTP request. */
export class StepGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
    if (!subscribed) {
      diagnostics.subscribe('undici:request:create', onRequest);
      diagnostics.subscribe('http.client.request.created', onRequest);
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
